"""Answering a cell this delivery holds the lease of: prompt, model call, score, record.

The call is noted in the run's ledger before it is made (a worker killed mid-call
still leaves it in the spend) and closed in the write that stores the cell. Retryable
failures raise until the cell has failed too often; permanent ones are stored on it.
"""

from __future__ import annotations

import time
from typing import Any

from niah.core.interfaces import BlobStore, ResultStore, gs_uri
from niah.core.prompts.token_fit import cell_token_fields
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import (
    CellInFlightError,
    CloudUnavailableError,
    NiahError,
    PermanentCellError,
    PermanentRunError,
    RetryableError,
    StoreUnavailableError,
)
from niah.logs import log
from niah.service.cells.deps import WorkerDeps
from niah.service.cells.prepared import PreparedCell, prepare_cell
from niah.service.cells.records import (
    Call,
    Outcome,
    failed_cell,
    failure_fields,
    harness_timestamp,
    keep_answer,
    store_cell,
)
from niah.service.cells.run_view import RunView
from niah.service.cells.scoring import scored_answer
from niah.service.lease import ClaimKeeper
from niah.service.messages import CellTask
from niah.settings import CONTEXTS_PREFIX, get_settings
from niah.tasks import Sample


def answer_claimed(
    task: CellTask,
    run: RunView,
    claim: int,
    deps: WorkerDeps,
    *,
    holder: ClaimKeeper | None = None,
    prepared: PreparedCell | None = None,
) -> Outcome:
    """Build, ask, score and store a cell this delivery holds the lease of.

    ``holder``: the keeper of that lease; the cell is stored only while it holds
    (``_stop_unless_held``). ``prepared``: its call readied while it was claimed
    (``niah.service.cells.prepared``); readied here otherwise.
    """
    cell, spec = task.cell, run.spec
    prepared = prepared if prepared is not None else prepare_cell(task, run, deps)
    sample = prepared.sample
    if sample is None:  # a published file replaced or gone: nothing to ask
        assert prepared.sample_error is not None
        return store_cell(
            task,
            failed_cell(task, spec, prepared.sample_error),
            {},
            run=run,
            store=deps.store,
            blobs=deps.blobs,
            publisher=deps.publisher,
        )
    totals: dict[str, float] = {}
    call: Call | None = None
    try:
        fields, totals, call = _answer_cell(task, run, sample, prepared, claim, deps, holder)
    except (CloudUnavailableError, CellInFlightError):
        raise  # the service's own store or bus, or another holder: not a failure of the cell
    except RetryableError as error:
        fields = _retry_or_give_up(task, error, store=deps.store)
    except (PermanentCellError, PermanentRunError) as error:
        fields = failure_fields(error.kind, str(error))
    doc = cell_record(task, spec, cell, sample) | fields
    doc |= {
        "test_duration_seconds": round(time.monotonic() - prepared.started, 4),
        "test_timestamp_utc": harness_timestamp(),
    }
    if holder is not None:
        _stop_unless_held(task, doc, totals, call, holder, deps)
    return store_cell(
        task,
        doc,
        totals,
        call=call,
        run=run,
        store=deps.store,
        blobs=deps.blobs,
        publisher=deps.publisher,
    )


def _stop_unless_held(
    task: CellTask,
    doc: dict[str, Any],
    totals: dict[str, float],
    call: Call | None,
    holder: ClaimKeeper,
    deps: WorkerDeps,
) -> None:
    """Raise rather than store unless the lease is sure to be this holder's.

    Past its ``ClaimDeadline`` (no renewal confirmed for most of a lease: the store
    stalled, or this process paused) the holder renews once more. Confirmed, the cell
    is still its: store. Lost, another delivery took the cell over and answers it:
    this answer is not stored, its call is closed with what it cost (CellInFlightError).
    Unanswered, the answer is kept in the bucket, where the next holder finds it and
    stores it without a call (StoreUnavailableError: redelivered).
    """
    if holder.confirm(timeout=get_settings().cell_lease_seconds / 3):
        return
    if holder.lost:
        if call is not None:
            deps.store.close_call(task.run_id, call[0], call[1] | {"superseded": True})
        log("lease lost before the store", run_id=task.run_id, cell_id=task.cell_id)
        raise CellInFlightError(f"{task.cell_id} was taken over by another delivery")
    kept = ""
    if call is not None:  # paid for: never asked again
        name = keep_answer(task, doc, totals, call, deps.blobs)
        kept = f"; its answer is kept at {gs_uri(deps.blobs.bucket, name)}"
    raise StoreUnavailableError(f"the lease of {task.cell_id} was not confirmed in time{kept}")


def cell_record(task: CellTask, spec: RunRequest, cell: Cell, sample: Sample) -> dict[str, Any]:
    """The fields every stored cell has, in the harness's result names where they exist."""
    return {
        "run_id": task.run_id,
        "model": spec.model_name,
        "task": spec.task,
        "context_length": cell.context_length,
        "depth_percent": cell.depth_percent,
        "sample": cell.sample,
        "version": spec.results_version,
        "needle": sample.needle,
        "question": sample.question,
        "expected_answer": ", ".join(sample.expected),
        "expected_answers": list(sample.expected),
        "attempts": task.delivery_attempt,
        # Its values of the run's extra axes (niah.core.request.axes), where it has any.
        **({"variant": cell.variant} if cell.variant else {}),
    }


def _retry_or_give_up(
    task: CellTask, error: RetryableError, *, store: ResultStore
) -> dict[str, Any]:
    """Count the failure; raise it again (redelivery) until the cell has failed too often.

    Counted across deliveries, so a run ends even where dead-lettering is slow.
    """
    store.note_attempt(task.run_id, task.cell_id, str(error))
    failures = int((store.last_attempt(task.run_id, task.cell_id) or {}).get("failures", 1))
    if failures < get_settings().max_cell_failures:
        log(
            "cell will be retried",
            severity="WARNING",
            run_id=task.run_id,
            cell_id=task.cell_id,
            failures=failures,
            error=str(error),
        )
        raise error
    message = f"gave up after {failures} failed attempts; last error: {error}"
    return failure_fields("retries_exhausted", message)


def _answer_cell(
    task: CellTask,
    run: RunView,
    sample: Sample,
    prepared: PreparedCell,
    claim: int,
    deps: WorkerDeps,
    holder: ClaimKeeper | None,
) -> tuple[dict[str, Any], dict[str, float], Call]:
    """Note the readied call, ask the model, score.

    Returns the cell's fields, the run's increments and the call's record (closed with
    the cell, in one write).
    """
    ready = prepared.ready_call()  # an error met readying it is raised here
    spec, store, provider = run.spec, deps.store, ready.provider
    built, budget = ready.prepared.built, ready.prepared.budget
    fields = dict(ready.fields)
    call_id = f"{task.cell_id}.C{claim:03d}"
    if spec.save_contexts:
        fields["context_uri"] = _save_prompt(task, built.prompt, deps.blobs)
    if ready.refused is not None:
        raise ready.refused
    # Noted before the call: a worker killed mid-call still leaves the call in the spend.
    # The note checks the lease is still this claim's: after a store stall longer than
    # the lease, another delivery may hold the cell, and then only it calls.
    noting = time.monotonic()
    noted = store.open_call(
        task.run_id,
        call_id,
        {
            "cell_id": task.cell_id,
            "model": spec.model_name,
            "status": "started",
            "planned_prompt_tokens": built.planned_prompt_tokens,
        },
        cell_id=task.cell_id,
        claim=claim,
        lease_seconds=get_settings().cell_lease_seconds,
    )
    if not noted:
        log("lease lost before the call", run_id=task.run_id, cell_id=task.cell_id)
        raise CellInFlightError(f"{task.cell_id} lost its lease to another delivery")
    if holder is not None:  # the note checked the claim and extended its lease
        holder.confirmed(noting)
    fields["max_output_tokens"] = budget.max_output_tokens
    try:
        answer = provider.generate(
            built.prompt,
            max_output_tokens=budget.max_output_tokens,
            thinking_budget=budget.thinking_budget,
            thinking_level=budget.thinking_level,
            turns=ready.prepared.turns,
            tier=spec.tier,
        )
    except NiahError as error:
        # An error reply has no usage metadata: nothing was generated to bill.
        store.close_call(task.run_id, call_id, {"status": "error", "error": str(error)[:500]})
        raise
    log(
        "model call",
        run_id=task.run_id,
        cell_id=task.cell_id,
        latency_seconds=round(answer.latency_seconds, 3),
        prompt_tokens=answer.prompt_tokens,
    )
    answered, totals, call_fields = scored_answer(
        task, spec, sample, answer, budget=budget, blobs=deps.blobs, provider_for=deps.provider_for
    )
    if sample.prompt is None:  # built here: its local count is exact
        answered |= cell_token_fields(answer.prompt_tokens, built.planned_prompt_tokens)
    return fields | answered, totals, (call_id, call_fields)


def _save_prompt(task: CellTask, prompt: str, blobs: BlobStore) -> str:
    """Store the cell's prompt (``save_contexts``); where it went."""
    name = f"{CONTEXTS_PREFIX}{task.run_id}/{task.cell_id}.txt"
    blobs.write(name, prompt.encode(), content_type="text/plain", if_absent=True)
    return gs_uri(blobs.bucket, name)
