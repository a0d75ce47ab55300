"""A list of calls priced on each way Vertex may serve them: the tiers, and batch.

The estimate's pricing of its calls (``niah.core.money.estimate``) and the cache
benchmark's: one function prices a list of calls, and ``tier_figures`` says what the
run costs on every tier Google offers its model on, with the reason for each it does
not (``niah.catalog.tiers``), and in batch beside them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from niah.catalog.tiers import TIERS, Tier, tier_refusal
from niah.core.money.pricing import Cost, cost_of


@dataclass(frozen=True)
class CallTokens:
    """One call's tokens as billed: prompt (of which cached) and output (with thinking)."""

    prompt_tokens: int
    cached_tokens: int = 0
    output_tokens: int = 0


def price_calls(
    model_name: str,
    calls: Iterable[CallTokens],
    *,
    batch: bool = False,
    tier: Tier = "standard",
) -> Cost:
    """What ``calls`` to ``model_name`` cost, at batch or ``tier`` rates; or unpriced.

    Unpriced if the model has no known price.
    """
    total = Cost(0.0, priced=True)
    for call in calls:
        total += cost_of(
            model_name,
            call.prompt_tokens,
            call.output_tokens,
            cached_tokens=call.cached_tokens,
            batch=batch,
            tier=tier,
        )
    return total


def _usd(cost: Cost) -> float | None:
    """Dollars, or None where a price is unknown (never $0)."""
    return round(cost.usd, 6) if cost.priced else None


def tier_figures(
    model_name: str,
    naive: list[CallTokens],
    cache_aware: list[CallTokens],
    *,
    location: str,
) -> dict[str, Any]:
    """The model's calls on each tier (naive and cache-aware), and in batch.

    A tier Google does not offer on the model (or at ``location``) carries the reason
    instead of a price. Batch counts nothing cached (no order to count on).
    """
    figures: dict[str, Any] = {}
    for tier in TIERS:
        refusal = tier_refusal(model_name, tier, location)
        figures[tier] = (
            {"offered": False, "reason": refusal}
            if refusal
            else {
                "offered": True,
                "naive_usd": _usd(price_calls(model_name, naive, tier=tier)),
                "cache_aware_usd": _usd(price_calls(model_name, cache_aware, tier=tier)),
            }
        )
    figures["batch"] = {
        "offered": True,
        "naive_usd": _usd(price_calls(model_name, naive, batch=True)),
        "cache_aware_usd": None,
    }
    return figures
