"""How the Vertex stand-in's models think, and how thinking spends the output budget.

The table is the stand-in's own, kept apart from the service's catalog on purpose: the
stand-in is a check of the catalog, so it must not read its answers from it. Figures
are modelled on Google's thinking guide (ai.google.dev/gemini-api/docs/thinking and
docs/gemini-3, read 2026-11-26): Gemini 2.5 Pro always thinks and refuses a budget of
0; 2.5 Flash thinks by default and 0 turns it off; 2.5 Flash-Lite thinks only when a
budget asks it to; Gemini 3 thinks by ``thinkingLevel`` and refuses a budget sent with
a level. Thought counts are round numbers, not measurements: what matters is that
they are spent before the answer, as Vertex spends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Model-ID prefix -> thought tokens when a request sets nothing (the longest prefix wins).
THINKING: dict[str, int] = {
    "gemini-2.5-pro": 1_000,
    "gemini-2.5-flash": 500,
    "gemini-2.5-flash-lite": 0,
}
# What a model that does not think by default thinks once a budget turns thinking on.
THINKING_ON_REQUEST = 500
# Prefixes of models that cannot stop thinking: a budget of 0 is a 400.
THINKING_REQUIRED: tuple[str, ...] = ("gemini-2.5-pro", "gemini-3-pro", "gemini-3.1-pro")
# Gemini 3: thought tokens per thinkingLevel, and each model's level when none is sent.
THINKING_LEVELS: dict[str, int] = {"MINIMAL": 0, "LOW": 200, "MEDIUM": 500, "HIGH": 1_000}
THINKING_DEFAULT_LEVELS: dict[str, str] = {
    "gemini-3": "HIGH",
    "gemini-3.5-flash": "MEDIUM",
    "gemini-3.1-pro-preview": "HIGH",
    "gemini-3.1-flash-lite": "MINIMAL",
}
# Vertex's cap when generationConfig sets no maxOutputTokens.
DEFAULT_MAX_OUTPUT_TOKENS = 65_536


class InvalidThinking(ValueError):
    """A thinking setting the real API answers with 400 INVALID_ARGUMENT."""


def thinking_config() -> dict[str, Any]:
    """The table as ``/_standin/config`` keys (a posted dict is merged over it)."""
    return {
        "thinking": dict(THINKING),
        "thinking_on_request": THINKING_ON_REQUEST,
        "thinking_required": list(THINKING_REQUIRED),
        "thinking_levels": dict(THINKING_LEVELS),
        "thinking_default_levels": dict(THINKING_DEFAULT_LEVELS),
    }


def _by_prefix(table: dict[str, Any], model: str) -> Any:
    matches = [prefix for prefix in table if model.startswith(prefix)]
    return table[max(matches, key=len)] if matches else None


def _field(config: dict[str, Any], camel: str, snake: str) -> Any:
    # google-genai writes some fields in snake case; Vertex's JSON accepts both spellings.
    return config[camel] if camel in config else config.get(snake)


def generation_limits(body: dict[str, Any]) -> tuple[int, int | None, str | None]:
    """``maxOutputTokens`` (Vertex's default when absent), thinking budget and level."""
    generation = _field(body, "generationConfig", "generation_config") or {}
    thinking = _field(generation, "thinkingConfig", "thinking_config") or {}
    max_output = _field(generation, "maxOutputTokens", "max_output_tokens")
    budget = _field(thinking, "thinkingBudget", "thinking_budget")
    level = _field(thinking, "thinkingLevel", "thinking_level")
    return (
        int(max_output) if max_output else DEFAULT_MAX_OUTPUT_TOKENS,
        None if budget is None else int(budget),
        None if level is None else str(level).upper(),
    )


def thought_tokens(
    config: dict[str, Any], model: str, budget: int | None, level: str | None
) -> int:
    """How many tokens ``model`` thinks for a request's budget and level.

    Raises:
        InvalidThinking: where the real API refuses the setting.
    """
    if budget is not None and level is not None:
        raise InvalidThinking(
            "Unable to submit request because thinking_budget and thinking_level are not "
            "supported together."
        )
    required = any(model.startswith(prefix) for prefix in config["thinking_required"])
    if budget == 0 and required:
        raise InvalidThinking("Budget 0 is invalid. This model only works in thinking mode.")
    if model.startswith("gemini-3"):
        default_level = _by_prefix(config["thinking_default_levels"], model) or "HIGH"
        levels = config["thinking_levels"]
        if (level or default_level) not in levels:
            raise InvalidThinking(f"Invalid thinking level: {level}.")
        natural = int(levels[level or default_level])
    elif level is not None:
        raise InvalidThinking("Thinking level is not supported for this model.")
    else:
        default = _by_prefix(config["thinking"], model)
        if default is None:  # a model that does not think (2.0, 1.5, not Gemini)
            return 0
        natural = int(default)
        if budget is None:
            return natural
        if natural == 0 and budget != 0:  # a budget turns thinking on (2.5 Flash-Lite)
            natural = int(config["thinking_on_request"])
    if budget is None or budget == -1:
        return natural
    return min(natural, budget)


@dataclass(frozen=True)
class Spent:
    """How one reply spent its output budget."""

    thoughts: int  # thought tokens billed (never more than the budget)
    answer_tokens: int | None  # answer tokens kept; None: no answer part at all
    truncated: bool  # the budget ended the reply (finishReason MAX_TOKENS)


def spend(max_output_tokens: int, thoughts: int, answer_tokens: int) -> Spent:
    """Vertex's order: thoughts first; the answer gets what is left, cut to fit."""
    if thoughts >= max_output_tokens:
        return Spent(max_output_tokens, None, True)
    room = max_output_tokens - thoughts
    return Spent(thoughts, min(answer_tokens, room), answer_tokens > room)
