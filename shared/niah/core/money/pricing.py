"""What a call costs: arithmetic on the catalog's prices (``niah.catalog.prices``).

Prices are USD per million tokens. Models with a long-context tier charge the higher
rate for the whole request when the prompt is above ``long_context_threshold`` tokens.
Thinking tokens are billed at the output rate and cached input at the cached rate
(Vertex AI's implicit caching is on by default). A model with no known price costs
"unknown", never $0.

Batch (``execution: batch``): Vertex AI bills Gemini batch requests at 50 % of the
online price, and implicit caching applies inside a batch with its cached-token
discount taking precedence over the batch discount; the two do not stack
(cloud.google.com/vertex-ai/generative-ai/docs/multimodal/batch-prediction-gemini, "Batch
requests for Gemini models are discounted 50% from standard requests", and its
caching note "The 90% cache hit discount takes precedence over the batch discount";
read 2026-11-27). So in batch, uncached input and output are at half their rates and
cached input at the cached rate, not halved again.

Tiers (``tier``, ``niah.catalog.tiers``): Flex PayGo bills input and output at half
the standard rate and Priority PayGo at 1.8 times. Google's pages do not say what a
tier does to a cached token; the figures here bound it: Flex as batch (cached at the
cached rate or the halved input rate, whichever is less), Priority at 1.8 times the
cached rate.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from niah.catalog.prices import Prices, prices_for
from niah.catalog.tiers import TIER_RATE, Tier
from niah.core.interfaces import ModelAnswer


@dataclass(frozen=True)
class Cost:
    """A cost in USD, whether the model's price was known, and the cost without caching."""

    usd: float
    priced: bool
    usd_without_cache: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.usd + other.usd,
            self.priced and other.priced,
            self.usd_without_cache + other.usd_without_cache,
        )


UNPRICED = Cost(0.0, priced=False)
# What batch bills of the online input and output rates (see the module's note).
BATCH_DISCOUNT = 0.5


def call_cost(
    prices: Prices | None,
    prompt_tokens: int,
    output_tokens: int,
    *,
    cached_tokens: int = 0,
    thinking_tokens: int = 0,
    batch: bool = False,
    tier: Tier = "standard",
) -> Cost:
    """The cost of one call at ``prices``, as Google bills it.

    Uncached input at the input rate, cached input at the cached rate (the input rate
    where none is listed), answer and thinking tokens at the output rate; the long-context
    tier (by the whole prompt's size) for every part. Unpriced when the price is unknown.
    ``batch``: input and output at ``BATCH_DISCOUNT`` of their rates, cached input at
    the cached rate (the cache's discount, not both). ``tier``: the online call's tier
    (see the module's note); a batch line has none.
    """
    if prices is None:
        return UNPRICED
    threshold = prices.long_context_threshold
    long = threshold is not None and prompt_tokens > threshold
    input_rate = prices.long_input if long and prices.long_input is not None else prices.input
    output_rate = prices.long_output if long and prices.long_output is not None else prices.output
    cached_rate = (
        prices.long_cached_input if long and prices.long_cached_input is not None
        else prices.cached_input
    )  # fmt: skip
    if cached_rate is None:  # no cache discount listed: billed as input, as genai-prices does
        cached_rate = input_rate
    if batch:
        input_rate, output_rate = input_rate * BATCH_DISCOUNT, output_rate * BATCH_DISCOUNT
        cached_rate = min(cached_rate, input_rate)  # no cache discount listed: batch input
    elif tier != "standard":
        factor = TIER_RATE[tier]
        input_rate, output_rate = input_rate * factor, output_rate * factor
        cached_rate = min(cached_rate, input_rate) if factor < 1 else cached_rate * factor
    billed_output = (output_tokens + thinking_tokens) * output_rate
    uncached = prompt_tokens - cached_tokens
    usd = uncached * input_rate + cached_tokens * cached_rate + billed_output
    return Cost(usd / 1e6, True, (prompt_tokens * input_rate + billed_output) / 1e6)


def cost_of(
    model_name: str,
    prompt_tokens: int,
    output_tokens: int,
    *,
    cached_tokens: int = 0,
    thinking_tokens: int = 0,
    batch: bool = False,
    tier: Tier = "standard",
    when: dt.datetime | None = None,
) -> Cost:
    """The cost of one call to ``model_name`` at the rates of ``when`` (now).

    A run that spans a price change pays each call at its own day's rate; ``batch``: at
    batch rates; ``tier``: at the tier's.
    """
    return call_cost(
        prices_for(model_name, when),
        prompt_tokens,
        output_tokens,
        cached_tokens=cached_tokens,
        thinking_tokens=thinking_tokens,
        batch=batch,
        tier=tier,
    )


def answer_cost(
    model_name: str,
    answer: ModelAnswer,
    *,
    batch: bool = False,
    tier: Tier = "standard",
    when: dt.datetime | None = None,
) -> Cost:
    """What one answered call cost, from the usage the API reported, at ``when``'s rates.

    ``tier``: the tier it was served on.
    """
    return cost_of(
        model_name,
        answer.prompt_tokens or 0,
        answer.output_tokens or 0,
        cached_tokens=answer.cached_tokens or 0,
        thinking_tokens=answer.thinking_tokens or 0,
        batch=batch,
        tier=tier,
        when=when,
    )


def spend_summary(
    calls: list[dict[str, Any]], model_name: str, tier: Tier = "standard"
) -> dict[str, Any]:
    """Every model call the run started, the thrown-away ones too, and what they cost.

    ``cost_usd`` in the summary is what the stored results cost; the spend adds calls
    whose answers were never stored (a worker killed mid-call, a cell stored by another
    delivery). A call cut off mid-flight left no usage: its input is estimated at the
    planned prompt size (``estimated_usd``), at the run's ``tier``; its output, if any,
    is unknown.
    """
    answered = [c for c in calls if c.get("status") == "answered"]
    cut_off = [c for c in calls if c.get("status") == "started"]
    unpriced = sum(1 for c in answered if c.get("cost_usd") is None)
    known = sum(float(c["cost_usd"]) for c in answered if c.get("cost_usd") is not None)
    # Priced call by call: the long-context tier is set by each prompt's own size.
    estimate = sum(
        (
            cost_of(model_name, int(c.get("planned_prompt_tokens") or 0), 0, tier=tier)
            for c in cut_off
        ),
        Cost(0.0, priced=True),
    )
    return {
        "calls": len(calls),
        "answered_calls": len(answered),
        "error_calls": sum(1 for c in calls if c.get("status") == "error"),
        "cut_off_calls": len(cut_off),
        "unpriced_calls": unpriced,
        "usd": None
        if unpriced or (cut_off and not estimate.priced)
        else round(known + estimate.usd, 6),
        "answered_usd": round(known, 6),
        "estimated_usd": round(estimate.usd, 6) if estimate.priced else None,
    }
