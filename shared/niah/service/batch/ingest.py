"""A batch job's output read back into cells: matched by content, in bounded pieces.

This module starts the ingest, tends it from the poll and runs one piece; the manifest
is ``manifest``'s, reading and storing lines ``output``'s, the markers
``markers``' and settling ``settle``'s (all in ``niah.service.batch``).

**Matching.** A line carries no cell key (Google documents none for Cloud Storage
input, and a label per cell breaks its label caps). At submit, each job gets a
*manifest* beside its input file: the digest of each line's prompt
(``request_digest``) and the cells that asked it. An output line is matched by the
digest of the request it echoes. Cells whose prompts are the same (an absent needle at
two depths) share a digest: a line takes the first of them not yet stored, and a claim
object per line (``ingest/JOB/lines/``) keeps that choice across redeliveries.

**Pieces.** Ingest is fanned out as messages on the cells topic, one per byte range of
each output file (``batch_ingest_piece_bytes``). A piece streams its range, skips a
line whose cell is stored before any scoring or judge call, stores the rest through
the same create-if-absent write as an online answer, and writes a marker of what it
saw. A piece that runs past ``batch_ingest_seconds`` hands the rest of its range to a
new message, so no request holds a whole file or outlives the function's timeout. A
piece holds a lease while it reads; one whose worker died is asked again by the sweep
once its lease lapses (``niah.service.batch.pieces``).

**Settling.** When the markers cover every byte of the job's output, the job is settled
once (a claim guards it): its unstored cells are the failed lines and the lines the job
never wrote. A job whose lines matched no cell fails loudly and is not marked
ingested. A reason that failed most lines (``batch_systemic_share``) is a fault of the
deployment or the service, not of a line: the cells are stored failed with it, and the
grid is not bought again online. Otherwise failed lines go online, at most
``batch_online_fallback_max`` a job. A job that ended early (cancelled, expired, failed)
keeps what it wrote, Google bills those rows; its other cells fail with its reason, or,
in a cancelled or superseded run, wait for the next round.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.core.interfaces import CLAIM_HELD, BlobInfo, BlobStore, Publisher, ResultStore
from niah.core.runs import RunRecord
from niah.errors import CellInFlightError
from niah.logs import log
from niah.models.providers import get_provider
from niah.service.batch.markers import covered, marker_ranges, uncovered, write_marker
from niah.service.batch.output import OutputReader
from niah.service.batch.pieces import piece_lease, piece_messages
from niah.service.batch.settle import settle_job
from niah.service.cells.deps import ProviderFactory
from niah.service.lease import LeaseKeeper
from niah.service.messages import ingest_message
from niah.settings import get_settings


def start_ingest(
    run: RunRecord, job: dict[str, Any], files: list[BlobInfo]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The fields the job records of its ingest, and a message per piece of ``files``.

    The caller saves the fields before it publishes: a piece that finds no ingest on
    its job is redelivered, so publishing first only costs redeliveries.
    """
    messages = piece_messages(run, job["name"], files)
    log("batch output ingest started", run_id=run.run_id, job=job["name"], files=len(files),
        pieces=len(messages))  # fmt: skip
    # Firestore holds no array in an array: each file as a map.
    listed = [{"name": info.name, "size": info.size} for info in files]
    return {"ingest": {"files": listed, "started_at": dt.datetime.now(dt.UTC)}}, messages


def tend_ingest(
    run: RunRecord, job: dict[str, Any], *, store: ResultStore,
    blobs: BlobStore, publisher: Publisher, provider_for: ProviderFactory = get_provider,
) -> bool:  # fmt: skip
    """A job being ingested, as a poll finds it: settled once read, its lost pieces re-asked.

    A piece whose worker died is asked again by the sweep as soon as its lease lapses
    (``batch_pieces``); this is the backstop for one that died before taking its lease,
    or a message lost. A live piece writes a marker at least every
    ``batch_ingest_seconds`` (a hand-on writes one), so coverage that has not grown for
    twice that has no live piece behind it: only then are its gaps published again.
    Whether ``job`` changed (its progress noted), to be saved.
    """
    run_id = run.run_id
    seen = marker_ranges(run_id, job, blobs)
    gaps = [
        (file["name"], start, end)
        for file in job["ingest"]["files"]
        for start, end in uncovered(seen.get(file["name"], []), int(file["size"]))
    ]
    if not gaps:
        settle_job(run_id, job["name"], store=store, blobs=blobs, publisher=publisher,
                   provider_for=provider_for)  # fmt: skip
        return False
    ingest, now = job["ingest"], dt.datetime.now(dt.UTC)
    missing = sum(end - start for _, start, end in gaps)
    if missing != ingest.get("missing_bytes"):
        ingest |= {"missing_bytes": missing, "progress_at": now}
        return True
    since = ingest.get("progress_at") or ingest.get("started_at") or now
    if (now - since).total_seconds() < 2 * get_settings().batch_ingest_seconds:
        return False
    publisher.publish_cells([ingest_message(run, job["name"], name, a, b) for name, a, b in gaps])
    log("lost batch ingest pieces published again", severity="WARNING", run_id=run_id,
        job=job["name"], pieces=len(gaps))  # fmt: skip
    ingest["progress_at"] = now
    return True


def ingest_piece(
    body: dict[str, Any],
    run: RunRecord,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory,
) -> str:
    """Store the answered lines of one byte range of one output file; settle if last.

    Under the piece's lease (``batch_pieces``), renewed while it reads and released once
    its marker is written: a piece whose worker dies is published again by the sweep
    once the lease lapses. A delivery that finds the lease held backs off (redelivered).
    """
    run_id = run.run_id
    job = run.batch_job(str(body["job"]))
    if job is None or job.get("ingested") or job.get("ended"):
        return "nothing to ingest"
    if "ingest" not in job:  # published just before the poll recorded the ingest
        raise CellInFlightError(f"the ingest of {job['name']} is not recorded yet")
    name, start, end = str(body["file"]), int(body["start"]), int(body["end"])
    lease_seconds = get_settings().cell_lease_seconds
    key = piece_lease(job["name"], name, start, end)
    claim = store.claim_cell(run_id, key, lease_seconds)
    if claim == CLAIM_HELD:
        raise CellInFlightError(f"{name} from {start} is being read by another delivery")
    try:
        with LeaseKeeper(store, run_id, key, claim, lease_seconds):
            piece = OutputReader(run, job, store=store, blobs=blobs,
                           publisher=publisher, provider_for=provider_for)  # fmt: skip
            stop = piece.read(name, start, end)
            write_marker(run_id, job, name, start, stop, piece.seen, blobs)
            if stop < end:
                rest = ingest_message(run, job["name"], name, stop, end)
                publisher.publish_cells([rest])
    finally:
        store.release_cell(run_id, key, claim)
    if stop < end:
        log("batch ingest piece handed on", run_id=run_id, file=name, at=stop, end=end)
        return "handed on"
    if covered(run_id, job, blobs):
        return settle_job(run_id, job["name"], store=store, blobs=blobs, publisher=publisher,
                          provider_for=provider_for)  # fmt: skip
    return "piece ingested"
