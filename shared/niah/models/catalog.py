"""The model catalog: every fact the service holds about a model, in one place.

Which provider serves a name, its input and output limits, its prices (with the
long-context tier and the cached-input rate), how its thinking is controlled, when it
was released and retires, and the answer budget a run gets when it sets none. Every
question about a model is asked here; nothing else parses model names.

A leaf module: it imports only the settings and the errors, so the dispatcher, the
core logic and the providers can all ask it without loading anything heavy.

Sources, looked up 2026-11-26 (stored copies; check them before trusting a bill):
- Limits: the Vertex AI model pages (docs.cloud.google.com/gemini-enterprise-agent-platform/
  models/gemini/2-5-pro, 2-5-flash-lite, 3-flash, 2-0-flash-lite; Vertex AI is now
  "Gemini Enterprise Agent Platform") and ai.google.dev/gemini-api/docs/models.
- Prices: github.com/pydantic/genai-prices prices/providers/google.yml (HEAD 2026-08-21,
  each model's prices_checked date beside it), which cites both
  cloud.google.com/vertex-ai/generative-ai/pricing and ai.google.dev/gemini-api/docs/pricing;
  the Vertex pricing page itself was not in the stored copies.
- Thinking: ai.google.dev/gemini-api/docs/thinking (budgets per model; Gemini 3 takes
  ``thinking_level``, and a ``thinking_budget`` with it is a 400).
- Lifecycle: Vertex "Model versions and lifecycle" (docs.cloud.google.com/
  gemini-enterprise-agent-platform/models/model-versions, newest copy after 2026-10-13)
  and ai.google.dev/gemini-api/docs/deprecations.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal

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


# A Gemini model ID: "gemini-" and a version digit (gemini-2.5-flash, gemini-3-pro-preview).
GEMINI_NAME = re.compile(r"^gemini-\d[\w.-]*$")
# The one resource path a Gemini model may be named by: the project and location come
# from the deployment, never from a request.
GOOGLE_PUBLISHER_PATH = "publishers/google/models/"

# Models are called at this temperature (greedy, as the NIAH harness does) unless their
# entry says otherwise; runs record it, as MRCR v2's README asks every report to state.
TEMPERATURE = 0.0
# Google's Gemini 3 guide (ai.google.dev/gemini-api/docs/gemini-3, read 2026-11-26)
# strongly recommends keeping Gemini 3 at its default temperature of 1.0: lower values
# can make it loop or reason worse.
GEMINI_3_TEMPERATURE = 1.0

# Answer budgets when neither the run nor the model's entry sets one. The harness asked
# for 300 tokens; the local base model needs only the line that holds the number.
PROVIDER_OUTPUT_TOKENS: dict[ProviderName, int] = {
    "local": 24,
    "gemini": 300,
    "openai_compatible": 300,
}


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, as Google lists them.

    Above ``long_context_threshold`` prompt tokens the ``long_*`` rates apply to the
    whole request (the Gemini 2.5 Pro and 3 Pro tiers).
    """

    input: float
    output: float
    cached_input: float | None = None
    long_context_threshold: int | None = None
    long_input: float | None = None
    long_output: float | None = None
    long_cached_input: float | None = None
    checked: str = ""  # when and where the figures were looked up


@dataclass(frozen=True)
class Thinking:
    """How a model's thinking is controlled.

    ``budget``: ``thinking_budget`` tokens in [``budget_min``, ``budget_max``], -1 for
    dynamic, 0 to turn it off where ``can_disable``. ``level``: ``thinking_level`` from
    ``levels``. ``none``: the model does not think.
    """

    control: ThinkingControl = "none"
    budget_min: int = 0
    budget_max: int = 0
    can_disable: bool = False
    levels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lifecycle:
    """Published release and retirement dates (None where none is published)."""

    released: dt.date | None = None
    retires: dt.date | None = None
    successor: str | None = None

    def retired(self, today: dt.date | None = None) -> bool:
        """Whether the retirement date has passed."""
        return self.retires is not None and (today or dt.date.today()) >= self.retires


@dataclass(frozen=True)
class ModelInfo:
    """One model's entry in the catalog."""

    name: str
    provider: ProviderName
    input_tokens: int | None
    output_tokens: int | None
    prices: Prices | None = None
    thinking: Thinking = field(default_factory=Thinking)
    lifecycle: Lifecycle = field(default_factory=Lifecycle)
    default_output_tokens: int | None = None
    temperature: float = TEMPERATURE

    @property
    def output_budget(self) -> int:
        """The answer budget of a run that sets no ``max_output_tokens``."""
        return self.default_output_tokens or PROVIDER_OUTPUT_TOKENS[self.provider]


_GENAI_PRICES = "genai-prices google.yml, checked {}"
# Gemini 3 cannot turn thinking off, and its thinking counts against the output budget:
# the harness's 300 tokens would often end MAX_TOKENS with no answer. Only tokens used
# are billed, so a roomy cap costs nothing unless the model thinks that long.
GEMINI_3_OUTPUT_TOKENS = 8_192

CATALOG: dict[str, ModelInfo] = {
    info.name: info
    for info in (
        ModelInfo(
            "gemini-3-pro-preview",
            "gemini",
            1_048_576,
            65_536,
            Prices(
                2.00,
                12.00,
                cached_input=0.20,
                long_context_threshold=200_000,
                long_input=4.00,
                long_output=18.00,
                long_cached_input=0.40,
                checked=_GENAI_PRICES.format("2025-11-18"),
            ),
            Thinking("level", levels=("low", "high")),
            Lifecycle(released=dt.date(2025, 11, 18)),
            default_output_tokens=GEMINI_3_OUTPUT_TOKENS,
            temperature=GEMINI_3_TEMPERATURE,
        ),
        ModelInfo(
            "gemini-3-flash-preview",
            "gemini",
            1_048_576,
            65_536,
            Prices(0.50, 3.00, cached_input=0.05, checked=_GENAI_PRICES.format("2025-12-19")),
            Thinking("level", levels=("minimal", "low", "medium", "high")),
            Lifecycle(released=dt.date(2025, 12, 17)),
            default_output_tokens=GEMINI_3_OUTPUT_TOKENS,
            temperature=GEMINI_3_TEMPERATURE,
        ),
        ModelInfo(
            "gemini-2.5-pro",
            "gemini",
            1_048_576,
            65_535,
            Prices(
                1.25,
                10.00,
                cached_input=0.125,
                long_context_threshold=200_000,
                long_input=2.50,
                long_output=15.00,
                long_cached_input=0.25,
                checked=_GENAI_PRICES.format("2025-10-31"),
            ),
            Thinking("budget", budget_min=128, budget_max=32_768, can_disable=False),
            Lifecycle(released=dt.date(2025, 6, 17), retires=dt.date(2026, 10, 20)),
        ),
        ModelInfo(
            "gemini-2.5-flash",
            "gemini",
            1_048_576,
            65_535,
            Prices(0.30, 2.50, cached_input=0.03, checked=_GENAI_PRICES.format("2025-10-31")),
            Thinking("budget", budget_min=0, budget_max=24_576, can_disable=True),
            Lifecycle(released=dt.date(2025, 6, 17), retires=dt.date(2026, 10, 20)),
        ),
        ModelInfo(
            "gemini-2.5-flash-lite",
            "gemini",
            1_048_576,
            65_536,
            Prices(0.10, 0.40, cached_input=0.01, checked=_GENAI_PRICES.format("2025-10-31")),
            Thinking("budget", budget_min=512, budget_max=24_576, can_disable=True),
            Lifecycle(released=dt.date(2025, 7, 22), retires=dt.date(2026, 10, 20)),
        ),
        ModelInfo(
            "gemini-2.0-flash",
            "gemini",
            1_048_576,
            8_192,
            Prices(0.10, 0.40, cached_input=0.025, checked=_GENAI_PRICES.format("2025-07-04")),
            lifecycle=Lifecycle(
                released=dt.date(2025, 2, 5),
                retires=dt.date(2026, 6, 1),
                successor="gemini-2.5-flash",
            ),
        ),
        ModelInfo(
            "gemini-2.0-flash-lite",
            "gemini",
            1_048_576,
            8_192,
            Prices(0.075, 0.30, checked=_GENAI_PRICES.format("2025-07-04")),
            lifecycle=Lifecycle(
                released=dt.date(2025, 2, 25),
                retires=dt.date(2026, 6, 1),
                successor="gemini-2.5-flash-lite",
            ),
        ),
        ModelInfo(
            "gemini-1.5-pro",
            "gemini",
            2_097_152,
            8_192,
            lifecycle=Lifecycle(
                released=dt.date(2024, 9, 24),
                retires=dt.date(2025, 9, 24),
                successor="gemini-2.5-pro",
            ),
        ),
        ModelInfo(
            "gemini-1.5-flash",
            "gemini",
            1_048_576,
            8_192,
            lifecycle=Lifecycle(
                released=dt.date(2024, 9, 24),
                retires=dt.date(2025, 9, 24),
                successor="gemini-2.5-flash",
            ),
        ),
        ModelInfo(
            LOCAL_MODEL,
            "local",
            None,  # the window is a setting (NIAH_LOCAL_MODEL_MAX_CONTEXT); see input_limit
            None,
            Prices(0.0, 0.0, cached_input=0.0, checked="runs on the worker: no per-token price"),
        ),
    )
}


def base_name(model_name: str) -> str:
    """The model ID without a resource path (``publishers/google/models/gemini-2.5-pro``)."""
    return model_name.rsplit("/", 1)[-1]


def find_model(model_name: str) -> ModelInfo | None:
    """The catalog entry of ``model_name``, or None for a model the catalog does not know.

    A pinned version (``gemini-2.5-flash-001``) takes its family's entry: the longest
    entry name that the ID starts with, followed by '-' or the end.
    """
    name = base_name(model_name)
    if name in CATALOG:
        return _with_price_override(CATALOG[name])
    matches = [key for key in CATALOG if name.startswith(key + "-")]
    if not matches:
        return None
    return _with_price_override(CATALOG[max(matches, key=len)])


def provider_for_model(model_name: str) -> ProviderName:
    """The provider a model name implies: the local Gemma, Gemini, else OpenAI-style."""
    known = find_model(model_name)
    if known is not None:
        return known.provider
    # Any "gemini-..." name goes to Gemini, so a misspelt one is refused as a Gemini name
    # (is_gemini_name) rather than sent to an OpenAI-compatible endpoint.
    return "gemini" if base_name(model_name).startswith("gemini-") else "openai_compatible"


def is_gemini_name(model_name: str) -> bool:
    """Whether ``model_name`` is a Gemini model ID, bare or as Google's publisher path.

    Checked whole: a ``projects/...`` path would send the call to another project's
    resource, so only ``gemini-...`` and ``publishers/google/models/gemini-...`` pass.
    """
    bare = model_name.removeprefix(GOOGLE_PUBLISHER_PATH)
    return bool(GEMINI_NAME.fullmatch(bare)) and ".." not in bare


def input_limit(provider: ProviderName, model_name: str) -> int | None:
    """The model's input limit in tokens, where known without calling it."""
    if provider == "local":
        # llama.cpp's window holds the BOS token, the prompt and the answer.
        return get_settings().local_model_max_context - 1 - PROVIDER_OUTPUT_TOKENS["local"]
    known = find_model(model_name)
    return known.input_tokens if known else None


def temperature_for(model_name: str) -> float:
    """The temperature the model is called at: 0, or Google's advice for the model."""
    known = find_model(model_name)
    return known.temperature if known else TEMPERATURE


def default_output_tokens(provider: ProviderName, model_name: str) -> int:
    """The answer budget of a run that sets no ``max_output_tokens``."""
    known = find_model(model_name)
    return known.output_budget if known else PROVIDER_OUTPUT_TOKENS[provider]


@dataclass(frozen=True)
class CallBudget:
    """What a call may spend: its output cap and the thinking setting it is sent with."""

    max_output_tokens: int
    thinking_budget: int | None = None
    thinking_level: str | None = None


def least_thinking_budget(model_name: str, answer_tokens: int) -> CallBudget:
    """The least thinking ``model_name`` allows, and ``answer_tokens`` on top of it.

    For a short reply (the judge's score) from a model that thinks by default: thinking
    counts against the output cap, and a cap sized for the reply alone ends MAX_TOKENS
    with no text. Off where it can be (2.5 Flash), the minimum budget where it cannot
    (2.5 Pro), the lowest level for Gemini 3, with that model's roomy default cap.
    """
    known = find_model(model_name)
    if known is None:
        return CallBudget(answer_tokens)
    thinking = known.thinking
    if thinking.control == "budget":
        budget = 0 if thinking.can_disable else thinking.budget_min
        return CallBudget(answer_tokens + budget, thinking_budget=budget)
    if thinking.control == "level":
        lowest = thinking.levels[0]  # listed from the least thinking up
        return CallBudget(max(answer_tokens, known.output_budget), thinking_level=lowest)
    return CallBudget(answer_tokens)


def prices_for(model_name: str) -> Prices | None:
    """The model's prices, with ``NIAH_PRICE_TABLE`` applied; None where unknown."""
    known = find_model(model_name)
    if known is not None:
        return known.prices
    return _price_overrides().get(base_name(model_name))


def _with_price_override(info: ModelInfo) -> ModelInfo:
    override = _price_overrides().get(info.name)
    return replace(info, prices=override) if override is not None else info


def _price_overrides() -> dict[str, Prices]:
    """``NIAH_PRICE_TABLE``: a JSON object of model name to ``Prices`` fields."""
    return _parse_price_table(get_settings().price_table or "")


@lru_cache(maxsize=4)
def _parse_price_table(raw: str) -> dict[str, Prices]:
    """The price table setting, parsed once; a bad one names what is wrong."""
    if not raw:
        return {}
    try:
        table = json.loads(raw)
        return {
            name: Prices(**{"checked": "NIAH_PRICE_TABLE", **fields})
            for name, fields in table.items()
        }
    except (ValueError, TypeError, AttributeError) as error:
        raise ConfigurationError(
            "NIAH_PRICE_TABLE must be a JSON object of model name to prices, e.g. "
            '{"my-model": {"input": 0.1, "output": 0.4}} (USD per 1M tokens): '
            f"{error}"
        ) from error
