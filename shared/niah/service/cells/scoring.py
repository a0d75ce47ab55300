"""An answer scored and priced, as its cell stores it: the task's scorer or the judge.

Shared by the online path and a batch run's ingest: an answer is scored the same way
wherever it came from. A blocked or cut-off answer is unscored, never a miss; a judge
that fails leaves its score empty, never the paid answer lost.
"""

from __future__ import annotations

from typing import Any

from niah.catalog.models import provider_for_model
from niah.catalog.tiers import Tier, served_tier
from niah.core.interfaces import BlobStore, ModelAnswer, gs_uri
from niah.core.money.pricing import Cost, answer_cost
from niah.core.prompts.answer_budget import CallBudget
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.scoring import (
    MISSED,
    RETRIEVED,
    judge_answer,
    ran_past_its_room,
    truncated_reason,
    unscored_reason,
)
from niah.core.results.served_models import answer_identity
from niah.errors import NiahError
from niah.logs import log
from niah.service.cells.deps import ProviderFactory
from niah.service.messages import CellTask
from niah.settings import CONTEXTS_PREFIX
from niah.tasks import Sample, get_task, score_answer

# Of an answer, what a cell document keeps (Firestore's limit is 1 MiB per document).
MAX_STORED_ANSWER_BYTES = 100_000


def scored_answer(
    task: CellTask,
    spec: RunRequest,
    sample: Sample,
    answer: ModelAnswer,
    *,
    budget: CallBudget,
    blobs: BlobStore,
    provider_for: ProviderFactory,
    batch: bool = False,
) -> tuple[dict[str, Any], dict[str, float], dict[str, Any]]:
    """An answer (online or a batch line's) scored and priced, as the cell stores it.

    The cell's fields, the run's increments and the call's record. ``batch``: the
    model's call priced at batch rates (a judge is called online, at its own).
    """
    fields = _answer_fields(answer, task.cell) | _keep_whole_answer(task, answer.text, blobs)
    fields["max_output_tokens"] = budget.max_output_tokens
    score_fields, judged = _score(spec, sample, answer, provider_for, budget)
    fields |= score_fields
    tier = tier_fields(spec, answer) if not batch and spec.provider() == "gemini" else {}
    served: Tier = tier["service_tier"]["billed_as"] if tier else "standard"
    cost = answer_cost(spec.model_name, answer, batch=batch, tier=served)
    fields |= tier
    totals = _usage_totals("", answer)
    call_fields: dict[str, Any] = {"status": "answered", "usage": answer.usage()} | tier
    if batch:
        call_fields["execution"] = "batch"
    if judged is not None and spec.evaluator_model_name:
        fields["judge_usage"] = judged.usage()
        call_fields["judge_usage"] = judged.usage()
        totals |= _usage_totals("judge_", judged)
        cost += answer_cost(spec.evaluator_model_name, judged)
    call_fields |= _cost_fields(cost)
    return fields | _cost_fields(cost), totals | _cost_totals(cost), call_fields


def tier_fields(spec: RunRequest, answer: ModelAnswer) -> dict[str, Any]:
    """The tier the call asked for and the one it was served on, as the cell records them.

    Served: the reply's ``usageMetadata.trafficType`` (``niah.catalog.tiers``). Where the
    reply names none (or one that is no PayGo tier, e.g. PROVISIONED_THROUGHPUT), the
    call is priced at the tier asked and the record says the served tier is unknown.
    """
    asked = spec.call_tier()
    served = served_tier(answer.traffic_type)
    return {
        "service_tier": {
            "asked": asked,
            "served": served,
            "traffic_type": answer.traffic_type,
            "billed_as": served or asked,
            "source": "usageMetadata.trafficType"
            if served
            else "asked (the reply names no PayGo trafficType)",
        }
    }


def _keep_whole_answer(task: CellTask, text: str, blobs: BlobStore) -> dict[str, Any]:
    """A paid-for answer too large for its Firestore document (1 MiB) stays whole.

    The cell keeps the first ``MAX_STORED_ANSWER_BYTES`` and a flag; the full text goes
    to the bucket, so storing the cell cannot fail on its size and call the model again.
    """
    data = text.encode()
    if len(data) <= MAX_STORED_ANSWER_BYTES:
        return {}
    name = f"{CONTEXTS_PREFIX}{task.run_id}/{task.cell_id}.answer.txt"
    blobs.write(name, data, content_type="text/plain")
    kept = data[:MAX_STORED_ANSWER_BYTES].decode("utf-8", errors="ignore")
    return {
        "model_response": kept,
        "model_response_truncated": True,
        "model_response_uri": gs_uri(blobs.bucket, name),
    }


def _usage_totals(prefix: str, answer: ModelAnswer) -> dict[str, float]:
    """One call's token counts, as increments of the run's totals."""
    return {
        f"{prefix}prompt_tokens": float(answer.prompt_tokens or 0),
        f"{prefix}cached_tokens": float(answer.cached_tokens or 0),
        f"{prefix}output_tokens": float(answer.output_tokens or 0),
        f"{prefix}thinking_tokens": float(answer.thinking_tokens or 0),
    }


def _cost_fields(cost: Cost) -> dict[str, Any]:
    """The cell's cost: None where any of its calls had no known price (never $0)."""
    return {
        "cost_usd": round(cost.usd, 8) if cost.priced else None,
        "cost_without_cache_usd": round(cost.usd_without_cache, 8) if cost.priced else None,
    }


def _cost_totals(cost: Cost) -> dict[str, float]:
    """The run's cost increments: priced cells add dollars, unpriced ones are counted."""
    if not cost.priced:
        return {"unpriced_cells": 1.0}
    return {"cost_usd": cost.usd, "cost_without_cache_usd": cost.usd_without_cache}


def _answer_fields(answer: ModelAnswer, cell: Cell) -> dict[str, Any]:
    """The model's answer, the API's usage and the model that answered, as stored."""
    return answer_identity(answer) | {
        "status": "answered",
        "model_response": answer.text,
        "finish_reason": answer.finish_reason,
        "model_seconds": round(answer.latency_seconds, 4),
        "usage": answer.usage(),
        "prompt_token_deviation": (
            answer.prompt_tokens - cell.context_length if answer.prompt_tokens else None
        ),
    }


def _score(
    spec: RunRequest,
    sample: Sample,
    answer: ModelAnswer,
    provider_for: ProviderFactory,
    budget: CallBudget,
) -> tuple[dict[str, Any], ModelAnswer | None]:
    """The sample's outcome and scores, and the judge's call where there was one.

    ``task_score`` is in [0, 1] for every task; ``score`` is what the heatmap shows: the
    harness's 1-10 scale for ``single``, the task's fraction for the others (the judge
    grades the user's own multi_needle needles on 1-10, shown as a fraction). A blocked
    answer is unscored; one cut off by the budget is truncated: never a miss, unless it
    ran on past the room its answer takes (scored as it stands, ``ran_on`` says why).
    """
    reason = truncated_reason(answer, budget)
    if reason is not None and not ran_past_its_room(answer, budget):
        return {"outcome": "truncated", "unscored_reason": reason, "score": None}, None
    ran_on = {"ran_on": reason} if reason else {}
    reason = unscored_reason(answer.text, answer.finish_reason)
    if reason is not None:
        return {"outcome": "unscored", "unscored_reason": reason, "score": None}, None
    task = get_task(spec.task)
    if spec.scorer_name() == "task":
        verdict = score_answer(task, sample, answer.text)
        return ran_on | {
            "scorer": "task",
            "outcome": verdict.outcome,
            "task_score": round(verdict.score, 6),
            "score": round(verdict.score, 6),
            "task_details": verdict.details,
        }, None
    scorer = spec.scorer_name()
    fields: dict[str, Any] = {"scorer": scorer, **ran_on}
    if sample.expected:
        verdict = score_answer(task, sample, answer.text)
        fields["exact_score"] = RETRIEVED if verdict.outcome == "correct" else MISSED
        if sample.distractors:  # which distractor values the answer gave
            fields["task_details"] = verdict.details
    judged: ModelAnswer | None = None
    if scorer in ("judge", "both") and spec.evaluator_model_name:
        judge_fields, judged = _judge(spec.evaluator_model_name, sample, answer.text, provider_for)
        fields |= judge_fields
    if scorer == "judge":
        fields["score"] = fields.get("judge_score")
    elif scorer == "both":
        fields["score"] = fields.get("judge_score") or fields.get("exact_score")
    else:
        fields["score"] = fields.get("exact_score")
    fields |= _outcome_on_the_harness_scale(fields["score"], fields)
    if spec.task != "single" and fields.get("task_score") is not None:
        # A judged multi_needle run keeps its task's scale: the heatmap shows fractions.
        fields["score"] = round(fields["task_score"], 6)
    return fields, judged


def _outcome_on_the_harness_scale(score: float | None, fields: dict[str, Any]) -> dict[str, Any]:
    """A 1-10 score as an outcome and a [0, 1] task score (10 is 1, 1 is 0).

    A judge that gave no score leaves the sample unscored.
    """
    if score is None:
        return {"outcome": "unscored", "unscored_reason": fields.get("judge_error", "no score")}
    task_score = (float(score) - 1) / 9
    return {"outcome": "correct" if task_score >= 0.5 else "wrong", "task_score": task_score}


def _judge(
    evaluator_name: str, sample: Sample, answer: str, provider_for: ProviderFactory
) -> tuple[dict[str, Any], ModelAnswer | None]:
    """The judge's score of ``answer``; a failed judge leaves only its score empty.

    The answer is paid for: a failed judge must neither redeliver the cell (and call
    the model again) nor discard the answer.
    """
    fields: dict[str, Any] = {"evaluator_model": evaluator_name}
    try:
        evaluator = provider_for(provider_for_model(evaluator_name), evaluator_name)
        verdict = judge_answer(
            evaluator, question=sample.question, reference=sample.needle, answer=answer
        )
    except NiahError as error:
        log("judge failed", severity="WARNING", error=str(error))
        return fields | {"judge_score": None, "judge_error": str(error)}, None
    fields |= {"judge_score": verdict.score, "judge_reasoning": verdict.reasoning}
    if verdict.score is None:  # it answered, but with no score in it: say so
        fields["judge_error"] = f"the judge's reply held no score: {verdict.reasoning[:200]!r}"
    return fields, verdict.answer
