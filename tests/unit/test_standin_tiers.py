"""The Vertex stand-in answers tiers from its own copy of Google's pages, not ours."""

from __future__ import annotations

import inspect

from niah_devtools import standin, standin_cache, standin_replies
from niah_devtools.standin_replies import traffic_type_for
from niah_devtools.standin_tiers import SHARED_REQUEST_TYPE_HEADER, cache_min_tokens


def test_the_standin_spells_googles_header_and_minimums_itself() -> None:
    # Google's Flex and Priority PayGo pages, read 2026-12-04.
    assert SHARED_REQUEST_TYPE_HEADER == "X-Vertex-AI-LLM-Shared-Request-Type"
    for module in (standin, standin_cache, standin_replies):
        assert "niah.catalog" not in inspect.getsource(module), module.__name__
    assert (cache_min_tokens("gemini-4-argon"), cache_min_tokens("gemini-3.8-flash")) == (
        6_144,
        2_048,
    )


def test_a_tier_asked_where_google_does_not_offer_it_is_served_standard() -> None:
    # Flex PayGo: the Vertex page names 3.8 Flash alone, on the global endpoint
    # (standin_tiers), and "not supported in newer Gemini models such as Gemini 4 Argon".
    assert traffic_type_for({}, "flex", "gemini-3.8-flash", "global") == "ON_DEMAND_FLEX"
    assert traffic_type_for({}, "flex", "gemini-3.8-flash", "us-central1") == "ON_DEMAND"
    assert traffic_type_for({}, "flex", "gemini-3.7-flash", "global") == "ON_DEMAND"
    assert traffic_type_for({}, "flex", "gemini-4-argon", "global") == "ON_DEMAND"
    assert traffic_type_for({}, "priority", "gemini-4-neon", "eu") == "ON_DEMAND_PRIORITY"
    assert traffic_type_for({}, "priority", "gemini-4-argon", "us-central1") == "ON_DEMAND"
    assert traffic_type_for({}, "priority", "gemma-3-270m-local", "global") == "ON_DEMAND"
    assert traffic_type_for({}, None, "gemini-3.8-flash", "global") == "ON_DEMAND"
