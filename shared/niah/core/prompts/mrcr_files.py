"""Google's published MRCR v2 samples: CSV files read as streams, one row at a time.

The layout followed is google-deepmind/eval_hub ``mrcr_v2`` at commit 67b7fd2
(2026-02-18): ``mrcr_utils.py`` writes, and ``run_evaluation.py`` reads, one row per
sample with the whole prompt in ``queries`` (a written-out conversation behind a few-shot
block), the expected answer in ``answer`` (a 12-character prefix, then the reply), the
prompt's token count on Gemini's tokenizer in ``context_len`` and the needle count in
``num_relevant``. Files are named ``mrcr_v2p1_{n}needle_{range}_dynamic_fewshot_text_
style_fast.csv`` and hosted by Google; copy the ones to run into the service's bucket.

A row holds a whole transcript (megabytes at 1M tokens), so files are never loaded whole:
they are streamed, and only one row is held at a time. The dispatcher's one pass records
each row's byte span, so a worker reads its row (and the header) by offset, not every
row before it: reading a run's rows costs the rows, not rows squared.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from niah.core.interfaces import BlobInfo, BlobStore
from niah.errors import HaystackError

REQUIRED_COLUMNS = ("queries", "answer", "context_len")
# A row is one transcript: far above the csv module's 128 KiB default field limit.
FIELD_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class RunSource:
    """Published samples a run reads instead of a grid: the files and the rows kept.

    Resolved at admission (the task's ``published_rows``), recorded on the run, one cell
    a row.
    """

    files: list[str]
    rows: list[tuple[int, int, int, int, int]]  # (file index, row, context_len, offset, length)
    fingerprint: str
    reply_tokens: int = 0  # the room of the longest expected reply


@dataclass(frozen=True)
class RowRef:
    """Where one sample is: its file, its row, its size, needle count and reply's size."""

    file: str
    row: int
    context_len: int
    needles: int | None
    answer_bytes: int = 0
    offset: int = 0  # where the row's bytes start in its file
    length: int = 0  # how many bytes it takes, its line end included


def csv_files(blobs: BlobStore, prefix: str) -> list[BlobInfo]:
    """The ``.csv`` files under ``prefix`` (or the one file it names), in sorted order."""
    files = [info for info in blobs.list(prefix) if info.name.endswith(".csv")]
    if not files:
        raise HaystackError(
            f"gs://{blobs.bucket}/{prefix} holds no .csv files; copy MRCR v2's CSV files "
            "(google-deepmind/eval_hub mrcr_v2/download.sh lists them) there"
        )
    return files


# A record ends at a newline outside quotes ("" inside a quoted field toggles twice).
_QUOTE_OR_NEWLINE = re.compile(rb'["\n]')
CHUNK_BYTES = 4 * 1024 * 1024
HEADER_CHUNK_BYTES = 4 * 1024


def records(stream: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[int, bytes]]:
    """Each CSV record of a byte stream (the header first) with its byte offset."""
    in_quotes, start, position = False, 0, 0
    pending = bytearray()
    while chunk := stream.read(chunk_bytes):
        cut = 0
        for match in _QUOTE_OR_NEWLINE.finditer(chunk):
            if match.group() == b'"':
                in_quotes = not in_quotes
            elif not in_quotes:
                pending += chunk[cut : match.end()]
                yield start, bytes(pending)
                start, cut = position + match.end(), match.end()
                pending.clear()
        pending += chunk[cut:]
        position += len(chunk)
    if pending.strip():
        yield start, bytes(pending)


def _fields(record: bytes) -> list[str]:
    return next(csv.reader(io.StringIO(record.decode("utf-8"), newline="")), [])


def _header(record: bytes, name: str) -> list[str]:
    columns = _fields(record)
    missing = [column for column in REQUIRED_COLUMNS if column not in columns]
    if missing:
        raise HaystackError(
            f"{name} is not an MRCR v2 CSV: no column {', '.join(missing)} (it needs "
            f"{', '.join(REQUIRED_COLUMNS)})"
        )
    return columns


def rows(stream: BinaryIO, name: str = "the file") -> Iterator[dict[str, str]]:
    """The rows of an MRCR v2 CSV stream, one at a time; its columns are checked first."""
    csv.field_size_limit(FIELD_LIMIT)
    reader = csv.DictReader(io.TextIOWrapper(stream, encoding="utf-8", newline=""))
    missing = [column for column in REQUIRED_COLUMNS if column not in (reader.fieldnames or [])]
    if missing:
        raise HaystackError(
            f"{name} is not an MRCR v2 CSV: no column {', '.join(missing)} (it needs "
            f"{', '.join(REQUIRED_COLUMNS)})"
        )
    yield from reader


def index_rows(blobs: BlobStore, files: list[str]) -> list[RowRef]:
    """Every sample of the files: where it is (row and byte span), its size (one pass)."""
    csv.field_size_limit(FIELD_LIMIT)
    refs = []
    for name in files:
        with blobs.open(name) as stream:
            found = records(stream)
            header = next(((offset, record) for offset, record in found), None)
            if header is None:
                raise HaystackError(f"{name} is empty; it is not an MRCR v2 CSV")
            columns = _header(header[1], name)
            for number, (offset, record) in enumerate(found):
                row = dict(zip(columns, _fields(record), strict=False))
                needles = row.get("num_relevant")
                refs.append(
                    RowRef(
                        name,
                        number,
                        int(float(row["context_len"])),
                        int(float(needles)) if needles else None,
                        len(row["answer"].strip().encode()),
                        offset,
                        len(record),
                    )
                )
    return refs


def read_row(
    blobs: BlobStore, name: str, number: int, span: tuple[int, int] | None = None
) -> dict[str, str]:
    """Row ``number`` of a file: read at its byte ``span`` (offset, length) when known.

    Without a span (runs dispatched before spans were kept) the file is streamed past
    the rows before it.
    """
    csv.field_size_limit(FIELD_LIMIT)
    with blobs.open(name) as stream:
        if span is None:
            for index, row in enumerate(rows(stream, name)):
                if index == number:
                    return row
            raise HaystackError(f"{name} has no row {number}; was the file replaced?")
        header = next(records(stream, HEADER_CHUNK_BYTES), None)  # a short first line
        columns = _header(header[1] if header else b"", name)
        stream.seek(span[0])
        record = stream.read(span[1])
    row = dict(zip(columns, _fields(record), strict=False))
    if len(record) != span[1] or any(column not in row for column in REQUIRED_COLUMNS):
        raise HaystackError(f"{name} has no row {number} where it was; was the file replaced?")
    return row
