"""Where a run's text comes from: the haystack's files and Google's MRCR v2 rows.

Resolved from the bucket before the run is recorded: their listing's fingerprint is part
of the run ID, and an unusable source is the request's error (400), not a worker's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from niah.core.interfaces import BlobInfo, BlobStore
from niah.core.prompts.answer_budget import reply_room
from niah.core.prompts.haystack_files import (
    check_source_size,
    content_fingerprint,
    haystack_files,
    haystack_prefix,
    mrcr_source_prefix,
)
from niah.core.prompts.mrcr_files import csv_files, index_rows
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import HaystackError, RequestError

# A haystack listing up to this many files rides on the run document, so workers need
# not list the bucket for every cell (larger ones are listed by each worker instead).
MAX_LISTED_FILES = 1000


def resolve_haystack(spec: RunRequest, blobs: BlobStore) -> tuple[str, list[BlobInfo]]:
    """The haystack's object prefix and files; a ``RequestError`` if unusable."""
    try:
        prefix = haystack_prefix(spec.haystack_dir, blobs.bucket)
        files = haystack_files(blobs, prefix)
        check_source_size(files, option="haystack_dir")
        return prefix, files
    except HaystackError as error:
        raise RequestError("haystack_dir", str(error)) from error


def listed_files(files: list[BlobInfo]) -> list[dict[str, Any]]:
    """A haystack listing as the run document keeps it (empty when too long to keep)."""
    if len(files) > MAX_LISTED_FILES:
        return []
    return [{"name": f.name, "size": f.size, "fingerprint": f.fingerprint} for f in files]


@dataclass(frozen=True)
class RunSource:
    """Google's MRCR v2 samples a run reads: the files and the rows kept."""

    files: list[str]
    rows: list[tuple[int, int, int, int, int]]  # (file index, row, context_len, offset, length)
    fingerprint: str
    reply_tokens: int = 0  # the room of the longest expected reply


def resolve_mrcr_source(spec: RunRequest, blobs: BlobStore) -> RunSource | None:
    """The published MRCR v2 rows a run reads (one streaming pass), or None.

    Rows of another needle count than ``num_needles`` (when given) are left out.
    """
    if spec.mrcr_source is None:
        return None
    try:
        prefix = mrcr_source_prefix(spec.mrcr_source, blobs.bucket).rstrip("/")
        listed = csv_files(blobs, prefix)
        check_source_size(listed, option="mrcr_source")
        files = [info.name for info in listed]
        refs = index_rows(blobs, files)
    except (HaystackError, KeyError, ValueError) as error:
        raise RequestError("mrcr_source", str(error)) from error
    wanted = spec.num_needles
    kept = [ref for ref in refs if wanted is None or ref.needles in (None, wanted)]
    if not kept:
        raise RequestError("mrcr_source", f"no row of {', '.join(files)} has {wanted} needles")
    fingerprint = content_fingerprint(listed, salt="mrcr_v2")
    return RunSource(
        files,
        [(files.index(r.file), r.row, r.context_len, r.offset, r.length) for r in kept],
        fingerprint,
        reply_room(max(r.answer_bytes for r in kept)),
    )


def source_cells(source_rows: list[Any]) -> list[Cell]:
    """The cells of a run over published rows: one per row, its length Google's count."""
    return [Cell(int(row[2]), 0.0, number) for number, row in enumerate(source_rows)]
