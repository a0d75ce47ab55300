"""Which cells a batch job asked, and which asked each of its prompts.

A batch output line carries no cell key, so at submit each job gets a *manifest* beside
its input file: each line's cell, the digest of its prompt (``request_digest``) and its
local prompt length. Ingest and settle read it back to match output lines to cells.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from niah.core.interfaces import BlobInfo, BlobStore
from niah.core.runs import RunRecord
from niah.service.messages import CellTask, cell_messages

MANIFEST_TYPE = "application/json"


def run_tasks(run: RunRecord, skip: set[str] | None = None) -> list[CellTask]:
    """The run's cells as tasks, those in ``skip`` left out."""
    skip = skip or set()
    return [
        CellTask.from_message(message)
        for message in cell_messages(run)
        if message["cell_id"] not in skip
    ]


def manifest_name(input_name: str) -> str:
    """The manifest's object beside the input file ``...-input-000.jsonl``."""
    return input_name.removesuffix(".jsonl").replace("-input-", "-cells-") + ".json"


class ManifestLine(NamedTuple):
    """An input line and what its manifest keeps of it."""

    cell_id: str
    digest: str  # request_digest of its request
    planned_prompt_tokens: int | None  # its prompt's exact local length, if built here
    json: bytes  # the line as written to the input file


def write_manifest(blobs: BlobStore, name: str, lines: list[ManifestLine]) -> None:
    """Store each line's cell, digest and local prompt length, in input order."""
    body = json.dumps(
        {"lines": [[line.cell_id, line.digest, line.planned_prompt_tokens] for line in lines]}
    )
    blobs.write(name, body.encode(), content_type=MANIFEST_TYPE)


def job_cells(job: dict[str, Any], blobs: BlobStore) -> list[str]:
    """The cells a job asked, in input order (its manifest, or an older job's list)."""
    if "manifest" not in job:
        return list(job.get("cell_ids") or [])
    return [str(line[0]) for line in _manifest_lines(job, blobs)]


def _manifest_lines(job: dict[str, Any], blobs: BlobStore) -> list[list[Any]]:
    """The manifest's rows: [cell, digest, planned prompt tokens], in input order."""
    lines: list[list[Any]] = json.loads(blobs.read(_object(job["manifest"], blobs)))["lines"]
    return lines


def prompt_groups(
    job: dict[str, Any], blobs: BlobStore
) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Digest -> the cells that asked that prompt (input order); each cell's local length."""
    groups: dict[str, list[str]] = {}
    planned: dict[str, int] = {}
    for cell, digest, *rest in _manifest_lines(job, blobs) if "manifest" in job else []:
        groups.setdefault(digest, []).append(cell)
        if rest and rest[0] is not None:
            planned[cell] = int(rest[0])
    return groups, planned


def _object(uri: str, blobs: BlobStore) -> str:
    """The object name of a ``gs://`` URI in the deployment's bucket."""
    return uri.removeprefix(f"gs://{blobs.bucket}/")


def output_files(output_dir: str, blobs: BlobStore) -> list[BlobInfo]:
    """The JSONL files a job wrote under ``output_dir`` (none: it wrote nothing)."""
    prefix = _object(output_dir, blobs).rstrip("/") + "/"
    return [info for info in blobs.list(prefix) if info.name.endswith(".jsonl")]
