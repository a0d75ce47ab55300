"""Where a run's text comes from: the haystack's files, or the published rows its task reads.

Resolved from the bucket before the run is recorded: their listing's fingerprint is part
of the run ID, and an unusable source is the request's error (400), not a worker's.
"""

from __future__ import annotations

from typing import Any

from niah.core.interfaces import BlobInfo, BlobStore
from niah.core.prompts.haystack_files import check_source_size, haystack_files, haystack_prefix
from niah.core.prompts.mrcr_files import RunSource
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import HaystackError, RequestError
from niah.tasks import get_task

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


def resolve_published_rows(spec: RunRequest, blobs: BlobStore) -> RunSource | None:
    """The published samples the run's task reads instead of a grid, or None (a grid)."""
    return get_task(spec.task).published_rows(spec, blobs)


def source_cells(source_rows: list[Any]) -> list[Cell]:
    """The cells of a run over published rows: one per row, its length Google's count."""
    return [Cell(int(row[2]), 0.0, number) for number, row in enumerate(source_rows)]
