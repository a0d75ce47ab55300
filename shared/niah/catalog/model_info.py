"""What the catalog says of one model: its type, and the call figures entries share.

``ModelInfo`` (provider, limits, thinking control, temperature, lifecycle, tokenizer,
and where each fact was read) and ``Thinking``; the temperature a model is called at
unless its entry says otherwise, and the output rooms this service plans calls with.
The entries are in ``niah.catalog.model_entries`` (with Google's pages they come from);
the questions asked of them in ``niah.catalog.models``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from niah.catalog.lifecycle import Lifecycle
from niah.catalog.tokenizers import PromptLength, prompt_length_kind

ProviderName = Literal["local", "gemini", "openai_compatible"]
ThinkingControl = Literal["none", "budget", "level"]

LOCAL_MODEL = "gemma-3-270m-local"

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
class CallSpeed:
    """How fast a model the service runs itself reads a prompt and writes a reply.

    For a model with no price (the local one), what a call costs is its time: a
    certification's budget is then in model seconds (``seconds``), estimated from these
    speeds. Only their ratio decides what share of a grid a budget buys; the seconds
    themselves are this machine's. ``source``: where and when they were measured.
    """

    prompt_tokens_per_second: float
    output_tokens_per_second: float
    source: str

    def seconds(self, prompt_tokens: int, output_tokens: int) -> float:
        """A call's model time: its prompt read, then its reply written."""
        return (
            prompt_tokens / self.prompt_tokens_per_second
            + output_tokens / self.output_tokens_per_second
        )


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
    # A model the service runs itself: how fast, for a budget in model time (None: not known).
    speed: CallSpeed | None = None

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
