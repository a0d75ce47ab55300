"""Google's published MRCR v2 samples: CSV files read as streams, one row at a time.

The layout followed is google-deepmind/eval_hub ``mrcr_v2`` at commit 67b7fd2
(2026-02-18): ``mrcr_utils.py`` writes, and ``run_evaluation.py`` reads, one row per
sample with the whole prompt in ``queries`` (a written-out conversation behind a few-shot
block), the expected answer in ``answer`` (a 12-character prefix, then the reply), the
prompt's token count on Gemini's tokenizer in ``context_len`` and the needle count in
``num_relevant``. Files are named ``mrcr_v2p1_{n}needle_{range}_dynamic_fewshot_text_
style_fast.csv`` and hosted by Google; copy the ones to run into the service's bucket.

A row holds a whole transcript (megabytes at 1M tokens), so files are never loaded whole:
they are streamed, and only one row is held at a time.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from niah.core.interfaces import BlobInfo, BlobStore
from niah.errors import HaystackError

REQUIRED_COLUMNS = ("queries", "answer", "context_len")
# A row is one transcript: far above the csv module's 128 KiB default field limit.
FIELD_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class RowRef:
    """Where one sample is: its file, its row, its size, needle count and reply's size."""

    file: str
    row: int
    context_len: int
    needles: int | None
    answer_bytes: int = 0


def csv_files(blobs: BlobStore, prefix: str) -> list[BlobInfo]:
    """The ``.csv`` files under ``prefix`` (or the one file it names), in sorted order."""
    files = [info for info in blobs.list(prefix) if info.name.endswith(".csv")]
    if not files:
        raise HaystackError(
            f"gs://{blobs.bucket}/{prefix} holds no .csv files; copy MRCR v2's CSV files "
            "(google-deepmind/eval_hub mrcr_v2/download.sh lists them) there"
        )
    return files


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
    """Every sample of the files: where it is, its token count and needles (one pass)."""
    refs = []
    for name in files:
        with blobs.open(name) as stream:
            for number, row in enumerate(rows(stream, name)):
                needles = row.get("num_relevant")
                refs.append(
                    RowRef(
                        name,
                        number,
                        int(float(row["context_len"])),
                        int(float(needles)) if needles else None,
                        len(row["answer"].strip().encode()),
                    )
                )
    return refs


def read_row(blobs: BlobStore, name: str, number: int) -> dict[str, str]:
    """Row ``number`` of a file, streaming past the rows before it."""
    with blobs.open(name) as stream:
        for index, row in enumerate(rows(stream, name)):
            if index == number:
                return row
    raise HaystackError(f"{name} has no row {number}; was the file replaced?")
