"""Batch runs: a grid as Vertex AI batch jobs, their predictions stored as cells.

Two steps, each a message on the cells topic that the worker takes (``batch_message``):

- **submit**: the run's missing cells become JSONL lines (``cell_batch_line``: the
  online call's request), split into files of at most ``batch_max_lines`` lines and
  ``batch_max_bytes`` bytes under ``batches/RUN_ID/``, one job each; the jobs' names
  go on the run (``batch_jobs``). Once a round: a lease on the round guards it, and a
  holder that died after creating a job finds it again by its display name.
- **poll**: the sweep asks every few minutes (``sweep_stalled_runs``); each job is read
  (``BatchClient.get``). A job that succeeded is ingested: each output line is mapped
  to its cell by the label its request carries, scored by the task's scorer and stored
  through the same create-if-absent write as an online answer (``store_cell``), so a
  line is stored once however often its job is ingested. A line that failed is
  published as an online cell (answered at the online price). A job that failed,
  expired or was cancelled elsewhere stores its cells failed with the job's reason.
  A cancelled run's jobs are cancelled through the API.

Polling rather than a Cloud Storage notification on the output: a job that fails or
expires writes no output, so its state must be read anyway; one poll finds both.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from functools import partial
from typing import Any

from niah.core.answer_budget import call_budget
from niah.core.interfaces import (
    BATCH_ENDED_WITHOUT_OUTPUT,
    BATCH_SUCCEEDED,
    CLAIM_HELD,
    RUN_CANCELLED,
    BatchClient,
    BlobInfo,
    BlobStore,
    Publisher,
    ResultStore,
    gs_uri,
)
from niah.core.spec import RunRequest
from niah.errors import BatchJobError, CellInFlightError
from niah.logs import log
from niah.models.providers import get_provider
from niah.models.providers.gemini import answer_from_json
from niah.models.providers.gemini_request import cell_of_line
from niah.models.tokenizer import get_tokenizer
from niah.service.batch_lines import cell_batch_line
from niah.service.cell_worker import (
    CellTask,
    ProviderFactory,
    RunView,
    TokenizerFactory,
    cell_record,
    cell_sample,
    failed_cell,
    harness_timestamp,
    run_view,
    scored_answer,
    store_cell,
)
from niah.service.dispatch import BATCH_SUBMIT, cell_messages
from niah.service.lease import LeaseKeeper
from niah.service.run_completion import request_report_if_complete
from niah.settings import get_settings

BatchFactory = Callable[[str], BatchClient]


def gemini_batches(model_name: str) -> BatchClient:
    """The deployment's Vertex AI batch jobs for ``model_name`` (its provider's client)."""
    provider: Any = get_provider("gemini", model_name)
    batches: BatchClient = provider.batches()
    return batches


def handle_batch_message(
    body: dict[str, Any],
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    batches_for: BatchFactory = gemini_batches,
    provider_for: ProviderFactory = get_provider,
    tokenizer_for: TokenizerFactory | None = None,
) -> str:
    """Do what a batch message asks (submit or poll); what came of it, for the log."""
    run_id = str(body["run_id"])
    run = store.get_run(run_id, counts=False)
    stamp = body.get("run_stamp")
    if run is None or (stamp is not None and run.get("stamp") not in (None, stamp)):
        return "orphan"
    spec = RunRequest.model_validate(run["spec"])
    batches = batches_for(spec.model_name)
    if run.get("status") == RUN_CANCELLED:
        return cancel_jobs(run_id, run, store=store, batches=batches)
    if body.get("batch_action") == BATCH_SUBMIT:
        return submit_batch(
            run_id,
            run,
            spec,
            int(body.get("batch_round", 0)),
            store=store,
            blobs=blobs,
            publisher=publisher,
            batches=batches,
            tokenizer_for=tokenizer_for or partial(get_tokenizer, blobs=blobs),
        )
    return poll_batch(
        run_id, run, spec, store=store, blobs=blobs, publisher=publisher, batches=batches,
        provider_for=provider_for,
    )  # fmt: skip


def _haystack_files(run: dict[str, Any]) -> list[BlobInfo] | None:
    listed = run.get("haystack_files") or None
    return (
        [BlobInfo(str(f["name"]), int(f["size"]), str(f["fingerprint"])) for f in listed]
        if listed
        else None
    )


def _tasks(run_id: str, spec: RunRequest, run: dict[str, Any], skip: set[str]) -> list[CellTask]:
    return [
        CellTask.from_message(message)
        for message in cell_messages(run_id, spec, run)
        if message["cell_id"] not in skip
    ]


def submit_batch(
    run_id: str,
    run: dict[str, Any],
    spec: RunRequest,
    batch_round: int,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    batches: BatchClient,
    tokenizer_for: TokenizerFactory,
) -> str:
    """Write the round's input files and submit one job per file, once per round."""
    jobs = list(run.get("batch_jobs") or [])
    if any(job.get("round") == batch_round for job in jobs):
        return "duplicate"
    settings = get_settings()
    key = f"batch-submit-r{batch_round:03d}"
    claim = store.claim_cell(run_id, key, settings.cell_lease_seconds)
    if claim == CLAIM_HELD:
        raise CellInFlightError(f"round {batch_round} of {run_id} is being submitted")
    try:
        with LeaseKeeper(store, run_id, key, claim, settings.cell_lease_seconds):
            tasks = _tasks(run_id, spec, run, store.cell_ids(run_id))
            if not tasks:
                request_report_if_complete(run_id, store=store, publisher=publisher)
                return "nothing to submit"
            submitted = _submit_parts(
                run_id, spec, run, batch_round, tasks, blobs=blobs, batches=batches,
                tokenizer_for=tokenizer_for, found_first=claim > 1,
            )  # fmt: skip
            store.update_run(
                run_id,
                {"batch_jobs": jobs + submitted, "batch_submitted_at": dt.datetime.now(dt.UTC)},
            )
    finally:
        store.release_cell(run_id, key, claim)
    log("batch jobs submitted", run_id=run_id, jobs=len(submitted), cells=len(tasks))
    return "submitted"


def _submit_parts(
    run_id: str,
    spec: RunRequest,
    run: dict[str, Any],
    batch_round: int,
    tasks: list[CellTask],
    *,
    blobs: BlobStore,
    batches: BatchClient,
    tokenizer_for: TokenizerFactory,
    found_first: bool,
) -> list[dict[str, Any]]:
    """Each part's file written and its job created (or found, after a holder died)."""
    settings = get_settings()
    files = _haystack_files(run)
    parts: list[list[tuple[str, bytes]]] = [[]]
    size = 0
    for task in tasks:
        line = json.dumps(
            cell_batch_line(
                task, spec, blobs=blobs, tokenizer_for=tokenizer_for, haystack_files=files
            )
        ).encode()
        if parts[-1] and (
            len(parts[-1]) >= settings.batch_max_lines
            or size + len(line) > settings.batch_max_bytes
        ):
            parts.append([])
            size = 0
        parts[-1].append((task.cell_id, line))
        size += len(line) + 1
    base = f"{settings.batches_prefix}{run_id}/r{batch_round:03d}"
    submitted = []
    for number, part in enumerate(parts):
        name = f"{base}-input-{number:03d}.jsonl"
        blobs.write(
            name, b"\n".join(line for _, line in part) + b"\n", content_type="application/jsonl"
        )
        display = f"niah-{run_id}-r{batch_round:03d}-{number:03d}"
        job = batches.find(display) if found_first else None
        if job is None or job.state in BATCH_ENDED_WITHOUT_OUTPUT:
            job = batches.submit(
                gs_uri(blobs.bucket, name),
                gs_uri(blobs.bucket, f"{base}-output-{number:03d}/"),
                display,
            )
        submitted.append(
            {
                "name": job.name,
                "display_name": display,
                "round": batch_round,
                "state": job.state,
                "input": gs_uri(blobs.bucket, name),
                "cell_ids": [cell_id for cell_id, _ in part],
            }
        )
    return submitted


def poll_batch(
    run_id: str,
    run: dict[str, Any],
    spec: RunRequest,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    batches: BatchClient,
    provider_for: ProviderFactory,
) -> str:
    """Read each open job's state; ingest the succeeded, fail the cells of the ended."""
    jobs = [dict(job) for job in run.get("batch_jobs") or []]
    changed = 0
    for job in jobs:
        if job.get("ingested") or job.get("ended") or job.get("superseded"):
            continue
        now = batches.get(job["name"])
        if now.state == job.get("state") and now.state not in (
            *BATCH_SUCCEEDED,
            *BATCH_ENDED_WITHOUT_OUTPUT,
        ):
            continue
        job["state"] = now.state
        changed += 1
        if now.state in BATCH_SUCCEEDED and now.output_dir:
            job |= ingest_job(
                run_id, spec, run, now.output_dir, job, store=store, blobs=blobs,
                publisher=publisher, provider_for=provider_for,
            )  # fmt: skip
            job["ingested"] = True
        elif now.state in (*BATCH_SUCCEEDED, *BATCH_ENDED_WITHOUT_OUTPUT):
            reason = now.error or (
                "it named no output folder" if now.state in BATCH_SUCCEEDED else None
            )
            job |= {"ended": True, "error": reason}
            error = BatchJobError(
                f"batch job {job['name']} ended {now.state}"
                + (f": {reason}" if reason else "")
                + "; resume the run to submit its cells again"
            )
            _fail_cells(
                run_id,
                spec,
                run,
                job["cell_ids"],
                error,
                store=store,
                blobs=blobs,
                publisher=publisher,
            )
    if changed:
        store.update_run(run_id, {"batch_jobs": jobs})
    log("batch jobs polled", run_id=run_id, changed=changed)
    return "polled"


def ingest_job(
    run_id: str,
    spec: RunRequest,
    run: dict[str, Any],
    output_dir: str,
    job: dict[str, Any],
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory,
) -> dict[str, int]:
    """Store each prediction line of a job as its cell, once; send failed lines online."""
    tasks = {task.cell_id: task for task in _tasks(run_id, spec, run, set())}
    view = run_view(run_id, run)
    stored = store.cell_ids(run_id)  # a failed line of a cell stored since goes nowhere
    prefix = output_dir.removeprefix(f"gs://{blobs.bucket}/").rstrip("/") + "/"
    counts = {"lines_stored": 0, "lines_duplicate": 0, "lines_retried_online": 0}
    for info in blobs.list(prefix):
        if not info.name.endswith(".jsonl"):
            continue
        for text in blobs.read(info.name).decode().splitlines():
            if not text.strip():
                continue
            record = json.loads(text)
            task = tasks.get(cell_of_line(record) or "")
            if task is None:
                log("batch line of no cell of the run", severity="WARNING", run_id=run_id)
                continue
            if record.get("status") or "response" not in record:
                if task.cell_id in stored:
                    continue
                # Answered online, at the online price (no second batch round for a line).
                publisher.publish_cells([task.message()])
                counts["lines_retried_online"] += 1
                log("failed batch line sent online", run_id=run_id, cell_id=task.cell_id,
                    status=str(record.get("status"))[:300])  # fmt: skip
                continue
            outcome = _store_line(task, view, record["response"], job, store=store, blobs=blobs,
                                  publisher=publisher, provider_for=provider_for)  # fmt: skip
            counts["lines_stored" if outcome != "duplicate" else "lines_duplicate"] += 1
    return counts


def _store_line(
    task: CellTask,
    run: RunView,
    response: dict[str, Any],
    job: dict[str, Any],
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory,
) -> str:
    spec = run.spec
    sample = cell_sample(task, spec, task.cell, blobs)
    answer = answer_from_json(response)
    budget = call_budget(spec, sample.answer_tokens)
    fields, totals, call_fields = scored_answer(
        task, spec, sample, answer, budget=budget, blobs=blobs, provider_for=provider_for,
        batch=True,
    )  # fmt: skip
    doc = (
        cell_record(task, spec, task.cell, sample)
        | fields
        | {
            "execution": "batch",
            "batch_job": job["name"],
            "test_timestamp_utc": harness_timestamp(),
        }
    )
    call = (f"{task.cell_id}.B{int(job.get('round', 0)):03d}", call_fields)
    return store_cell(task, doc, totals, call=call, store=store, blobs=blobs, publisher=publisher,
                      run=run)  # fmt: skip


def _fail_cells(
    run_id: str,
    spec: RunRequest,
    run: dict[str, Any],
    cell_ids: list[str],
    error: BatchJobError,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
) -> None:
    """Store a job's unanswered cells failed with its reason, so the run finishes."""
    stored = store.cell_ids(run_id)
    view = run_view(run_id, run)
    for task in _tasks(run_id, spec, run, stored):
        if task.cell_id in cell_ids:
            store_cell(task, failed_cell(task, spec, error), {}, store=store, blobs=blobs,
                       publisher=publisher, run=view)  # fmt: skip


def cancel_jobs(
    run_id: str, run: dict[str, Any], *, store: ResultStore, batches: BatchClient
) -> str:
    """Cancel the run's open jobs through the API (once each)."""
    jobs = [dict(job) for job in run.get("batch_jobs") or []]
    cancelled = 0
    for job in jobs:
        if (
            job.get("ingested")
            or job.get("ended")
            or job.get("superseded")
            or job.get("cancel_sent")
        ):
            continue
        batches.cancel(job["name"])
        job["cancel_sent"] = True
        cancelled += 1
    if cancelled:
        store.update_run(run_id, {"batch_jobs": jobs})
    log("batch jobs of a cancelled run cancelled", run_id=run_id, jobs=cancelled)
    return "cancelled"
