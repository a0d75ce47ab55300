"""Prices per million tokens, in one place, and what a cell or a grid costs.

List prices in USD for Vertex AI (standard, online); check them against the pricing
page before trusting a bill. Override or extend with ``NIAH_PRICE_TABLE`` (a JSON object
of the same shape). Models with a long-context tier charge the higher rate for the
whole request when the prompt is above ``long_context_threshold`` tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from niah.settings import get_settings

DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "gemini-2.5-pro": {
        "input": 1.25,
        "output": 10.0,
        "long_context_threshold": 200_000,
        "long_input": 2.5,
        "long_output": 15.0,
    },
    "gemini-2.5-flash": {"input": 0.30, "output": 2.50},
    "gemini-2.5-flash-lite": {"input": 0.10, "output": 0.40},
    "gemini-2.0-flash": {"input": 0.15, "output": 0.60},
    "gemini-2.0-flash-lite": {"input": 0.075, "output": 0.30},
    "gemma-3-270m-local": {"input": 0.0, "output": 0.0},
}


@dataclass(frozen=True)
class Cost:
    """A cost in USD, and whether the model's price was known."""

    usd: float
    priced: bool


def price_table() -> dict[str, dict[str, float]]:
    """The default table with ``NIAH_PRICE_TABLE`` merged over it."""
    override = get_settings().price_table
    return {**DEFAULT_PRICES, **(json.loads(override) if override else {})}


def _prices_for(model_name: str) -> dict[str, float] | None:
    table = price_table()
    name = model_name.rsplit("/", 1)[-1]
    # The longest table key that prefixes the name: "gemini-2.5-flash-001" -> flash.
    keys = sorted((k for k in table if name.startswith(k)), key=len, reverse=True)
    return table[keys[0]] if keys else None


def cost_of(model_name: str, prompt_tokens: int, output_tokens: int) -> Cost:
    """The cost of one call."""
    prices = _prices_for(model_name)
    if prices is None:
        return Cost(0.0, priced=False)
    long = prompt_tokens > prices.get("long_context_threshold", float("inf"))
    input_rate = prices["long_input"] if long else prices["input"]
    output_rate = prices["long_output"] if long else prices["output"]
    return Cost((prompt_tokens * input_rate + output_tokens * output_rate) / 1e6, priced=True)
