"""The worker's job: one cell from message to stored result, idempotently."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from niah.blobs import BlobStore, gs_uri
from niah.bus import Publisher
from niah.completion import request_report_if_complete
from niah.context import ContextTooShortError, build_prompt
from niah.errors import (
    DeadLetteredError,
    NiahError,
    PermanentCellError,
    PermanentRunError,
    RetryableError,
)
from niah.haystack import load_haystack
from niah.haystack_source import HaystackError, haystack_prefix
from niah.logs import log
from niah.needles import Needle, needle_for
from niah.pricing import cost_of
from niah.providers import DEFAULT_MAX_OUTPUT_TOKENS, Provider, get_provider
from niah.scorers import exact_score, judge_answer
from niah.settings import get_settings
from niah.spec import Cell, ProviderName, RunRequest, provider_for_model
from niah.store import ResultStore
from niah.tokenizer import Tokenizer, get_tokenizer

Outcome = Literal["answered", "failed", "duplicate", "orphan"]
ProviderFactory = Callable[[ProviderName, str], Provider]
TokenizerFactory = Callable[[str], Tokenizer]


@dataclass(frozen=True)
class CellTask:
    """A cell message: which run, which grid point, which delivery."""

    run_id: str
    cell_id: str
    context_length: int
    depth_percent: float
    delivery_attempt: int = 1

    @classmethod
    def from_message(cls, data: dict[str, Any], *, delivery_attempt: int = 1) -> CellTask:
        """Parse a message body published by the dispatcher."""
        return cls(
            run_id=str(data["run_id"]),
            cell_id=str(data["cell_id"]),
            context_length=int(data["context_length"]),
            depth_percent=float(data["depth_percent"]),
            delivery_attempt=delivery_attempt,
        )


_specs: dict[str, RunRequest] = {}
_specs_lock = threading.Lock()


def _run_spec(store: ResultStore, run_id: str) -> RunRequest | None:
    """The run's validated spec; immutable, so cached for the instance's lifetime."""
    with _specs_lock:
        if run_id in _specs:
            return _specs[run_id]
    run = store.get_run(run_id)
    if run is None:
        return None
    spec = RunRequest.model_validate(run["spec"])  # stored by the dispatcher, so valid
    with _specs_lock:
        _specs[run_id] = spec
    return spec


def process_cell(
    task: CellTask,
    *,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    provider_for: ProviderFactory = get_provider,
    tokenizer_for: TokenizerFactory = get_tokenizer,
) -> Outcome:
    """Build, ask, score and store one cell; ask for the report after the last one.

    Raises ``RetryableError`` for transient failures (the message is redelivered);
    permanent failures are stored on the cell as an error.
    """
    spec = _run_spec(store, task.run_id)
    if spec is None:
        log("cell for an unknown run dropped", severity="WARNING", run_id=task.run_id)
        return "orphan"
    if store.cell_exists(task.run_id, task.cell_id):
        log("duplicate delivery suppressed", run_id=task.run_id, cell_id=task.cell_id)
        request_report_if_complete(task.run_id, store=store, publisher=publisher)
        return "duplicate"

    cell = Cell(task.context_length, task.depth_percent)
    needle = needle_for(spec, cell)
    doc: dict[str, Any] = {
        "run_id": task.run_id,
        "model": spec.model_name,
        "context_length": cell.context_length,
        "depth_percent": cell.depth_percent,
        "version": spec.results_version,
        "needle": needle.text,
        "question": needle.question,
        "expected_answer": needle.expected_answer,
        "attempts": task.delivery_attempt,
    }
    totals: dict[str, float] = {}
    started = time.monotonic()
    try:
        fields, totals = _answer_cell(
            task,
            spec,
            cell,
            needle,
            blobs=blobs,
            provider_for=provider_for,
            tokenizer_for=tokenizer_for,
        )
        doc |= fields
        failed = False
    except RetryableError as error:
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
            raise
        message = f"gave up after {failures} failed attempts; last error: {error}"
        doc |= _failure("retries_exhausted", message)
        failed = True
    except (PermanentCellError, PermanentRunError, ContextTooShortError, HaystackError) as error:
        doc |= _failure(getattr(error, "kind", "cell"), str(error))
        failed = True
    doc |= {
        "test_duration_seconds": round(time.monotonic() - started, 4),
        "test_timestamp_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S%z"),
    }
    if not store.record_cell(task.run_id, task.cell_id, doc, failed=failed, totals=totals):
        log("concurrent duplicate suppressed", run_id=task.run_id, cell_id=task.cell_id)
        return "duplicate"
    if failed:
        log(
            "cell failed",
            severity="WARNING",
            run_id=task.run_id,
            cell_id=task.cell_id,
            error=doc["error"],
        )
    request_report_if_complete(task.run_id, store=store, publisher=publisher)
    return "failed" if failed else "answered"


def _failure(kind: str, message: str) -> dict[str, Any]:
    """A failed cell's fields (shown grey)."""
    return {"status": "failed", "score": None, "error": {"kind": kind, "message": message}}


def _answer_cell(
    task: CellTask,
    spec: RunRequest,
    cell: Cell,
    needle: Needle,
    *,
    blobs: BlobStore,
    provider_for: ProviderFactory,
    tokenizer_for: TokenizerFactory,
) -> tuple[dict[str, Any], dict[str, float]]:
    """Build the prompt, ask the model, score: the cell's fields and the run's increments."""
    started = time.monotonic()
    try:
        provider = provider_for(spec.provider(), spec.model_name)
        tokenizer = tokenizer_for(provider.tokenizer_name)
    except ValueError as error:
        # A deployment that cannot serve this model (bad settings): no retry helps.
        raise PermanentRunError(f"cannot serve {spec.model_name}: {error}") from error
    haystack = load_haystack(blobs, haystack_prefix(spec.haystack_dir, blobs.bucket), tokenizer)
    built = build_prompt(
        haystack,
        tokenizer,
        template=spec.prompt_template or provider.default_template,
        needle=needle,
        context_length=cell.context_length,
        depth_percent=cell.depth_percent,
        buffer_tokens=spec.final_context_length_buffer,
    )
    fields: dict[str, Any] = {
        "planned_prompt_tokens": built.planned_prompt_tokens,
        "insertion_depth_percent": round(built.actual_depth_percent, 3),
        "build_seconds": round(time.monotonic() - started, 4),
    }
    if spec.save_contexts:
        name = f"{get_settings().contexts_prefix}{task.run_id}/{task.cell_id}.txt"
        blobs.write(name, built.prompt.encode(), content_type="text/plain", if_absent=True)
        fields["context_uri"] = gs_uri(blobs.bucket, name)
    if spec.count_tokens_check:
        fields["counted_prompt_tokens"] = provider.count_tokens(built.prompt)
    answer = provider.generate(
        built.prompt,
        max_output_tokens=spec.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS[spec.provider()],
        thinking_budget=spec.thinking_budget,
    )
    log(
        "model call",
        run_id=task.run_id,
        cell_id=task.cell_id,
        latency_seconds=round(answer.latency_seconds, 3),
        prompt_tokens=answer.prompt_tokens,
    )
    prompt_tokens, output_tokens = answer.prompt_tokens or 0, answer.output_tokens or 0
    cost = cost_of(spec.model_name, prompt_tokens, output_tokens)
    fields |= {
        "status": "answered",
        "model_response": answer.text,
        "finish_reason": answer.finish_reason,
        "model_seconds": round(answer.latency_seconds, 4),
        "usage": {
            "prompt_token_count": answer.prompt_tokens,
            "candidates_token_count": answer.output_tokens,
            "total_token_count": prompt_tokens + output_tokens,
        },
        "prompt_token_deviation": (
            answer.prompt_tokens - cell.context_length if answer.prompt_tokens else None
        ),
    }
    totals = {"prompt_tokens": float(prompt_tokens), "output_tokens": float(output_tokens)}
    fields |= _score(spec, needle, answer.text, provider_for, totals)
    cost_usd = cost.usd + totals.pop("judge_cost_usd", 0.0)
    fields["cost_usd"] = round(cost_usd, 8) if cost.priced else None
    totals["cost_usd"] = cost_usd
    return fields, totals


def _score(
    spec: RunRequest,
    needle: Needle,
    answer: str,
    provider_for: ProviderFactory,
    totals: dict[str, float],
) -> dict[str, Any]:
    """Exact and (when asked) judge scores; ``score`` is the one the run reports."""
    scorer = spec.scorer_name()
    fields: dict[str, Any] = {"scorer": scorer}
    if needle.expected_answer:
        fields["exact_score"] = exact_score(answer, needle.expected_answer)
    if scorer in ("judge", "both") and spec.evaluator_model_name:
        try:
            evaluator = provider_for(
                provider_for_model(spec.evaluator_model_name), spec.evaluator_model_name
            )
            verdict = judge_answer(
                evaluator, question=needle.question, reference=needle.text, answer=answer
            )
        except (NiahError, ValueError) as error:
            # The answer is paid for: a failed judge must neither redeliver the cell (and
            # call the model again) nor discard the answer. Only the judge's score is
            # left empty, shown grey when the run reports the judge.
            log("judge failed", severity="WARNING", error=str(error))
            fields |= {
                "judge_score": None,
                "judge_error": str(error),
                "evaluator_model": spec.evaluator_model_name,
                "score": fields.get("exact_score") if scorer == "both" else None,
            }
            return fields
        usage = verdict.answer
        fields |= {
            "judge_score": verdict.score,
            "judge_reasoning": verdict.reasoning,
            "evaluator_model": spec.evaluator_model_name,
        }
        totals["judge_prompt_tokens"] = float(usage.prompt_tokens or 0)
        totals["judge_output_tokens"] = float(usage.output_tokens or 0)
        totals["judge_cost_usd"] = cost_of(
            spec.evaluator_model_name, usage.prompt_tokens or 0, usage.output_tokens or 0
        ).usd
    fields["score"] = fields.get("judge_score") if scorer == "judge" else fields.get("exact_score")
    if scorer == "both":
        # Both stored; the heatmap shows the judge's where it gave one.
        fields["score"] = fields.get("judge_score") or fields.get("exact_score")
    return fields


def record_dead_letter(task: CellTask, *, store: ResultStore, publisher: Publisher) -> Outcome:
    """Mark a cell whose message was dead-lettered as failed, so its run still finishes.

    Does nothing if the cell was stored meanwhile (a late success wins).
    """
    if _run_spec(store, task.run_id) is None:
        return "orphan"
    attempt = store.last_attempt(task.run_id, task.cell_id) or {}
    reason = attempt.get("last_error", "no error was recorded (the worker may have crashed)")
    error = DeadLetteredError(
        f"gave up after {attempt.get('failures', task.delivery_attempt)} failed deliveries; "
        f"last error: {reason}"
    )
    doc = {
        "run_id": task.run_id,
        "context_length": task.context_length,
        "depth_percent": task.depth_percent,
        "test_timestamp_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S%z"),
        **_failure(error.kind, str(error)),
    }
    if not store.record_cell(task.run_id, task.cell_id, doc, failed=True):
        log("dead letter for a stored cell ignored", run_id=task.run_id, cell_id=task.cell_id)
        return "duplicate"
    log(
        "dead-lettered cell recorded",
        severity="WARNING",
        run_id=task.run_id,
        cell_id=task.cell_id,
        error=str(error),
    )
    request_report_if_complete(task.run_id, store=store, publisher=publisher)
    return "failed"
