"""A piece of a batch job's output: its lease, and its recovery if it dies.

A piece (``batch_ingest.ingest_piece``) reads one byte range of one output file under a
lease of its own: a document in the run's leases (``piece_lease``), taken with the
store's cell lease (``claim_cell``), renewed by ``LeaseKeeper`` every tenth of
``cell_lease_seconds`` while it reads, released once its marker is written and the
rest of its range handed on. A piece whose worker died therefore leaves a lease that
lapsed unreleased within one lease (30 s), and the sweep publishes that piece again at
its next pass (``hand_on_dead_pieces``), as it publishes a dead holder's online cell:
a minute or two, not the 8 minutes ``tend_ingest`` waits for coverage that stopped
growing (kept as the backstop for a piece that died before its claim, or a lost
message).

Why a lapsed lease, and not "a gap no live lease covers": a piece still queued in
Pub/Sub (published, not yet delivered: a job's many pieces waiting for instances, or a
hand-on on its way) holds no lease either, and would be asked again on every pass. A
lease that lapsed unreleased has one cause, a holder that stopped renewing it, and the
store hands each such lease on once (``hand_on_lapsed``), so two sweeps do not both
publish it. The piece's lease decides only when to ask again; the lines are guarded as
before by each cell's lease and create-if-absent store, so a piece asked again while
its first holder still reads (one whose store was out of reach for a whole lease)
skips stored cells before any scoring or judge call and backs off from a cell being
stored: wasteful, never paid twice.

Light on purpose: the sweep imports it, and the dispatcher's cold start stays free of
the worker's machinery.
"""

from __future__ import annotations

import hashlib
from typing import Any

from niah.core.interfaces import BlobInfo, Publisher, ResultStore
from niah.core.runs import RunRecord
from niah.logs import log
from niah.service.messages import ingest_message
from niah.settings import get_settings

# The lease of a piece, among the run's cell leases: no cell ID starts so.
PIECE_LEASE = "batch-piece-"


def job_key(job_name: str) -> str:
    """A batch job's name as a short key (its markers' folder, its pieces' leases)."""
    return hashlib.sha256(job_name.encode()).hexdigest()[:16]


def piece_messages(run: RunRecord, job_name: str, files: list[BlobInfo]) -> list[dict[str, Any]]:
    """A message per ``batch_ingest_piece_bytes`` range of each of ``files``."""
    step = get_settings().batch_ingest_piece_bytes
    return [
        ingest_message(run, job_name, info.name, start, min(start + step, info.size))
        for info in files
        for start in range(0, info.size, step)
    ]


def file_key(name: str) -> str:
    """An output file's name as a short key (its markers' and pieces' names)."""
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def piece_lease(job_name: str, file: str, start: int, end: int) -> str:
    """The lease of the piece ``[start, end)`` of ``file``: every delivery of it takes it."""
    return f"{PIECE_LEASE}{job_key(job_name)}-{file_key(file)}-{start:013d}-{end:013d}"


def hand_on_dead_pieces(run: RunRecord, *, store: ResultStore, publisher: Publisher) -> int:
    """Publish again each piece of the run whose holder died (its lease lapsed); how many.

    Only for jobs still being read. The run's other lapsed leases are left as they
    were: a cell's in a batch run is a dead piece's line (asked again with its piece),
    a settle's is taken over by the next poll's settle.
    """
    reading = {
        job_key(job["name"]): job
        for job in run.batch_jobs
        if "ingest" in job and not (job.get("ingested") or job.get("ended"))
    }
    if not reading:
        return 0
    run_id = run.run_id
    messages = []
    for lease in store.hand_on_lapsed(run_id):
        if not lease.startswith(PIECE_LEASE):
            continue
        job_part, file_part, start, end = lease.removeprefix(PIECE_LEASE).split("-")
        job = reading.get(job_part)
        files = {file_key(f["name"]): f["name"] for f in job["ingest"]["files"]} if job else {}
        if job is not None and file_part in files:
            messages.append(
                ingest_message(run, job["name"], files[file_part], int(start), int(end))
            )
    if not messages:
        return 0
    count = publisher.publish_cells(messages)
    log("batch ingest pieces of dead holders published again", severity="WARNING",
        run_id=run_id, pieces=count)  # fmt: skip
    return count
