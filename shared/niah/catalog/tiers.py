"""Pricing tiers and implicit caching per model: what Google documents, with where.

A run picks how its online calls are served (``tier``): Standard PayGo (the default),
Flex PayGo (cheaper, slower, more throttled) or Priority PayGo (dearer, steadier).
Batch is its own way of calling (``execution: batch``), priced in
``niah.core.money.pricing``. Every fact below is Google's, read 2026-12-04 from stored
copies of its pages (Vertex AI is now named "Gemini Enterprise Agent Platform"):

- FLEX: docs.cloud.google.com/gemini-enterprise-agent-platform/models/deploy/flex-paygo
  (and vertex-ai/generative-ai/docs/flex-paygo): "Flex PayGo offers a 50% discount
  compared to Standard PayGo"; "support Flex PayGo in the global endpoint only. Flex
  PayGo doesn't support regional or multi-regional endpoints"; "you must include the
  X-Vertex-AI-LLM-Shared-Request-Type header", "X-Vertex-AI-LLM-Shared-Request-Type:
  flex". Which models: the page's own source (.../models/flex-paygo.md.txt, read
  2026-12-05) says only "Flex PayGo is supported only in select Gemini 3.8 Flash and
  earlier models. It is not supported in newer Gemini models such as Gemini 4 Argon",
  and its "Supported models" list is cut from every stored copy (English, Spanish,
  Chinese, Hebrew, German; searched 2026-12-05). The one model that sentence names is
  Gemini 3.8 Flash, so flex is offered on it alone (``FLEX_MODELS``); the "earlier"
  models it selects are named nowhere, so each is refused with that reason
  (``FLEX_UNNAMED``), and Gemini 4 with the page's own words (``FLEX_NEWER``).
  ai.google.dev's model pages list "Flex inference: supported" for the 3.x Flash
  models, but that is the Gemini API's tier, not Vertex's.
- PRIORITY: .../models/priority-paygo: "charged per token usage at a higher rate than
  Standard PayGo"; the same header with "priority". Its model list and locations come
  from Google's English page, docs.cloud.google.com/vertex-ai/generative-ai/docs/
  priority-paygo (read 2026-12-04): "In general, Priority PayGo is supported on the
  global, us, and eu endpoints. However, some models (such as Gemini 2.5 models) may not
  support all three endpoints" (``PRIORITY_MODELS``, ``TIER_LOCATIONS``; a cut-off
  Spanish copy on documentation.s3ns.fr, used before, listed fewer models).
  The rate: genai-prices 0.2.3's Google entries (citing ai.google.dev/gemini-api/docs/
  pricing): "Priority tier is 1.8x" the standard rate; Google's Vertex pricing page is
  not among the stored copies, so the Gemini API's factor is used.
- G4A: .../models/guides/gemini-4-argon: "The 1,048,576-token context window is shared
  across input, thinking, and output tokens"; "Implicit caching applies automatically
  to shared prompt prefixes of 6,144 tokens or more".
- CACHE: .../models/context-cache/context-cache-overview: implicit caching is on by
  default; cached tokens are billed at a discount (90 % on the copies read; issue #52
  reads 95 % from Gemini 4). genai-prices 0.2.3 carries each model's cached rate
  (gemini-4-argon: $0.10 of $2, $0.20 of $4 from 2026-12-01: 95 % off;
  gemini-3.8-flash: $0.075 of $0.75: 90 % off), so the rate comes from there
  (``niah.catalog.prices``); tests/unit/test_tiers.py pins Argon's at 5 % of input.
- DEFERRED: .../models/deferred-tier: a tier of the Interactions API
  (``service_tier="deferred"``, turns queued "within a 24-hour target", global only),
  not of ``generateContent``, which the worker calls: not offered here (batch is).
- Served tier: the reply's ``usageMetadata.trafficType`` (google-genai 2.34's
  ``TrafficType``, generated from Google's API: ON_DEMAND, ON_DEMAND_FLEX,
  ON_DEMAND_PRIORITY, PROVISIONED_THROUGHPUT, ...). Where a reply has none, the cell
  records the tier asked and says so.
"""

from __future__ import annotations

from typing import Literal

from niah.catalog.models import find_model

Tier = Literal["standard", "flex", "priority"]
TIERS: tuple[Tier, ...] = ("standard", "flex", "priority")
# FLEX: "a 50% discount compared to Standard PayGo"; PRIORITY: 1.8x (see above).
TIER_RATE: dict[Tier, float] = {"standard": 1.0, "flex": 0.5, "priority": 1.8}
# The header both pages name, and its values.
TIER_HEADER = "X-Vertex-AI-LLM-Shared-Request-Type"
# Flex is served on the global endpoint only (FLEX); Priority on global and the us and
# eu multi-region endpoints (PRIORITY: "In general ... global, us, and eu").
TIER_LOCATIONS: dict[Tier, tuple[str, ...]] = {
    "flex": ("global",),
    "priority": ("global", "us", "eu"),
}
# trafficType as a reply names it, per tier (google-genai 2.34's TrafficType).
TRAFFIC_TYPES: dict[str, Tier] = {
    "ON_DEMAND": "standard",
    "ON_DEMAND_FLEX": "flex",
    "ON_DEMAND_PRIORITY": "priority",
}
TIER_TRAFFIC_TYPE: dict[Tier, str] = {tier: name for name, tier in TRAFFIC_TYPES.items()}

# FLEX's models as a Vertex page names them, with where and when (FLEX): "supported
# only in select Gemini 3.8 Flash and earlier models" (docs.cloud.google.com/gemini-
# enterprise-agent-platform/models/flex-paygo, read 2026-12-05) names 3.8 Flash. A model
# goes here only with the page that names it beside it.
FLEX_MODELS: tuple[str, ...] = ("gemini-3.8-flash",)
# Why flex is refused on a model no Vertex page names, and on Gemini 4 (FLEX).
FLEX_UNNAMED = (
    'Google\'s Flex PayGo page offers it on "select Gemini 3.8 Flash and earlier models" '
    "and names no earlier one in any copy read (docs.cloud.google.com/gemini-enterprise-"
    "agent-platform/models/flex-paygo, 2026-12-05), so only gemini-3.8-flash is offered "
    "flex here"
)
FLEX_NEWER = (
    "Google's Flex PayGo page: \"It is not supported in newer Gemini models such as "
    'Gemini 4 Argon" (docs.cloud.google.com/gemini-enterprise-agent-platform/models/'
    "flex-paygo, read 2026-12-05)"
)
# PRIORITY's list, in the English page's order (read 2026-12-04).
PRIORITY_MODELS: tuple[str, ...] = (
    "gemini-4-neon",
    "gemini-4-neon-cyber-permissive",
    "gemini-4-hydrogen",
    "gemini-4-carbon",
    "gemini-4-carbon-cyber-permissive",
    "gemini-4-argon",
    "gemini-4-argon-cyber-permissive",
    "gemini-3.8-flash-cyber",
    "gemini-3.8-flash",
    "gemini-3.7-flash",
    "gemini-3.6-flash",
    "gemini-3.5-flash-lite",
    "gemini-3.1-flash-lite-image",
    "gemini-3-pro-image",
    "gemini-nano-banana-2.1",
    "gemini-3.1-flash-image",
    "gemini-3.5-flash",
    "gemini-3.1-flash-lite",
    "gemini-3.1-pro-preview",
    "gemini-3-flash-preview",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
)
_TIER_MODELS: dict[Tier, tuple[str, ...]] = {"flex": FLEX_MODELS, "priority": PRIORITY_MODELS}
# The tiers besides standard each model is offered on (FLEX, PRIORITY); a model not
# listed is offered standard only.
TIER_OFFERS: dict[str, frozenset[Tier]] = {
    name: frozenset(tier for tier, listed in _TIER_MODELS.items() if name in listed)
    for name in (*PRIORITY_MODELS, *FLEX_MODELS)
}

# Vertex's implicit cache serves a shared prefix from this many tokens (CACHE, read
# 2026-11-26: "at least 2,048"), unless the model's own page says otherwise (G4A).
IMPLICIT_CACHE_MIN_TOKENS = 2048
CACHE_MIN_TOKENS: dict[str, int] = {
    "gemini-4-argon": 6_144,
    "gemini-4-argon-cyber-permissive": 6_144,
}


def cache_min_tokens(model_name: str) -> int:
    """The shortest shared prefix Vertex's implicit cache serves for ``model_name``."""
    known = find_model(model_name)
    return CACHE_MIN_TOKENS.get(known.name if known else model_name, IMPLICIT_CACHE_MIN_TOKENS)


def offered_tiers(model_name: str) -> tuple[Tier, ...]:
    """The tiers Google serves ``model_name`` on (standard always), in ``TIERS`` order."""
    known = find_model(model_name)
    offers = TIER_OFFERS.get(known.name, frozenset()) if known else frozenset()
    return tuple(t for t in TIERS if t == "standard" or t in offers)


def tier_refusal(model_name: str, tier: Tier, location: str) -> str | None:
    """Why ``tier`` cannot serve ``model_name`` at ``location``; None where it can."""
    if tier == "standard":
        return None
    page = "Flex PayGo" if tier == "flex" else "Priority PayGo"
    if tier not in offered_tiers(model_name):
        offered = ", ".join(offered_tiers(model_name))
        if tier == "flex":
            name = known.name if (known := find_model(model_name)) else model_name
            why = FLEX_NEWER if name.startswith("gemini-4") else FLEX_UNNAMED
            return f"{why} (tiers of {model_name} here: {offered})"
        return f"Google's {page} page does not list {model_name} (its tiers here: {offered})"
    if location not in TIER_LOCATIONS[tier]:
        where = ", ".join(TIER_LOCATIONS[tier])
        endpoints = "endpoint" if len(TIER_LOCATIONS[tier]) == 1 else "endpoints"
        return (
            f"Google serves {page} on the {where} {endpoints} only, and this deployment "
            f"calls {location!r} (NIAH_VERTEX_LOCATION)"
        )
    return None


def served_tier(traffic_type: str | None) -> Tier | None:
    """The tier a reply's ``trafficType`` names; None where it names none we know."""
    return TRAFFIC_TYPES.get(traffic_type or "")
