"""What the Vertex stand-in knows of Google's pricing tiers and implicit cache: its own copy.

Kept apart from ``niah.catalog.tiers`` on purpose: a stand-in that imported our header
name or our model lists would agree with any mistake in them, so a misspelt header or a
wrong list would still pass. Every fact is Google's, read 2026-12-04 with the search
tool (docs corpus):

- The header: docs.cloud.google.com/vertex-ai/generative-ai/docs/flex-paygo and
  .../priority-paygo: "you must include the X-Vertex-AI-LLM-Shared-Request-Type header",
  with the value ``flex`` or ``priority``.
- Priority PayGo's models and endpoints: the English priority-paygo page's list, and
  "In general, Priority PayGo is supported on the global, us, and eu endpoints".
- Flex PayGo: "supported only in select Gemini 3.8 Flash and earlier models. It is not
  supported in newer Gemini models such as Gemini 4 Argon" and "in the global endpoint
  only"; no stored copy of the page keeps its model list (searched again 2026-12-05).
  So the stand-in serves flex on the one model that sentence names, Gemini 3.8 Flash, on
  the global endpoint (``FLEX_MODELS``), and any other flex call standard, as for any
  tier not offered.
- A model or endpoint not offered the tier: Google's pages do not say what Vertex
  answers (docs/cost.md says so); the stand-in serves it Standard PayGo
  (``trafficType: ON_DEMAND``), which the worker records as served standard and bills so.
- Implicit cache minimums: Vertex's context-cache overview ("at least 2,048" tokens,
  read 2026-11-26) and the Gemini 4 Argon guide ("shared prompt prefixes of 6,144
  tokens or more").
"""

from __future__ import annotations

SHARED_REQUEST_TYPE_HEADER = "X-Vertex-AI-LLM-Shared-Request-Type"

PRIORITY_MODELS = frozenset(
    [
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
    ]
)
# The models a Vertex page names for Flex PayGo: "select Gemini 3.8 Flash and earlier
# models" names 3.8 Flash alone (see above).
FLEX_MODELS: frozenset[str] = frozenset({"gemini-3.8-flash"})

TIER_MODELS = {"flex": FLEX_MODELS, "priority": PRIORITY_MODELS}
TIER_LOCATIONS = {"flex": ("global",), "priority": ("global", "us", "eu")}
TRAFFIC_BY_TIER = {"flex": "ON_DEMAND_FLEX", "priority": "ON_DEMAND_PRIORITY"}

IMPLICIT_CACHE_MIN_TOKENS = 2_048
CACHE_MIN_TOKENS = {"gemini-4-argon": 6_144, "gemini-4-argon-cyber-permissive": 6_144}


def served_traffic_type(header_value: str | None, model: str, location: str) -> str:
    """The ``trafficType`` the stand-in serves a call that sent ``header_value``."""
    tier = (header_value or "").lower()
    if model in TIER_MODELS.get(tier, ()) and location in TIER_LOCATIONS.get(tier, ()):
        return TRAFFIC_BY_TIER[tier]
    return "ON_DEMAND"


def cache_min_tokens(model: str) -> int:
    """The shortest shared prefix Vertex's implicit cache serves for ``model``."""
    return CACHE_MIN_TOKENS.get(model, IMPLICIT_CACHE_MIN_TOKENS)
