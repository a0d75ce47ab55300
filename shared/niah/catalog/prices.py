"""Model prices: from ``genai-prices``, with ``NIAH_PRICE_TABLE`` merged over them.

``genai-prices`` (PyPI, pydantic's, released monthly; pinned in requirements.txt) holds
Google's prices with the long-context tier and the cached-read rate, each model with a
comment saying where and when they were checked. It keeps one table for Google, citing
both ai.google.dev/gemini-api/docs/pricing and cloud.google.com/vertex-ai/generative-ai/
pricing; where the two differ, its figures are the Gemini API's (say so before trusting
a Vertex bill). Prices change on fixed dates (introductory rates that end): the library
keeps each rate with the day it starts, and a call is priced at the rate of its own day.
A served model the library lacks has its reason in ``NO_PRICE_REASONS`` (none of them
has a price on Google's pages either); tests/unit/test_catalog.py demands a price or a
reason of every model the catalog lists as served. The local model costs nothing per
token.

Kept apart from ``niah.catalog.models``, and the library imported inside the functions
that read it, so the dispatcher (which prices only a run's worst case, at admission)
loads it on its first dispatch, not on its cold start.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any, Literal

from niah.catalog.models import LOCAL_MODEL, ModelInfo, catalog_entry
from niah.catalog.names import base_name, not_a_text_model
from niah.errors import ConfigurationError
from niah.settings import get_settings

# The library's provider for Google's models (Gemini API and Vertex AI share it).
GENAI_PRICES_PROVIDER = "google"


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, as Google lists them.

    Above ``long_context_threshold`` prompt tokens the ``long_*`` rates apply to the
    whole request (the Gemini 2.5 Pro and 3.x Pro tiers).
    """

    input: float
    output: float
    cached_input: float | None = None
    long_context_threshold: int | None = None
    long_input: float | None = None
    long_output: float | None = None
    long_cached_input: float | None = None
    checked: str = ""  # when and where the figures were looked up


LOCAL_PRICES = Prices(0.0, 0.0, cached_input=0.0, checked="runs on the worker: no per-token price")
PRICE_FIELDS = frozenset(f.name for f in fields(Prices)) - {"checked"}

# Served models with no published price anywhere, and why (the estimate then says
# "unknown", never $0; NIAH_PRICE_TABLE can set one).
_UNPUBLISHED = (
    "no price on the stored copies of Google's pricing pages (ai.google.dev/gemini-api/"
    "docs/pricing, cloud.google.com/vertex-ai/generative-ai/pricing; read 2026-11-27) "
    "and none in genai-prices 0.2.3; set NIAH_PRICE_TABLE to price it"
)
NO_PRICE_REASONS: dict[str, str] = {
    name: _UNPUBLISHED
    for name in (
        "gemini-4-argon-cyber-permissive",
        "gemini-4-carbon",
        "gemini-4-carbon-cyber-permissive",
        "gemini-4-hydrogen",
        "gemini-4-neon",
    )
}


def prices_for(
    model_name: str,
    when: dt.datetime | None = None,
    *,
    entry: ModelInfo | Literal["look up"] | None = "look up",
) -> Prices | None:
    """The model's prices at ``when`` (now), with overrides merged; None where unknown.

    ``entry``: the model's catalog entry where the caller resolved it already (a run's
    ``RunRequest.catalog_model``), so admission looks the model up once.

    A pinned version (``gemini-3.5-flash-001``) is priced as its family, then the
    family's override and the pinned ID's own override are merged over that, field by
    field.
    """
    name = base_name(model_name)
    if not_a_text_model(name):
        return None  # refused before any call: its prices are not text prices
    known = catalog_entry(name) if entry == "look up" else entry
    family = known.name if known is not None else name
    day = (when or dt.datetime.now(dt.UTC)).date()
    prices = LOCAL_PRICES if family == LOCAL_MODEL else library_prices(family, day)
    overrides = _price_overrides()
    for key in dict.fromkeys((family, name)):
        if key in overrides:
            prices = _merge(prices, overrides[key], key)
    return prices


@lru_cache(maxsize=256)
def library_prices(model_id: str, day: dt.date) -> Prices | None:
    """``genai-prices``' standard prices of a Google model on ``day``; None if it has none."""
    import genai_prices
    from genai_prices import data_snapshot, types

    try:
        _, model = data_snapshot.get_snapshot().find_provider_model(
            model_id, None, GENAI_PRICES_PROVIDER, None
        )
    except LookupError:
        return None
    price = model.get_prices(dt.datetime.combine(day, dt.time(12), dt.UTC))
    if price.input_mtok is None or price.output_mtok is None:
        return None

    def split(value: Any) -> tuple[float | None, int | None, float | None]:
        """(base rate, tier threshold, tier rate) of a flat or one-tier price."""
        if value is None:
            return None, None, None
        if isinstance(value, types.TieredPrices):
            if len(value.tiers) != 1:
                raise ConfigurationError(f"{model_id}: {len(value.tiers)} price tiers, expected 1")
            tier = value.tiers[0]
            return float(value.base), int(tier.start), float(tier.price)
        return float(Decimal(value)), None, None

    input_base, threshold, input_long = split(price.input_mtok)
    output_base, output_threshold, output_long = split(price.output_mtok)
    cached_base, cached_threshold, cached_long = split(price.cache_read_mtok)
    thresholds = {t for t in (threshold, output_threshold, cached_threshold) if t is not None}
    if len(thresholds) > 1:
        raise ConfigurationError(f"{model_id}: price tiers at {sorted(thresholds)} differ")
    comment = (model.price_comments or "").split(". ")[0]
    return Prices(
        input=input_base or 0.0,
        output=output_base or 0.0,
        cached_input=cached_base,
        long_context_threshold=thresholds.pop() if thresholds else None,
        long_input=input_long,
        long_output=output_long,
        long_cached_input=cached_long,
        checked=f"genai-prices {genai_prices.__version__}, {model.id}: {comment}",
    )


def change_days(model_id: str) -> list[dt.date]:
    """Every day on which a rate of ``model_id`` starts, as genai-prices dates them."""
    from genai_prices import data_snapshot

    days: set[dt.date] = set()
    try:
        _, model = data_snapshot.get_snapshot().find_provider_model(
            model_id, None, GENAI_PRICES_PROVIDER, None
        )
    except LookupError:
        return sorted(days)
    for conditional in model.prices if isinstance(model.prices, list) else ():
        start = getattr(conditional.constraint, "start_date", None)
        if isinstance(start, dt.date):
            days.add(start)
    return sorted(days)


def next_price_change(
    model_name: str, today: dt.date | None = None
) -> tuple[dt.date, Prices] | None:
    """The first day after ``today`` on which the model's rates differ, and the new rates."""
    today = today or dt.datetime.now(dt.UTC).date()
    entry = catalog_entry(model_name)
    family = entry.name if entry is not None else base_name(model_name)
    now = prices_for(family, dt.datetime.combine(today, dt.time(12), dt.UTC))
    for day in change_days(family):
        if day > today:
            then = prices_for(family, dt.datetime.combine(day, dt.time(12), dt.UTC))
            if then is not None and then != now:
                return day, then
    return None


def _merge(prices: Prices | None, override: dict[str, Any], name: str) -> Prices:
    """``override``'s fields over ``prices``; a model with no price needs input and output."""
    if prices is None:
        missing = {"input", "output"} - override.keys()
        if missing:
            raise ConfigurationError(
                f"NIAH_PRICE_TABLE: {name} has no known price, so its entry needs "
                f"{' and '.join(sorted(missing))} (USD per 1M tokens)"
            )
        return Prices(**override, checked="NIAH_PRICE_TABLE")
    return replace(prices, **override, checked=f"{prices.checked}; NIAH_PRICE_TABLE for {name}")


def _price_overrides() -> dict[str, dict[str, Any]]:
    """``NIAH_PRICE_TABLE``: a JSON object of model name to some of ``Prices``' fields."""
    return _parse_price_table(get_settings().price_table or "")


@lru_cache(maxsize=4)
def _parse_price_table(raw: str) -> dict[str, dict[str, Any]]:
    """The price table setting, parsed and checked once; a bad one names what is wrong."""
    if not raw:
        return {}
    example = '{"my-model": {"input": 0.1, "output": 0.4}} (USD per 1M tokens)'
    try:
        table = json.loads(raw)
    except ValueError as error:
        raise ConfigurationError(
            f"NIAH_PRICE_TABLE is not JSON ({error}); e.g. {example}"
        ) from error
    if not isinstance(table, dict):
        raise ConfigurationError(f"NIAH_PRICE_TABLE must be a JSON object, e.g. {example}")
    for name, entry in table.items():
        if not isinstance(entry, dict) or not entry:
            raise ConfigurationError(
                f"NIAH_PRICE_TABLE: {name}'s entry must be an object of prices"
            )
        unknown = set(entry) - PRICE_FIELDS
        if unknown:
            raise ConfigurationError(
                f"NIAH_PRICE_TABLE: {name} has unknown field(s) {', '.join(sorted(unknown))}; "
                f"the fields are {', '.join(sorted(PRICE_FIELDS))}"
            )
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigurationError(
                    f"NIAH_PRICE_TABLE: {name}.{key} must be a number of 0 or more"
                )
    return {base_name(name): entry for name, entry in table.items()}
