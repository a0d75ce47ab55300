"""How the Vertex stand-in's models think, and how thinking spends the output budget.

The table is the stand-in's own, kept apart from the service's catalog on purpose: the
stand-in is a check of the catalog, so it must not read its answers from it. Each level
model's accepted ``thinkingLevel`` values and its default are copied from Google's pages
(the source is written beside each entry; the Vertex pages now live under
docs.cloud.google.com/gemini-enterprise-agent-platform, Vertex AI's new name; where stored
copies differ the newest wins). Gemini 2.5 thinks by budget, after Google's thinking guide
(ai.google.dev/gemini-api/docs/thinking, read 2026-11-26): 2.5 Pro always thinks and
refuses a budget of 0; 2.5 Flash thinks by default and 0 turns it off; 2.5 Flash-Lite
thinks only when a budget asks it to. A budget sent with a level is a 400 (ai.google.dev/
gemini-api/docs/gemini-3). Thought counts are round numbers, not measurements (Google
publishes none): what matters is that each level thinks a different amount, spent before
the answer, as Vertex spends it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

# The Vertex pages this table was read from, all read 2026-11-27.
VERTEX = "https://docs.cloud.google.com/gemini-enterprise-agent-platform/models"
READ = "read 2026-11-27"

# Budget models (2.5): thought tokens when a request sets nothing (the longest prefix wins).
THINKING: dict[str, int] = {
    "gemini-2.5-pro": 1_000,
    "gemini-2.5-flash": 500,
    "gemini-2.5-flash-lite": 0,
}
# What a model that does not think by default thinks once a budget turns thinking on.
THINKING_ON_REQUEST = 500
# Prefixes of models that cannot stop thinking: a budget of 0 is a 400 (Gemini 3 Pro
# takes a budget for compatibility, but "you cannot disable thinking": GEM3 above).
THINKING_REQUIRED: tuple[str, ...] = ("gemini-2.5-pro", "gemini-3-pro", "gemini-3.1-pro")
# Thought tokens per thinkingLevel: each level a different amount, so a reply's
# thoughtsTokenCount tells which level the model thought at.
THINKING_LEVELS: dict[str, int] = {
    "MINIMAL": 0,
    "LOW": 200,
    "MEDIUM": 500,
    "HIGH": 1_000,
    "XHIGH": 2_000,
}
ALL_FOUR = ["MINIMAL", "LOW", "MEDIUM", "HIGH"]
NO_MINIMAL = ["LOW", "MEDIUM", "HIGH"]
WITH_XHIGH = ["LOW", "MEDIUM", "HIGH", "XHIGH"]
# Level models: model ID (or a pinned version of it, "ID-001") -> the levels it takes
# and the one it thinks at when a request sends none.
LEVEL_MODELS: dict[str, dict[str, Any]] = {
    # f"{VERTEX}/guides/gemini-4-argon" (de, zh-cn, ko copies), READ: "LOW, MEDIUM
    # (default on gemini-4-argon) and HIGH (default on gemini-4-argon-cyber-permissive)".
    "gemini-4-argon": {"levels": NO_MINIMAL, "default": "MEDIUM"},
    "gemini-4-argon-cyber-permissive": {"levels": NO_MINIMAL, "default": "HIGH"},
    # f"{VERTEX}/gemini/4-carbon?hl=en" and f"{VERTEX}/guides/gemini-4-carbon", READ:
    # "4 Carbon supports thinking levels LOW, MEDIUM (default on gemini-4-carbon), and
    # HIGH (default on gemini-4-carbon-cyber-permissive)".
    "gemini-4-carbon": {"levels": NO_MINIMAL, "default": "MEDIUM"},
    "gemini-4-carbon-cyber-permissive": {"levels": NO_MINIMAL, "default": "HIGH"},
    # f"{VERTEX}/guides/gemini-4-hydrogen", READ: "Hydrogen supports LOW, MEDIUM, HIGH
    # (default), and XHIGH".
    "gemini-4-hydrogen": {"levels": WITH_XHIGH, "default": "HIGH"},
    # f"{VERTEX}/guides/gemini-4-neon", READ: "Neon supports LOW, MEDIUM, HIGH (default),
    # and XHIGH".
    "gemini-4-neon": {"levels": WITH_XHIGH, "default": "HIGH"},
    # f"{VERTEX}/guides/gemini-3-8-flash", READ, comparison table: 3.8 Flash and 3.7 Flash
    # "LOW, MEDIUM, HIGH (Default: MEDIUM)"; 3.1 Pro "LOW, MEDIUM, HIGH (Default: HIGH)".
    "gemini-3.8-flash": {"levels": NO_MINIMAL, "default": "MEDIUM"},
    # f"{VERTEX}/thinking", READ, its table: "Gemini 3.7 Flash | LOW, MEDIUM, HIGH |
    # MEDIUM", "Gemini 3.6 Flash | MINIMAL, LOW, MEDIUM, HIGH | MEDIUM", "Gemini 3.5
    # Flash-Lite | MINIMAL, LOW, MEDIUM, HIGH | MINIMAL".
    "gemini-3.7-flash": {"levels": NO_MINIMAL, "default": "MEDIUM"},
    "gemini-3.6-flash": {"levels": ALL_FOUR, "default": "MEDIUM"},
    "gemini-3.5-flash-lite": {"levels": ALL_FOUR, "default": "MINIMAL"},
    # f"{VERTEX}/guides/gemini-3-5-flash", READ, comparison table: 3.5 Flash "MINIMAL,
    # LOW, MEDIUM, HIGH (Default: MEDIUM)"; 3.1 Pro "LOW, MEDIUM, HIGH (Default: HIGH)";
    # 3.1 Flash-Lite "MINIMAL, LOW, MEDIUM, HIGH (Default: MINIMAL)".
    "gemini-3.5-flash": {"levels": ALL_FOUR, "default": "MEDIUM"},
    "gemini-3.1-pro-preview": {"levels": NO_MINIMAL, "default": "HIGH"},
    "gemini-3.1-flash-lite": {"levels": ALL_FOUR, "default": "MINIMAL"},
    # docs.cloud.google.com/vertex-ai/generative-ai/docs/models/gemini/3-flash, READ:
    # thinking_level "minimal, low, medium or high"; f"{VERTEX}/thinking", READ: "By
    # default, Gemini 3 models use dynamic thinking (thinking_level.HIGH)".
    "gemini-3-flash-preview": {"levels": ALL_FOUR, "default": "HIGH"},
    # Retired 2026-03-09 (ai.google.dev/gemini-api/docs/deprecations, READ); kept for the
    # tests that script it. ai.google.dev/gemini-api/docs/gemini-3: Pro takes low and high.
    "gemini-3-pro-preview": {"levels": ["LOW", "HIGH"], "default": "HIGH"},
}
# A Gemini 3 or later ID the table does not list (a made-up one in a test): every level
# Gemini 3 introduced, at HIGH, the Gemini 3 default f"{VERTEX}/thinking" states.
UNLISTED_LEVEL_MODEL: dict[str, Any] = {"levels": ALL_FOUR, "default": "HIGH"}
# Gemini 4 (prefix): f"{VERTEX}/start/get-started-with-gemini-4" and each Gemini 4 guide,
# READ: "a unified 1,048,576-token limit that includes both input and output tokens";
# "Output can use up to 1,048,576 tokens minus your input tokens". The pages do not say
# how the API answers a request whose maxOutputTokens does not fit beside its prompt; the
# stand-in refuses it with a 400, the stricter reading, so a service that asks for more
# than the room left is caught here rather than in production.
SHARED_LIMITS: dict[str, int] = {"gemini-4": 1_048_576}
# Models past their shutdown date, which Vertex answers 404 ("API requests referencing a
# retired model ID typically returns a 404 error": docs.cloud.google.com/vertex-ai/
# generative-ai/docs/learn/model-versions, READ). Dates: ai.google.dev/gemini-api/docs/
# deprecations (1.5, 3 Pro Preview) and Vertex's model versions page (2.0 discontinued
# June 1, 2026; 2.5 retired 2026-10-20), READ. Answered only with ``retired_404`` on:
# the tests that need a budget-controlled model still call 2.5 (and some 3 Pro Preview).
RETIRED: dict[str, str] = {
    "gemini-1.5-pro": "2025-09-24",
    "gemini-1.5-flash": "2025-09-24",
    "gemini-2.0-flash": "2026-06-01",
    "gemini-2.0-flash-lite": "2026-06-01",
    "gemini-3-pro-preview": "2026-03-09",
    "gemini-2.5-pro": "2026-10-20",
    "gemini-2.5-flash": "2026-10-20",
    "gemini-2.5-flash-lite": "2026-10-20",
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
        "level_models": {model: dict(entry) for model, entry in LEVEL_MODELS.items()},
        "shared_limits": dict(SHARED_LIMITS),
        "retired": dict(RETIRED),
        "retired_404": False,
    }


def _by_prefix(table: dict[str, Any], model: str) -> Any:
    matches = [prefix for prefix in table if model.startswith(prefix)]
    return table[max(matches, key=len)] if matches else None


def _by_id(table: dict[str, Any], model: str) -> Any:
    """The entry of ``model`` or of the ID it pins a version of (``gemini-3.8-flash-001``)."""
    matches = [key for key in table if model == key or model.startswith(key + "-")]
    return table[max(matches, key=len)] if matches else None


def level_model(config: dict[str, Any], model: str) -> dict[str, Any] | None:
    """How a level model thinks (levels, default); None for a budget or non-thinking one."""
    entry = _by_id(config["level_models"], model)
    if entry is not None:
        return dict(entry)
    major = model.removeprefix("gemini-").split("-")[0].split(".")[0]
    return dict(UNLISTED_LEVEL_MODEL) if major.isdigit() and int(major) >= 3 else None


def shared_limit(config: dict[str, Any], model: str) -> int | None:
    """The one limit prompt and output share, where the model has one (Gemini 4)."""
    limit = _by_prefix(config["shared_limits"], model)
    return None if limit is None else int(limit)


def retired(config: dict[str, Any], model: str, today: dt.date | None = None) -> bool:
    """Whether the stand-in answers ``model`` 404, as Vertex does past its shutdown date."""
    shutdown = _by_id(config["retired"], model)
    if not config["retired_404"] or shutdown is None:
        return False
    return (today or dt.date.today()) >= dt.date.fromisoformat(str(shutdown))


def _field(config: dict[str, Any], camel: str, snake: str) -> Any:
    # google-genai writes some fields in snake case; Vertex's JSON accepts both spellings.
    return config[camel] if camel in config else config.get(snake)


def generation_limits(body: dict[str, Any]) -> tuple[int | None, int | None, str | None]:
    """``maxOutputTokens`` (None when unset), thinking budget and level."""
    generation = _field(body, "generationConfig", "generation_config") or {}
    thinking = _field(generation, "thinkingConfig", "thinking_config") or {}
    max_output = _field(generation, "maxOutputTokens", "max_output_tokens")
    budget = _field(thinking, "thinkingBudget", "thinking_budget")
    level = _field(thinking, "thinkingLevel", "thinking_level")
    return (
        int(max_output) if max_output else None,
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
    thinks_by_level = level_model(config, model)
    if thinks_by_level is not None:
        levels = config["thinking_levels"]
        if level is not None and level not in levels:
            # Not Google's wording: no public source shows how Vertex refuses an unknown
            # level name.
            raise InvalidThinking(f"Invalid value for thinking_level: {level}.")
        if level is not None and level not in thinks_by_level["levels"]:
            # Vertex's wording for MINIMAL on 3.7 / 3.8 Flash, as reported in
            # github.com/earendil-works/pi/issues/9535 and BerriAI/litellm/issues/37314
            # (2026-09); other levels are assumed to be refused the same way.
            raise InvalidThinking(f"Thinking level is unsupported: THINKING_LEVEL_{level}")
        natural = int(levels[level or thinks_by_level["default"]])
    elif level is not None:
        # Not Google's wording: no public source shows a 2.5 model refusing a level.
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
