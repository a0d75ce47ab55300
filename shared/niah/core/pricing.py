"""What a call costs: arithmetic on the catalog's prices (``niah.models.catalog``).

Prices are USD per million tokens. Models with a long-context tier charge the higher
rate for the whole request when the prompt is above ``long_context_threshold`` tokens.
A model with no known price costs "unknown", never $0.
"""

from __future__ import annotations

from dataclasses import dataclass

from niah.models.catalog import Prices, prices_for


@dataclass(frozen=True)
class Cost:
    """A cost in USD, and whether the model's price was known."""

    usd: float
    priced: bool


def call_cost(prices: Prices | None, prompt_tokens: int, output_tokens: int) -> Cost:
    """The cost of one call at ``prices`` (unpriced when ``prices`` is None)."""
    if prices is None:
        return Cost(0.0, priced=False)
    threshold = prices.long_context_threshold
    long = threshold is not None and prompt_tokens > threshold
    input_rate = prices.long_input if long and prices.long_input is not None else prices.input
    output_rate = prices.long_output if long and prices.long_output is not None else prices.output
    return Cost((prompt_tokens * input_rate + output_tokens * output_rate) / 1e6, priced=True)


def cost_of(model_name: str, prompt_tokens: int, output_tokens: int) -> Cost:
    """The cost of one call to ``model_name``, at the catalog's prices."""
    return call_cost(prices_for(model_name), prompt_tokens, output_tokens)
