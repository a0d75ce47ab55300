"""Batch runs: a grid as Vertex AI batch jobs, their predictions stored as cells.

The worker's entry for a batch message on the cells topic (``batch_message``): checked
against its run, then handed to the module of its step:

- **submit** (``niah.service.batch.submit``): the run's missing cells become JSONL lines
  (``cell_batch_line``: the online call's request), split into files, one job each; the
  jobs' names go on the run (``batch_jobs``), once a round.
- **poll** (``niah.service.batch.jobs``): the sweep asks every few minutes
  (``sweep_stalled_runs``); each job is read (``BatchClient.get``). A job that ended
  with output (succeeded, or cancelled, expired or failed after writing some rows, which
  Google bills) is ingested in pieces (``niah.service.batch.ingest``: lines matched to
  cells by their prompt's digest, failed lines classified before any goes online). A
  job that ended without output stores its cells failed with the job's reason. A
  cancelled run's jobs are cancelled through the API, and what they wrote before the
  cancel is kept.
- **ingest**: one byte range of one output file (``batch_ingest.ingest_piece``).
- **settle**, **fail**: a job once read, and its unanswered cells stored failed
  (``niah.service.batch.settle``).

Polling rather than a Cloud Storage notification on the output: a job that fails or
expires writes no output, so its state must be read anyway; one poll finds both.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from niah.core.interfaces import BatchClient, BlobStore, Publisher, ResultStore
from niah.core.request.spec import RUN_ID_PATTERN
from niah.core.runs import stored_run
from niah.errors import BatchJobError
from niah.logs import log
from niah.models.providers import get_provider
from niah.models.tokenizer import get_tokenizer
from niah.service.batch.ingest import ingest_piece
from niah.service.batch.jobs import cancel_jobs, poll_batch
from niah.service.batch.settle import settle_job, store_failed
from niah.service.batch.submit import submit_batch
from niah.service.cells.deps import ProviderFactory, TokenizerFactory
from niah.service.messages import (
    BATCH_FAIL,
    BATCH_INGEST,
    BATCH_SETTLE,
    BATCH_SUBMIT,
    BatchStep,
    batch_step,
    fail_request,
    settle_job_name,
)

BatchFactory = Callable[[str], BatchClient]


def gemini_batches(model_name: str) -> BatchClient:
    """The deployment's Vertex AI batch jobs for ``model_name`` (its provider's client)."""
    provider: Any = get_provider("gemini", model_name)
    batches: BatchClient = provider.batches()
    return batches


def handle_batch_message(
    message: BatchStep | dict[str, Any],
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
    step = message if isinstance(message, BatchStep) else batch_step(message)
    run_id, body = step.run_id, step.body
    if not RUN_ID_PATTERN.fullmatch(run_id):
        log("batch message of no possible run rejected", severity="ERROR", run_id=run_id[:80])
        return "rejected"
    run = stored_run(store, run_id, counts=False)
    stamp = step.run_stamp
    if run is None or (stamp is not None and run.stamp not in ("", stamp)):
        return "orphan"
    action = step.action
    # Before the cancelled check: rows a cancelled job wrote are paid for, and kept.
    if action == BATCH_INGEST:
        return ingest_piece(body, run, store=store, blobs=blobs, publisher=publisher,
                            provider_for=provider_for)  # fmt: skip
    if action == BATCH_SETTLE:
        return settle_job(run_id, settle_job_name(body), store=store, blobs=blobs,
                          publisher=publisher, provider_for=provider_for)  # fmt: skip
    if action == BATCH_FAIL:
        if run.cancelled:
            return "cancelled"  # its cells wait for a resume
        cells, reason = fail_request(body)
        store_failed(run, cells, BatchJobError(reason),
                     store=store, blobs=blobs, publisher=publisher)  # fmt: skip
        return "failed cells stored"
    batches = batches_for(run.spec.model_name)
    if run.cancelled:
        return cancel_jobs(run, store=store, blobs=blobs, publisher=publisher,
                           batches=batches, provider_for=provider_for)  # fmt: skip
    if action == BATCH_SUBMIT:
        if step.batch_round != run.batch_round:
            log("batch submit of another round rejected", severity="WARNING", run_id=run_id,
                asked=step.batch_round, current=run.batch_round)  # fmt: skip
            return "rejected"
        return submit_batch(
            run,
            step.batch_round,
            store=store,
            blobs=blobs,
            publisher=publisher,
            batches=batches,
            tokenizer_for=tokenizer_for or partial(get_tokenizer, blobs=blobs),
            provider_for=provider_for,
        )
    return poll_batch(
        run, store=store, blobs=blobs, publisher=publisher, batches=batches,
        provider_for=provider_for,
    )  # fmt: skip
