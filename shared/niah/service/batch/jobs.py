"""A batch run's jobs as the API reports them: polled, cancelled, their output's ingest begun.

A job that ended with output (succeeded, or cancelled, expired or failed after writing
rows, which Google bills) is ingested in pieces (``niah.service.batch.ingest``); one
that ended without output fails its cells with the job's reason. A cancelled run's jobs
are cancelled through the API, and what they wrote before the cancel is kept.
"""

from __future__ import annotations

import copy
from typing import Any

from niah.core.interfaces import (
    BATCH_ENDED_WITHOUT_OUTPUT,
    BATCH_SUCCEEDED,
    BatchClient,
    BatchJob,
    BlobStore,
    Publisher,
    ResultStore,
)
from niah.core.runs import RunRecord
from niah.errors import BatchJobError, CellInFlightError
from niah.logs import log
from niah.models.providers import get_provider
from niah.service.batch.ingest import start_ingest, tend_ingest
from niah.service.batch.manifest import job_cells, output_files
from niah.service.batch.settle import fail_cells
from niah.service.batch.wait import expected_fields, still_waiting
from niah.service.cells.deps import ProviderFactory
from niah.service.messages import BATCH_POLL, batch_message
from niah.settings import get_settings


def poll_batch(
    run: RunRecord,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    batches: BatchClient,
    provider_for: ProviderFactory,
) -> str:
    """Read each open job's state; ingest what ended with output, fail the cells of the rest."""
    before = run.batch_job_entries()
    jobs = copy.deepcopy(before)
    changed = 0
    pieces: list[dict[str, Any]] = []
    for job in jobs:
        if job.get("ingested") or job.get("ended"):
            continue
        if "ingest" in job:  # a superseded job's output too: a resume waits on it
            changed += tend_ingest(run, job, store=store, blobs=blobs,
                                   publisher=publisher, provider_for=provider_for)  # fmt: skip
            continue
        if job.get("superseded"):
            continue
        now = batches.get(job["name"])
        if now.state == job.get("state") and now.state not in (
            *BATCH_SUCCEEDED,
            *BATCH_ENDED_WITHOUT_OUTPUT,
        ):
            continue
        job["state"] = now.state
        changed += 1
        if now.state in (*BATCH_SUCCEEDED, *BATCH_ENDED_WITHOUT_OUTPUT):
            fields, started = _ended(run, job, now, store=store, blobs=blobs,
                                     publisher=publisher)  # fmt: skip
            job |= fields
            pieces += started
    if changed:
        _save_jobs(run.run_id, before, jobs, store=store)
    if pieces:
        publisher.publish_cells(pieces)
    log("batch jobs polled", run_id=run.run_id, changed=changed)
    return "polled"


def _ended(
    run: RunRecord,
    job: dict[str, Any],
    now: BatchJob,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A job that just ended: its fields, and the pieces of its output to publish.

    A job that ended early still exports the rows it completed ("If the batch prediction
    job is terminated, all completed rows are exported", Vertex AI "Batch inference from
    Cloud Storage", read 2026-11-27), and Google bills them: they are ingested like a
    success's, and only the cells they leave are failed.
    """
    files, fields = _output_of(job, now, blobs)
    if files:
        started, pieces = start_ingest(run, job, files)
        return fields | started, pieces
    if "output_wait_since" in fields:
        return fields, []
    reason = fields.get("error") or ("it wrote no output" if now.state in BATCH_SUCCEEDED else None)
    error = BatchJobError(
        f"batch job {job['name']} ended {now.state}"
        + (f": {reason}" if reason else "")
        + "; resume the run to submit its cells again"
    )
    fail_cells(run, job_cells(job, blobs), error, store=store, blobs=blobs,
                publisher=publisher)  # fmt: skip
    return fields | {"ended": True, "error": reason}, []


def _output_of(
    job: dict[str, Any], now: BatchJob, blobs: BlobStore
) -> tuple[list[Any], dict[str, Any]]:
    """An ended job's output files, and the fields it records (Google's counts).

    No files yet while Google counted rows (``completionStats``): the export may lag the
    state, so the job waits (``output_wait_since``) up to ``batch_output_wait_seconds``;
    past that, its reason says how many rows never appeared.
    """
    where = now.output_dir or job.get("output")
    files = output_files(where, blobs) if where else []
    fields = expected_fields(now) | ({"error": now.error} if now.error else {})
    expected = fields.get("expected_lines")
    if files or not expected:
        return files, fields
    waiting = still_waiting(job)
    if waiting is not None:
        log("batch job ended; its output not yet written", job=job["name"], expected=expected)
        return [], fields | waiting
    missing = (
        f"Google counted {expected} rows (completionStats) but none appeared in its output "
        f"within {get_settings().batch_output_wait_seconds:g} s (batch_output_wait_seconds)"
    )
    return [], fields | {"error": f"{now.error}; {missing}" if now.error else missing,
                         "lines_never_seen": expected}  # fmt: skip


def _save_jobs(
    run_id: str,
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    *,
    store: ResultStore,
) -> None:
    """Write what changed of each job to its own document, nothing else.

    A job a settle finished meanwhile keeps what the settle wrote: this writes only the
    fields this call changed, and never another job's.
    """
    for old, new in zip(before, after, strict=True):
        changed = {key: value for key, value in new.items() if old.get(key) != value}
        if changed:
            store.update_batch_job(run_id, str(new["name"]), changed)


def earlier_output_pending(
    run: RunRecord,
    batch_round: int,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    batches: BatchClient,
    provider_for: ProviderFactory,
) -> bool:
    """Start ingesting what an earlier round's jobs wrote; True while that is under way.

    A resumed round asks only what no earlier job answered: a job cancelled after half
    its lines were written keeps those lines, and they are not bought twice.
    """
    before = run.batch_job_entries()
    jobs = copy.deepcopy(before)
    pending = False
    late: list[str] = []
    pieces: list[dict[str, Any]] = []
    for job in jobs:
        if job.get("round", 0) >= batch_round or job.get("ingested") or job.get("ended"):
            continue
        if "ingest" in job:
            # Under way: its settle asks for this round's submit; tended here too, so a
            # lost piece cannot hold the round back.
            job["then_submit"] = batch_round
            tend_ingest(run, job, store=store, blobs=blobs, publisher=publisher,
                        provider_for=provider_for)  # fmt: skip
            pending = True
            continue
        now = batches.get(job["name"])
        job["state"] = now.state
        if now.state not in (*BATCH_SUCCEEDED, *BATCH_ENDED_WITHOUT_OUTPUT):
            raise CellInFlightError(f"batch job {job['name']} is still ending ({now.state})")
        files, fields = _output_of(job, now, blobs)
        job |= fields
        if files:
            started, more = start_ingest(run, job, files)
            job |= started | {"then_submit": batch_round}
            pieces += more
            pending = True
        elif "output_wait_since" in fields:
            late.append(job["name"])
        else:
            job["ended"] = True
    _save_jobs(run.run_id, before, jobs, store=store)
    if late:  # redelivered until their output is written or the wait is over
        raise CellInFlightError(f"batch job(s) {', '.join(late)} ended; output not written yet")
    if pieces:
        publisher.publish_cells(pieces)
    return pending


def cancel_jobs(
    run: RunRecord,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    batches: BatchClient,
    provider_for: ProviderFactory = get_provider,
) -> str:
    """Cancel the run's open jobs through the API (once each), then keep what they wrote.

    A cancelled job still exports the rows it completed, and Google bills them: once it
    has ended, its output is ingested (``batch_ingest``), its other cells left for a
    resume. Until it has ended, the poll is redelivered (``CellInFlightError``); a
    resume ingests it too, before it submits anything.
    """
    before = run.batch_job_entries()
    jobs = copy.deepcopy(before)
    cancelled = ending = 0
    pieces: list[dict[str, Any]] = []
    for job in jobs:
        if job.get("ingested") or job.get("ended") or job.get("superseded"):
            continue
        if not job.get("cancel_sent"):
            batches.cancel(job["name"])
            job["cancel_sent"] = True
            cancelled += 1
        elif "ingest" in job:
            tend_ingest(run, job, store=store, blobs=blobs, publisher=publisher,
                        provider_for=provider_for)  # fmt: skip
        else:
            now = batches.get(job["name"])
            job["state"] = now.state
            if now.state not in (*BATCH_SUCCEEDED, *BATCH_ENDED_WITHOUT_OUTPUT):
                ending += 1
                continue
            files, fields = _output_of(job, now, blobs)
            job |= fields
            if "output_wait_since" in fields:
                ending += 1  # its rows are paid for: waited for as an ending job is
                continue
            if not files:
                job["ended"] = True
                continue
            started, more = start_ingest(run, job, files)
            job |= started
            pieces += more
    _save_jobs(run.run_id, before, jobs, store=store)
    if pieces:
        publisher.publish_cells(pieces)
    log("batch jobs of a cancelled run cancelled", run_id=run.run_id, jobs=cancelled,
        still_ending=ending)  # fmt: skip
    if cancelled:
        # Asked again at once: the next delivery waits (redelivered) until they end.
        publisher.publish_cells([batch_message(run, BATCH_POLL)])
    elif ending:
        raise CellInFlightError(f"{ending} batch job(s) of {run.run_id} are still being cancelled")
    return "cancelled"
