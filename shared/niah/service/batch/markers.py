"""Markers: which bytes of which output files a batch job's pieces have read.

Each piece writes one object under the job's ingest folder when it is done, named by its
file and byte range and holding what it saw; the job is settled once the markers cover
every byte. Written in the bucket, not the run document, so thousands of pieces never
contend on one document.
"""

from __future__ import annotations

import json
from typing import Any

from niah.core.interfaces import BlobInfo, BlobStore
from niah.service.batch.manifest import MANIFEST_TYPE
from niah.service.batch.pieces import file_key, job_key
from niah.settings import BATCHES_PREFIX


def _ingest_prefix(run_id: str, job: dict[str, Any]) -> str:
    """The job's ingest folder in the bucket (its markers, its line claims)."""
    return f"{BATCHES_PREFIX}{run_id}/ingest/{job_key(str(job['name']))}/"


def write_marker(
    run_id: str, job: dict[str, Any], name: str, start: int, end: int, seen: dict[str, Any],
    blobs: BlobStore,
) -> None:  # fmt: skip
    """Record that a piece read ``[start, end)`` of ``name`` and what it ``seen`` there."""
    marker = f"{_ingest_prefix(run_id, job)}pieces/{file_key(name)}-{start:013d}-{end:013d}.json"
    body = {"file": name, "start": start, "end": end} | seen
    blobs.write(marker, json.dumps(body).encode(), content_type=MANIFEST_TYPE)


def _marker_infos(run_id: str, job: dict[str, Any], blobs: BlobStore) -> list[BlobInfo]:
    """The job's markers as listed (their names hold the ranges)."""
    return blobs.list(f"{_ingest_prefix(run_id, job)}pieces/")


def marker_ranges(
    run_id: str, job: dict[str, Any], blobs: BlobStore
) -> dict[str, list[tuple[int, int]]]:
    """Each output file's ranges read, by file name (from the markers' names)."""
    keys = {file_key(file["name"]): file["name"] for file in job["ingest"]["files"]}
    ranges: dict[str, list[tuple[int, int]]] = {}
    for info in _marker_infos(run_id, job, blobs):
        key, start, end = info.name.rsplit("/", 1)[1].removesuffix(".json").split("-")
        if key in keys:
            ranges.setdefault(keys[key], []).append((int(start), int(end)))
    return ranges


def uncovered(ranges: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The parts of ``[0, size)`` no range covers."""
    gaps, at = [], 0
    for start, end in sorted(ranges):
        if start > at:
            gaps.append((at, start))
        at = max(at, end)
    if at < size:
        gaps.append((at, size))
    return gaps


def covered(run_id: str, job: dict[str, Any], blobs: BlobStore) -> bool:
    """Whether the markers cover every byte of every output file of the job."""
    seen = marker_ranges(run_id, job, blobs)
    return not any(
        uncovered(seen.get(file["name"], []), int(file["size"])) for file in job["ingest"]["files"]
    )


def tally_markers(run_id: str, job: dict[str, Any], blobs: BlobStore) -> dict[str, Any]:
    """The markers' counts summed, and their lines of note, each once.

    Two markers overlap only where a redelivered piece stopped elsewhere than the first
    delivery: its counts are then counted twice, its lines of note (keyed by line) not.
    """
    total: dict[str, Any] = {
        "lines": 0, "duplicate": 0, "unmatched": 0, "unmatched_answered": 0,
        "unmatched_usd": 0.0,
    }  # fmt: skip
    noted: dict[str, dict[str, str]] = {
        "failed": {}, "unreadable": {}, "shared": {}, "failed_prompts": {},
    }  # fmt: skip
    for info in _marker_infos(run_id, job, blobs):
        marker = json.loads(blobs.read(info.name))
        for key in total:
            total[key] += marker.get(key, 0)
        for key, lines in noted.items():
            lines.update((line, value) for line, value in marker.get(key) or [])
    return total | {key: [list(item) for item in lines.items()] for key, lines in noted.items()}
