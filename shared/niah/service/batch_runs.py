"""Batch runs: a grid as Vertex AI batch jobs, their predictions stored as cells.

Two steps, each a message on the cells topic that the worker takes (``batch_message``):

- **submit**: the run's missing cells become JSONL lines (``cell_batch_line``: the
  online call's request), split into files of at most ``batch_max_lines`` lines and
  ``batch_max_bytes`` bytes under ``batches/RUN_ID/``, one job each; the jobs' names
  go on the run (``batch_jobs``). Once a round: a lease on the round guards it, and a
  holder that died after creating a job finds it again by its display name.
- **poll**: the sweep asks every few minutes (``sweep_stalled_runs``); each job is read
  (``BatchClient.get``). A job that ended with output (succeeded, or cancelled, expired
  or failed after writing some rows, which Google bills) is ingested in pieces
  (``niah.service.batch_ingest``: lines matched to cells by their prompt's digest, failed
  lines classified before any goes online). A job that ended without output stores its
  cells failed with the job's reason. A cancelled run's jobs are cancelled through the
  API, and what they wrote before the cancel is kept.
- **ingest**: one byte range of one output file (``batch_ingest.ingest_piece``).

Polling rather than a Cloud Storage notification on the output: a job that fails or
expires writes no output, so its state must be read anyway; one poll finds both.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from functools import partial
from typing import Any

from niah.core.interfaces import (
    BATCH_ENDED_WITHOUT_OUTPUT,
    BATCH_SUCCEEDED,
    CLAIM_HELD,
    RUN_CANCELLED,
    BatchClient,
    BatchJob,
    BlobStore,
    Publisher,
    ResultStore,
    gs_uri,
)
from niah.core.spec import RUN_ID_PATTERN, RunRequest
from niah.core.token_fit import TokenCountRatio
from niah.errors import BatchJobError, CellInFlightError, PromptOverLimitError
from niah.logs import log
from niah.models.providers import get_provider
from niah.models.providers.gemini_request import request_digest
from niah.models.tokenizer import get_tokenizer
from niah.service.batch_ingest import (
    ManifestLine,
    fail_cells,
    haystack_files,
    ingest_piece,
    job_cells,
    manifest_name,
    output_files,
    run_tasks,
    settle_job,
    start_ingest,
    store_failed,
    tend_ingest,
    write_manifest,
)
from niah.service.batch_lines import UnfittedCounts, cell_batch_line
from niah.service.cell_prompt import run_haystack
from niah.service.cell_records import failed_cell, store_cell
from niah.service.lease import LeaseKeeper
from niah.service.messages import (
    BATCH_FAIL,
    BATCH_INGEST,
    BATCH_POLL,
    BATCH_SETTLE,
    BATCH_SUBMIT,
    CellTask,
    batch_message,
)
from niah.service.run_completion import request_report_if_complete
from niah.service.run_view import run_view
from niah.service.token_counts import run_token_ratio
from niah.service.worker_deps import ProviderFactory, TokenizerFactory
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
    """Do what a batch message asks (submit or poll); what came of it, for the log.

    Checked against its run before anything is paid, as a cell message is: a run ID of
    the wrong shape, or a submit of a round other than the run's current one (stale, or
    forged), is refused.
    """
    run_id = str(body.get("run_id"))
    if not RUN_ID_PATTERN.fullmatch(run_id):
        log("batch message of no possible run rejected", severity="ERROR", run_id=run_id[:80])
        return "rejected"
    run = store.get_run(run_id, counts=False)
    stamp = body.get("run_stamp")
    if run is None or (stamp is not None and run.get("stamp") not in (None, stamp)):
        return "orphan"
    spec = RunRequest.model_validate(run["spec"])
    action = body.get("batch_action")
    # Before the cancelled check: rows a cancelled job wrote are paid for, and kept.
    if action == BATCH_INGEST:
        return ingest_piece(body, run, spec, store=store, blobs=blobs, publisher=publisher,
                            provider_for=provider_for)  # fmt: skip
    if action == BATCH_SETTLE:
        return settle_job(run_id, str(body["job"]), store=store, blobs=blobs,
                          publisher=publisher, provider_for=provider_for)  # fmt: skip
    if action == BATCH_FAIL:
        if run.get("status") == RUN_CANCELLED:
            return "cancelled"  # its cells wait for a resume
        cells = [str(cell) for cell in body.get("cells") or []]
        store_failed(run_id, spec, run, cells, BatchJobError(str(body.get("reason") or "")),
                     store=store, blobs=blobs, publisher=publisher)  # fmt: skip
        return "failed cells stored"
    batches = batches_for(spec.model_name)
    if run.get("status") == RUN_CANCELLED:
        return cancel_jobs(run_id, run, store=store, blobs=blobs, publisher=publisher,
                           batches=batches, provider_for=provider_for)  # fmt: skip
    if body.get("batch_action") == BATCH_SUBMIT:
        if int(body.get("batch_round", 0)) != int(run.get("batch_round", 0)):
            log("batch submit of another round rejected", severity="WARNING", run_id=run_id,
                asked=body.get("batch_round"), current=run.get("batch_round", 0))  # fmt: skip
            return "rejected"
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
            provider_for=provider_for,
        )
    return poll_batch(
        run_id, run, spec, store=store, blobs=blobs, publisher=publisher, batches=batches,
        provider_for=provider_for,
    )  # fmt: skip


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
    provider_for: ProviderFactory = get_provider,
) -> str:
    """Write the round's input files and submit one job per file, once per round.

    A cell whose prompt the model would count over its input limit is stored failed
    (``PromptOverLimitError``) instead of going into a job.
    """
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
            if _earlier_output_pending(run_id, run, batch_round, store=store, blobs=blobs,
                                       publisher=publisher, batches=batches,
                                       provider_for=provider_for):  # fmt: skip
                return "ingesting an earlier round's output first"
            # As that step left them (it may have marked earlier jobs ended).
            jobs = list((store.get_run(run_id, counts=False) or run).get("batch_jobs") or [])
            tasks = run_tasks(run_id, spec, run, store.cell_ids(run_id))
            if not tasks:
                request_report_if_complete(run_id, store=store, publisher=publisher)
                return "nothing to submit"
            lines = _lines(run_id, spec, run, tasks, store=store, blobs=blobs,
                           publisher=publisher, tokenizer_for=tokenizer_for,
                           provider_for=provider_for)  # fmt: skip
            submitted = _submit_parts(
                run_id, run, batch_round, lines, blobs=blobs, batches=batches,
                found_first=claim > 1,
            ) if lines else []  # fmt: skip
            store.update_run(
                run_id,
                {"batch_jobs": jobs + submitted, "batch_submitted_at": dt.datetime.now(dt.UTC)},
            )
    finally:
        store.release_cell(run_id, key, claim)
    log("batch jobs submitted", run_id=run_id, jobs=len(submitted), cells=len(tasks))
    return "submitted"


def _lines(
    run_id: str,
    spec: RunRequest,
    run: dict[str, Any],
    tasks: list[CellTask],
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    tokenizer_for: TokenizerFactory,
    provider_for: ProviderFactory,
) -> list[ManifestLine]:
    """Each task's input line with what the manifest keeps of it; the refused stored.

    Built as the online path builds a call: fitted to the model's count of the haystack
    (measured once for the run, ``run_token_ratio``), counted where it must be, and
    refused over the input limit before anything is paid.
    """
    provider = provider_for(spec.provider(), spec.model_name)
    tokenizer = tokenizer_for(provider.tokenizer_name)
    files = haystack_files(run)

    def ratio() -> TokenCountRatio:
        return run_token_ratio(
            run_id, spec, run.get("token_count") or None, stamp=run.get("stamp"),
            haystack=run_haystack(spec, tokenizer, blobs, files), tokenizer=tokenizer,
            provider=provider, store=store,
        )  # fmt: skip

    lines, refused = [], []
    unfitted = UnfittedCounts()
    for task in tasks:
        try:
            built = cell_batch_line(
                task, spec, blobs=blobs, tokenizer_for=tokenizer_for, haystack_files=files,
                provider=provider, token_ratio=ratio if spec.provider() == "gemini" else None,
                unfitted=unfitted,
            )  # fmt: skip
        except PromptOverLimitError as over:
            refused.append((task, over))
            continue
        digest = str(request_digest(built.line["request"]))
        encoded = json.dumps(built.line).encode()
        lines.append(ManifestLine(task.cell_id, digest, built.planned_prompt_tokens, encoded))
    view = run_view(run_id, run)
    for task, why in refused:
        store_cell(task, failed_cell(task, spec, why), {}, store=store, blobs=blobs,
                   publisher=publisher, run=view)  # fmt: skip
    return lines


def _submit_parts(
    run_id: str,
    run: dict[str, Any],
    batch_round: int,
    lines: list[ManifestLine],
    *,
    blobs: BlobStore,
    batches: BatchClient,
    found_first: bool,
) -> list[dict[str, Any]]:
    """Each part's file written and its job created (or found, after a holder died)."""
    settings = get_settings()
    parts: list[list[ManifestLine]] = [[]]
    size = 0
    for line in lines:
        if parts[-1] and (
            len(parts[-1]) >= settings.batch_max_lines
            or size + len(line.json) + 1 > settings.batch_max_bytes  # with its newline
        ):
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line.json) + 1
    base = f"{settings.batches_prefix}{run_id}/r{batch_round:03d}"
    # The output folder names the run's creation too: a run made again under its ID
    # (deleted, then asked again) must not find the first one's predictions there.
    created = f"-{run['stamp'][:8]}" if run.get("stamp") else ""
    submitted = []
    for number, part in enumerate(parts):
        name = f"{base}-input-{number:03d}.jsonl"
        write_manifest(blobs, manifest_name(name), part)
        blobs.write(
            name, b"\n".join(line.json for line in part) + b"\n", content_type="application/jsonl"
        )
        output = gs_uri(blobs.bucket, f"{base}{created}-output-{number:03d}/")
        display = f"niah-{run_id}-r{batch_round:03d}-{number:03d}"
        job = batches.find(display) if found_first else None
        if job is None or job.state in BATCH_ENDED_WITHOUT_OUTPUT:
            job = batches.submit(gs_uri(blobs.bucket, name), output, display)
        submitted.append(
            {
                "name": job.name,
                "display_name": display,
                "round": batch_round,
                "state": job.state,
                "input": gs_uri(blobs.bucket, name),
                "output": output,
                "manifest": gs_uri(blobs.bucket, manifest_name(name)),
                "cells": len(part),
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
    """Read each open job's state; ingest what ended with output, fail the cells of the rest."""
    jobs = [dict(job) for job in run.get("batch_jobs") or []]
    changed = 0
    pieces: list[dict[str, Any]] = []
    for job in jobs:
        if job.get("ingested") or job.get("ended"):
            continue
        if "ingest" in job:  # a superseded job's output too: a resume waits on it
            changed += tend_ingest(run_id, run, job, store=store, blobs=blobs,
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
            fields, started = _ended(run_id, run, spec, job, now, store=store, blobs=blobs,
                                     publisher=publisher)  # fmt: skip
            job |= fields
            pieces += started
    if changed:
        _save_jobs(run_id, jobs, store=store)
    if pieces:
        publisher.publish_cells(pieces)
    log("batch jobs polled", run_id=run_id, changed=changed)
    return "polled"


def _ended(
    run_id: str,
    run: dict[str, Any],
    spec: RunRequest,
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
    where = now.output_dir or job.get("output")
    files = output_files(where, blobs) if where else []
    fields: dict[str, Any] = {"error": now.error} if now.error else {}
    if files:
        started, pieces = start_ingest(run_id, run, job, files)
        return fields | started, pieces
    reason = now.error or ("it wrote no output" if now.state in BATCH_SUCCEEDED else None)
    error = BatchJobError(
        f"batch job {job['name']} ended {now.state}"
        + (f": {reason}" if reason else "")
        + "; resume the run to submit its cells again"
    )
    fail_cells(run_id, spec, run, job_cells(job, blobs), error, store=store, blobs=blobs,
                publisher=publisher)  # fmt: skip
    return {"ended": True, "error": reason}, []


def _save_jobs(run_id: str, jobs: list[dict[str, Any]], *, store: ResultStore) -> None:
    """Write the jobs back; a job a settle finished meanwhile is kept as the settle wrote it."""
    fresh = {
        j.get("name"): j
        for j in (store.get_run(run_id, counts=False) or {}).get("batch_jobs") or []
    }
    settled = {name for name, j in fresh.items() if j.get("ingested") or j.get("ended")}
    merged = [fresh[job.get("name")] if job.get("name") in settled else job for job in jobs]
    store.update_run(run_id, {"batch_jobs": merged})


def _earlier_output_pending(
    run_id: str,
    run: dict[str, Any],
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
    jobs = [dict(job) for job in run.get("batch_jobs") or []]
    pending = False
    pieces: list[dict[str, Any]] = []
    for job in jobs:
        if job.get("round", 0) >= batch_round or job.get("ingested") or job.get("ended"):
            continue
        if "ingest" in job:
            # Under way: its settle asks for this round's submit; tended here too, so a
            # lost piece cannot hold the round back.
            job["then_submit"] = batch_round
            tend_ingest(run_id, run, job, store=store, blobs=blobs, publisher=publisher,
                        provider_for=provider_for)  # fmt: skip
            pending = True
            continue
        now = batches.get(job["name"])
        job["state"] = now.state
        if now.state not in (*BATCH_SUCCEEDED, *BATCH_ENDED_WITHOUT_OUTPUT):
            raise CellInFlightError(f"batch job {job['name']} is still ending ({now.state})")
        where = now.output_dir or job.get("output")
        files = output_files(where, blobs) if where else []
        if files:
            started, more = start_ingest(run_id, run, job, files)
            job |= started | {"then_submit": batch_round}
            pieces += more
            pending = True
        else:
            job["ended"] = True
    _save_jobs(run_id, jobs, store=store)
    if pieces:
        publisher.publish_cells(pieces)
    return pending


def cancel_jobs(
    run_id: str,
    run: dict[str, Any],
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
    jobs = [dict(job) for job in run.get("batch_jobs") or []]
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
            tend_ingest(run_id, run, job, store=store, blobs=blobs, publisher=publisher,
                        provider_for=provider_for)  # fmt: skip
        else:
            now = batches.get(job["name"])
            job["state"] = now.state
            if now.state not in (*BATCH_SUCCEEDED, *BATCH_ENDED_WITHOUT_OUTPUT):
                ending += 1
                continue
            where = now.output_dir or job.get("output")
            files = output_files(where, blobs) if where else []
            if not files:
                job["ended"] = True
                continue
            started, more = start_ingest(run_id, run, job, files)
            job |= started
            pieces += more
    _save_jobs(run_id, jobs, store=store)
    if pieces:
        publisher.publish_cells(pieces)
    log("batch jobs of a cancelled run cancelled", run_id=run_id, jobs=cancelled,
        still_ending=ending)  # fmt: skip
    if cancelled:
        # Asked again at once: the next delivery waits (redelivered) until they end.
        publisher.publish_cells([batch_message(run_id, BATCH_POLL, run)])
    elif ending:
        raise CellInFlightError(f"{ending} batch job(s) of {run_id} are still being cancelled")
    return "cancelled"
