"""A cell's call made ready before its claim is known: nothing in it is paid or decided.

Readying a call (the sample, the prompt built and fitted with the model's free
countTokens, the count checked against the model's limit) depends on nothing the claim
decides, and took a cell about as long as two of Firestore's round trips. The worker
starts it on a thread of its own (``in_background``) while it claims the cell and reads
that the run is live, and drops it where the cell is not answered. What it found,
errors included, is kept and raised where the cell's answer meets it, as if built there.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from niah.cloud import metering
from niah.core.interfaces import Provider
from niah.errors import HaystackError, NiahError
from niah.service.cells.deps import WorkerDeps
from niah.service.cells.prompt import (
    PreparedCall,
    cell_sample,
    count_before_call,
    fits_by_count,
    prepare_call,
    reads_haystack,
    run_haystack,
)
from niah.service.cells.run_view import RunView
from niah.service.cells.token_counts import run_token_ratio
from niah.service.messages import CellTask
from niah.tasks import Sample

R = TypeVar("R")

# Threads for work a delivery starts beside its own (a call readied, the run's liveness
# read): two a delivery, for the worker's concurrent requests (THREADS, 4 to 8), with room.
_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="niah-cell")


def in_background(function: Callable[..., R], *args: Any) -> Future[R]:
    """``function(*args)`` on a pool thread, in the caller's context (metered there)."""
    context = contextvars.copy_context()
    return _POOL.submit(context.run, function, *args)


@dataclass(frozen=True)
class ReadyCall:
    """A call ready to be noted and made: its provider, prompt, budget and the cell's fields."""

    provider: Provider
    prepared: PreparedCall
    fields: dict[str, Any]
    # Why the built prompt may not be sent (its count over the model's input limit):
    # raised once its context is saved (``save_contexts``), as before the call was readied.
    refused: NiahError | None = None


@dataclass(frozen=True)
class PreparedCell:
    """What readying a cell's call found: its sample and call, or the error met on the way."""

    started: float  # when readying began: the cell's test_duration_seconds counts from it
    sample: Sample | None
    sample_error: HaystackError | None = None
    call: ReadyCall | None = None
    call_error: NiahError | None = None

    def ready_call(self) -> ReadyCall:
        """The call, or the error readying it met (raised here, where the answer meets it)."""
        if self.call_error is not None:
            raise self.call_error
        assert self.call is not None  # a sample without an error always has its call
        return self.call


def prepare_cell(task: CellTask, run: RunView, deps: WorkerDeps) -> PreparedCell:
    """Ready the cell's call: its sample, the prompt built (and fitted), counted if needed.

    Pays for nothing and decides nothing: a countTokens call is free, and the run's
    token ratio, if this process is the first to need it, is written on the run as the
    same values whoever measures it.
    """
    started = time.monotonic()
    try:
        sample = cell_sample(task, run.spec, task.cell, deps.blobs)
    except HaystackError as error:  # a published file replaced or gone: nothing to ask
        return PreparedCell(started, None, sample_error=error)
    try:
        call = _ready_call(task, run, sample, deps, started)
    except NiahError as error:
        return PreparedCell(started, sample, call_error=error)
    return PreparedCell(started, sample, call=call)


def _ready_call(
    task: CellTask, run: RunView, sample: Sample, deps: WorkerDeps, started: float
) -> ReadyCall:
    """Build the prompt (fitted where the model counts), and the fields it gives the cell."""
    cell, spec = task.cell, run.spec
    provider = deps.provider_for(run.provider_name, spec.model_name)
    tokenizer = deps.tokenizer_for(provider.tokenizer_name)
    ratio = None
    if run.provider_name == "gemini" and reads_haystack(sample):
        ratio = run_token_ratio(
            task.run_id,
            spec,
            run.token_count,
            stamp=task.run_stamp,
            haystack=run_haystack(spec, tokenizer, deps.blobs, run.haystack_files),
            tokenizer=tokenizer,
            provider=provider,
            store=deps.store,
        )
    prepared = prepare_call(
        spec,
        cell,
        sample,
        default_template=provider.default_template,
        tokenizer=tokenizer,
        blobs=deps.blobs,
        haystack_files=run.haystack_files,
        token_ratio=ratio,
        # Timed apart: a fitted prompt's countTokens calls are the cell's wait, not the model call.
        count_tokens=metering.waiting_on(metering.COUNT_TOKENS, provider.count_tokens)
        if fits_by_count(spec)
        else None,
    )
    built, fit = prepared.built, prepared.fit
    fields: dict[str, Any] = {
        "planned_prompt_tokens": built.planned_prompt_tokens,
        "insertion_depth_percent": round(built.actual_depth_percent, 3),
        "build_seconds": round(time.monotonic() - started, 4),
    }
    if sample.distractors:  # the needle's depth, and where each distractor went
        depths = built.depths_of(sample.insertions)
        fields["insertion_depth_percent"] = round(depths[0], 3)
        fields["distractors"] = [
            item | {"depth_percent": round(depth, 3)}
            for item, depth in zip(
                sample.details["distractors"], depths[len(sample.needle_insertions) :], strict=True
            )
        ]
    if ratio is not None:
        # The length the prompt was fitted to, as the model counts (its local count is
        # planned_prompt_tokens, exact).
        fields["fitted_prompt_tokens"] = cell.context_length - spec.final_context_length_buffer
    if fit is not None:  # fitted to the model's countTokens: the count, and how far off
        fields |= fit.fields()
    try:
        counted = count_before_call(
            spec,
            cell,
            built,
            ratio,
            provider,
            prepared.budget,
            fitted_count=fit.model_tokens if fit else None,
        )
    except NiahError as error:  # refused (over the model's limit): its prompt still saved
        return ReadyCall(provider, prepared, fields, refused=error)
    if counted is not None:
        fields["counted_prompt_tokens"] = counted
    return ReadyCall(provider, prepared, fields)
