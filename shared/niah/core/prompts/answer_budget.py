"""How many output tokens a call may spend: the answer's room plus the model's thinking room.

Every task's answer has a size known before the call: so many needles, keys or values of
a known kind, an MRCR reply of a known length; each task says its own. Thinking counts against
``max_output_tokens`` too (a model that thinks can spend the whole budget before it
answers), so the call asks for the answer's room plus the thinking room, capped by the
model's output limit. A run that sets ``max_output_tokens`` below the answer's room is
refused; a reply that still ends at the budget is ``truncated``, never scored wrong.

Rooms are upper bounds in tokens: every character of an ASCII answer is at most one
Gemma 3 token (a piece covers one or more characters; byte fallback is one token a
byte), so an answer's UTF-8 bytes bound its tokens. tests/unit/test_answer_budget.py
checks every task's right answers against them.
"""

from __future__ import annotations

from dataclasses import dataclass

from niah.catalog.models import PROVIDER_OUTPUT_TOKENS, THINKING_LEVEL_ROOM, ModelInfo, find_model
from niah.core.request.spec import RunRequest

# Words around the values a right answer writes ("The special magic numbers for X are:
# ...", a reason for declining): a few dozen tokens, whatever the task.
ANSWER_SLACK = 48


def answer_room(spec: RunRequest) -> int:
    """Tokens a right answer to any sample of the run takes at most (generated samples).

    The task says how long its right answers are (its options' ``answer_bytes``); a
    published MRCR v2 row brings its own reply's length (``Sample.answer_tokens``).
    """
    return spec.task_options.answer_bytes(spec) + ANSWER_SLACK


def reply_room(reply_bytes: int) -> int:
    """The room for a reply of known size in UTF-8 bytes (a published MRCR v2 answer)."""
    return reply_bytes + ANSWER_SLACK


@dataclass(frozen=True)
class CallBudget:
    """What a call may spend, and why: its output cap and the thinking setting it sends.

    ``answer_tokens`` and ``thinking_tokens`` are the rooms the cap was made of (a cap the
    run set is split as far as it goes: the answer first).
    """

    max_output_tokens: int
    thinking_budget: int | None = None
    thinking_level: str | None = None
    answer_tokens: int = 0
    thinking_tokens: int = 0


def thinking_room(
    model: ModelInfo | None, thinking_budget: int | None, thinking_level: str | None
) -> int:
    """Tokens the model may think before it answers, as the call is sent.

    An explicit budget is its own room (-1, dynamic, may reach the model's maximum); a
    level has ``THINKING_LEVEL_ROOM``; with neither, the model's default: a 2.5 model's
    dynamic thinking may reach its maximum budget, Flash-Lite does not think, and a
    Gemini 3 model thinks at its default level.
    """
    if model is None:
        return THINKING_LEVEL_ROOM[thinking_level] if thinking_level else 0
    thinking = model.thinking
    if thinking.control == "budget":
        if thinking_budget is None:
            return thinking.budget_max if thinking.thinks_by_default else 0
        return thinking.budget_max if thinking_budget == -1 else thinking_budget
    if thinking.control == "level":
        level = thinking_level or thinking.default_level or "high"
        return THINKING_LEVEL_ROOM[level]
    return 0


def call_budget(
    spec: RunRequest, answer_tokens: int = 0, *, model: ModelInfo | None = None
) -> CallBudget:
    """The model call's budget for a sample of the run (``answer_tokens``: its own room).

    ``model``: the catalog's entry for ``spec.model_name`` where the caller resolved it
    (looked up here otherwise: a model the catalog does not know is None either way).
    """
    answer = max(answer_room(spec), answer_tokens)
    if spec.max_output_tokens is not None:
        return CallBudget(
            spec.max_output_tokens,
            spec.thinking_budget,
            spec.thinking_level,
            answer_tokens=min(answer, spec.max_output_tokens),
            thinking_tokens=max(0, spec.max_output_tokens - answer),
        )
    model = model or spec.catalog_model()
    thinking = thinking_room(model, spec.thinking_budget, spec.thinking_level)
    total = max(answer + thinking, PROVIDER_OUTPUT_TOKENS[spec.provider()])
    cap = model.output_tokens if model else None
    total = min(total, cap) if cap else total
    return CallBudget(
        total,
        spec.thinking_budget,
        spec.thinking_level,
        answer_tokens=answer,
        thinking_tokens=max(0, total - answer),
    )


def budget_warning(spec: RunRequest, *, model: ModelInfo | None = None) -> str | None:
    """A warning where the run's ``max_output_tokens`` leaves the model too little thinking.

    Its replies may then end MAX_TOKENS (truncated); None when the budget has the room.
    ``model``: as for ``call_budget``.
    """
    if spec.max_output_tokens is None:
        return None
    budget = call_budget(spec, model=model)
    free = call_budget(spec.model_copy(update={"max_output_tokens": None}), model=model)
    if budget.thinking_tokens >= free.thinking_tokens:
        return None
    return (
        f"max_output_tokens {spec.max_output_tokens} leaves {budget.thinking_tokens} thinking "
        f"tokens where {spec.model_name} may think up to {free.thinking_tokens}: replies may "
        "end MAX_TOKENS (truncated, never scored); leave max_output_tokens out (it would be "
        f"{free.max_output_tokens}) or lower thinking_budget / thinking_level"
    )


def least_thinking_budget(model_name: str, answer_tokens: int) -> CallBudget:
    """The least thinking ``model_name`` allows, and ``answer_tokens`` on top of it.

    For a short reply (the judge's score) from a model that thinks by default: off where
    it can be (2.5 Flash), the minimum budget where it cannot (2.5 Pro), the lowest
    level for Gemini 3 with that level's room.
    """
    model = find_model(model_name)
    if model is None:
        return CallBudget(answer_tokens, answer_tokens=answer_tokens)
    thinking = model.thinking
    if thinking.control == "budget":
        budget = 0 if thinking.can_disable else thinking.budget_min
        return CallBudget(answer_tokens + budget, budget, None, answer_tokens, budget)
    if thinking.control == "level":
        lowest = thinking.levels[0]  # listed from the least thinking up
        room = THINKING_LEVEL_ROOM[lowest]
        total = answer_tokens + room
        cap = model.output_tokens
        total = min(total, cap) if cap else total
        return CallBudget(total, None, lowest, answer_tokens, total - answer_tokens)
    return CallBudget(answer_tokens, answer_tokens=answer_tokens)
