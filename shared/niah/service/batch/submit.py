"""A batch run's round submitted: its missing cells as JSONL lines, one job per file.

The lines are the online call's requests (``cell_batch_line``), split into files of at
most ``batch_max_lines`` lines and ``batch_max_bytes`` bytes under ``batches/RUN_ID/``,
each with its manifest. Once a round: a lease on the round guards it, and a holder that
died after creating a job finds it again by its display name.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from niah.core.interfaces import (
    BATCH_ENDED_WITHOUT_OUTPUT,
    CLAIM_HELD,
    BatchClient,
    BlobStore,
    Publisher,
    ResultStore,
    gs_uri,
)
from niah.core.prompts.token_fit import TokenCountRatio
from niah.core.runs import RunRecord, stored_run
from niah.errors import CellInFlightError, PromptOverLimitError
from niah.logs import log
from niah.models.providers import get_provider
from niah.models.providers.gemini_request import request_digest
from niah.service.batch.jobs import earlier_output_pending
from niah.service.batch.lines import UnfittedCounts, cell_batch_line
from niah.service.batch.manifest import ManifestLine, manifest_name, run_tasks, write_manifest
from niah.service.cells.deps import ProviderFactory, TokenizerFactory
from niah.service.cells.prompt import run_haystack
from niah.service.cells.records import failed_cell, store_cell
from niah.service.cells.run_view import record_view
from niah.service.cells.token_counts import run_token_ratio
from niah.service.lease import LeaseKeeper
from niah.service.messages import CellTask
from niah.service.runs.completion import request_report_if_complete
from niah.settings import BATCHES_PREFIX, get_settings


def submit_batch(
    run: RunRecord,
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
    if any(job.get("round") == batch_round for job in run.batch_jobs):
        return "duplicate"
    run_id = run.run_id
    settings = get_settings()
    key = f"batch-submit-r{batch_round:03d}"
    claim = store.claim_cell(run_id, key, settings.cell_lease_seconds)
    if claim == CLAIM_HELD:
        raise CellInFlightError(f"round {batch_round} of {run_id} is being submitted")
    try:
        with LeaseKeeper(store, run_id, key, claim, settings.cell_lease_seconds):
            if earlier_output_pending(run, batch_round, store=store, blobs=blobs,
                                       publisher=publisher, batches=batches,
                                       provider_for=provider_for):  # fmt: skip
                return "ingesting an earlier round's output first"
            # As that step left them (it may have marked earlier jobs ended).
            jobs = (stored_run(store, run_id, counts=False) or run).batch_job_entries()
            tasks = run_tasks(run, store.cell_ids(run_id))
            if not tasks:
                request_report_if_complete(run_id, store=store, publisher=publisher)
                return "nothing to submit"
            lines = _lines(run, tasks, store=store, blobs=blobs,
                           publisher=publisher, tokenizer_for=tokenizer_for,
                           provider_for=provider_for)  # fmt: skip
            submitted = _submit_parts(
                run, batch_round, lines, blobs=blobs, batches=batches,
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
    run: RunRecord,
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
    run_id, spec = run.run_id, run.spec
    provider = provider_for(spec.provider(), spec.model_name)
    tokenizer = tokenizer_for(provider.tokenizer_name)
    files = list(run.haystack_files) if run.haystack_files is not None else None

    def ratio() -> TokenCountRatio:
        return run_token_ratio(
            run_id, spec, dict(run.token_count or {}) or None, stamp=run.stamp or None,
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
    view = record_view(run)
    for task, why in refused:
        store_cell(task, failed_cell(task, spec, why), {}, store=store, blobs=blobs,
                   publisher=publisher, run=view)  # fmt: skip
    return lines


def _submit_parts(
    run: RunRecord,
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
    run_id = run.run_id
    base = f"{BATCHES_PREFIX}{run_id}/r{batch_round:03d}"
    # The output folder names the run's creation too: a run made again under its ID
    # (deleted, then asked again) must not find the first one's predictions there.
    created = f"-{run.stamp[:8]}" if run.stamp else ""
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
