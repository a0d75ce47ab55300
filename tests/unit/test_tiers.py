"""Pricing tiers and Gemini 4's caching (issue 52): the estimate, the hold, the call, the cell.

Google's facts are in ``niah.catalog.tiers`` with their pages; these tests hold the
service to them: Argon caches no prefix under 6,144 tokens and bills a cached token at
5 % of input, Priority PayGo is offered on the models its page names, Flex PayGo on none
(no Vertex page read names one: refused with that reason, and Argon with its own), the
tier reaches Vertex as the header its pages name, and a cell records the tier the reply
says it was served on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from niah.catalog.tiers import Tier
from tests.unit import test_vertex_standin
from tests.unit.test_cli import niah
from tests.unit.test_vertex_standin import configure, run_one_gemini_cell

# The HTTP stand-in of Vertex, as test_vertex_standin runs it.
standin = test_vertex_standin.standin

# Lengths whose shared prefixes (about length x depth) fall below 2,048, between 2,048
# and 6,144, and above 6,144 tokens; the primer is the 16,000-token cell at depth 100.
GRID = (
    "--context_lengths", "4000", "8000", "16000",
    "--document_depth_percents", "25", "50", "100",
)  # fmt: skip


def estimate(*args: str) -> dict[str, Any]:
    """``niah run --estimate --json`` of GRID with ``args``."""
    done = niah("run", *GRID, *args, "--estimate", "--json")
    assert done.returncode == 0, done.stderr
    figures: dict[str, Any] = json.loads(done.stdout)
    return figures


@pytest.fixture(scope="module")
def argon() -> dict[str, Any]:
    return estimate("--model_name", "gemini-4-argon")


@pytest.fixture(scope="module")
def flash() -> dict[str, Any]:
    return estimate("--model_name", "gemini-3.8-flash")


def test_argon_credits_no_cache_under_6144_tokens_where_3_8_flash_caches_from_2048(
    argon: dict[str, Any], flash: dict[str, Any]
) -> None:
    assert (argon["cache_min_tokens"], flash["cache_min_tokens"]) == (6_144, 2_048)
    argon_cached = {c["cell_id"]: c["cached_tokens"] for c in argon["per_cell"]}
    flash_cached = {c["cell_id"]: c["cached_tokens"] for c in flash["per_cell"]}
    assert argon_cached.keys() == flash_cached.keys()
    # The same prompts (one tokenizer): Argon credits exactly Flash's prefixes of 6,144
    # tokens or more, and nothing for the ones between 2,048 and 6,144.
    between = {cell for cell, n in flash_cached.items() if 2_048 <= n < 6_144}
    assert between, flash_cached  # the grid has such prefixes: the test means something
    assert all(argon_cached[cell] == 0 for cell in between)
    assert argon_cached == {cell: (n if n >= 6_144 else 0) for cell, n in flash_cached.items()}
    assert any(n >= 6_144 for n in argon_cached.values())


def test_argon_prices_a_cached_read_at_gemini_4s_rate(argon: dict[str, Any]) -> None:
    from niah.catalog.prices import prices_for

    prices = prices_for("gemini-4-argon")
    assert prices is not None and prices.cached_input is not None
    # Gemini 4's implicit cache: 95 % off the input rate (G4's cached rate in genai-prices).
    assert prices.cached_input == pytest.approx(0.05 * prices.input, rel=1e-12)
    expected = sum(
        (c["prompt_tokens"] - c["cached_tokens"]) * prices.input
        + c["cached_tokens"] * prices.cached_input
        + c["max_output_tokens"] * prices.output
        for c in argon["per_cell"]
    )
    assert argon["cache_aware"]["cost_usd"] == pytest.approx(expected / 1e6, abs=1e-6)
    assert argon["cache_aware"]["cost_usd"] < argon["naive"]["cost_usd"]


def test_priority_is_1_8x_and_flex_half_the_standard_rate_and_batch_beside_them(
    flash: dict[str, Any],
) -> None:
    from niah.catalog.tiers import FLEX_UNNAMED

    priority = estimate("--model_name", "gemini-3.8-flash", "--tier", "priority")
    assert priority["tier"] == "priority" and flash["tier"] == "standard"
    # Nothing cached in the naive figure: every token at exactly 1.8 times the rate.
    naive = flash["naive"]["cost_usd"]
    assert priority["naive"]["cost_usd"] == pytest.approx(1.8 * naive, abs=2e-6)
    tiers = flash["tiers"]
    assert tiers["priority"]["naive_usd"] == priority["naive"]["cost_usd"]
    assert tiers["standard"]["cache_aware_usd"] == flash["cache_aware"]["cost_usd"]
    assert tiers["batch"]["naive_usd"] == flash["batch"]["cost_usd"]
    # Vertex's Flex PayGo page names 3.8 Flash: "a 50% discount compared to Standard".
    flex = estimate("--model_name", "gemini-3.8-flash", "--tier", "flex")
    assert flex["tier"] == "flex" and tiers["flex"]["offered"] is True
    assert flex["naive"]["cost_usd"] == pytest.approx(0.5 * naive, abs=2e-6)
    assert tiers["flex"]["naive_usd"] == flex["naive"]["cost_usd"]
    # An earlier model the page selects but never names: refused with the reason.
    refused = niah("run", *GRID, "--model_name", "gemini-3.7-flash", "--tier", "flex",
                   "--estimate")  # fmt: skip
    assert refused.returncode == 2 and "names no earlier one in any copy read" in refused.stderr
    assert FLEX_UNNAMED.split(" (")[0] in " ".join(refused.stderr.split())
    # The hold prices the chosen tier: Priority's is 1.8 times the standard's.
    assert priority["held_usd"] == pytest.approx(1.8 * flash["held_usd"], rel=1e-5)


def test_flex_on_argon_is_refused_with_the_reason_and_its_estimate_says_why(
    argon: dict[str, Any],
) -> None:
    refused = niah("run", *GRID, "--model_name", "gemini-4-argon", "--tier", "flex", "--estimate")
    assert refused.returncode == 2
    assert "tier" in refused.stderr and "Flex PayGo" in refused.stderr
    assert "standard or priority" in refused.stderr  # the fix
    flex = argon["tiers"]["flex"]
    assert flex["offered"] is False and "gemini-4-argon" in flex["reason"]
    assert "not supported in newer Gemini models such as Gemini 4 Argon" in flex["reason"]
    assert argon["tiers"]["priority"]["offered"] is True
    text = niah("run", *GRID, "--model_name", "gemini-4-argon", "--estimate")
    assert "flex: not offered: Google's Flex PayGo page" in text.stdout


def test_a_tier_is_refused_off_the_global_endpoint_in_batch_and_for_other_providers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from niah.core.request.spec import RunRequest
    from niah.settings import get_settings

    def refusal(**body: Any) -> str:
        with pytest.raises(ValueError) as caught:
            RunRequest.model_validate(body)
        return str(caught.value)

    monkeypatch.setenv("NIAH_VERTEX_LOCATION", "us-central1")
    get_settings.cache_clear()
    try:
        message = refusal(model_name="gemini-3.8-flash", tier="priority")
        assert "tier: priority refused" in message and "global, us, eu endpoints" in message
        message = refusal(model_name="gemini-3.8-flash", tier="flex")
        assert "tier: flex refused" in message and "global endpoint" in message
    finally:
        monkeypatch.undo()
        get_settings.cache_clear()
    batch = refusal(model_name="gemini-3.8-flash", tier="flex", execution="batch")
    assert batch.count("tier: flex applies to online calls") == 1
    assert "tier: flex is a Vertex AI pricing tier" in refusal(tier="flex")
    # standard spelt out names the same run as leaving it out
    plain = RunRequest.model_validate({"model_name": "gemini-3.8-flash"})
    spelt = RunRequest.model_validate({"model_name": "gemini-3.8-flash", "tier": "standard"})
    priority = RunRequest.model_validate({"model_name": "gemini-3.8-flash", "tier": "priority"})
    assert plain.run_id() == spelt.run_id() != priority.run_id()


def usage_cost(cell: dict[str, Any], tier: Tier) -> float:
    """What a stored cell's usage costs at ``tier``'s rates, by its model's prices."""
    from niah.catalog.prices import prices_for
    from niah.core.money.pricing import call_cost

    usage = cell["usage"]
    return call_cost(
        prices_for(cell["model"]),
        usage["prompt_token_count"],
        usage["candidates_token_count"] or 0,
        cached_tokens=usage["cached_content_token_count"] or 0,
        thinking_tokens=usage["thoughts_token_count"] or 0,
        tier=tier,
    ).usd


def test_a_cell_records_the_tier_it_was_served_on_and_asks_for_it_as_google_documents(
    standin: tuple[str, Any], essay_blobs: Any
) -> None:
    url, _ = standin
    store, run_id, outcome = run_one_gemini_cell(
        essay_blobs, model_name="gemini-3.8-flash", allow_retired=False, tier="priority"
    )
    assert outcome == "answered"
    [cell] = store.list_cells(run_id)
    sent = requests.get(f"{url}/_standin/requests", timeout=5).json()["requests"]
    calls = [r for r in sent if r["kind"] == "generate"]
    # The header Google's Priority PayGo page names, and no body field it does not.
    assert [r["shared_request_type"] for r in calls] == ["priority"]
    assert "serviceTier" not in calls[0]["body"]
    assert cell["service_tier"] == {
        "asked": "priority",
        "served": "priority",
        "traffic_type": "ON_DEMAND_PRIORITY",
        "billed_as": "priority",
        "source": "usageMetadata.trafficType",
    }
    assert cell["cost_usd"] == pytest.approx(usage_cost(cell, "priority"), abs=1e-8)
    assert cell["usage"]["cached_content_token_count"] in (None, 0)  # nothing cached:
    assert cell["cost_usd"] == pytest.approx(usage_cost(cell, "standard") * 1.8, abs=1e-8)


def test_a_reply_on_another_tier_or_none_is_recorded_as_such(
    standin: tuple[str, Any], essay_blobs: Any
) -> None:
    url, _ = standin
    # Served standard though priority was asked (Google names ON_DEMAND): priced standard.
    configure(url, traffic_type="ON_DEMAND")
    store, run_id, _ = run_one_gemini_cell(
        essay_blobs, model_name="gemini-3.8-flash", allow_retired=False, tier="priority"
    )
    [cell] = store.list_cells(run_id)
    assert (cell["service_tier"]["served"], cell["service_tier"]["billed_as"]) == (
        "standard",
        "standard",
    )
    # A reply that names no trafficType: the tier asked, and the record says so.
    configure(url, traffic_type="")
    store, run_id, _ = run_one_gemini_cell(
        essay_blobs, model_name="gemini-3.8-flash", allow_retired=False, tier="priority"
    )
    [cell] = store.list_cells(run_id)
    assert cell["service_tier"]["served"] is None
    assert cell["service_tier"]["billed_as"] == "priority"
    assert cell["service_tier"]["source"].startswith("asked")
    # A standard run sends no tier header at all.
    configure(url)
    run_one_gemini_cell(essay_blobs, model_name="gemini-3.8-flash", allow_retired=False)
    sent = requests.get(f"{url}/_standin/requests", timeout=5).json()["requests"]
    assert [r["shared_request_type"] for r in sent if r["kind"] == "generate"] == [None]


def test_a_cut_off_calls_estimate_and_a_stored_run_are_at_the_runs_tier() -> None:
    from niah.core.money.pricing import spend_summary
    from niah.core.runs import RunRecord

    cut_off = [{"status": "started", "planned_prompt_tokens": 100_000}]
    standard = spend_summary(cut_off, "gemini-3.8-flash")["estimated_usd"]
    flex = spend_summary(cut_off, "gemini-3.8-flash", "flex")["estimated_usd"]
    priority = spend_summary(cut_off, "gemini-3.8-flash", "priority")["estimated_usd"]
    assert standard > 0
    assert (flex, priority) == (pytest.approx(standard / 2), pytest.approx(standard * 1.8))
    flex_run = {"spec": {"model_name": "gemini-3.8-flash", "tier": "flex"}}
    assert RunRecord.from_document(flex_run, "run-f").tier == "flex"
    assert RunRecord.from_document({"spec": {}}, "run-s").tier == "standard"


def test_niah_models_lists_each_models_tiers_and_cache_minimum() -> None:
    from niah.cli.models import model_rows

    rows = {row["model"]: row for row in model_rows()}
    assert rows["gemini-4-argon"]["tiers"] == ["standard", "priority"]
    assert rows["gemini-4-argon"]["cache_min_tokens"] == 6_144
    assert rows["gemini-3.8-flash"]["tiers"] == ["standard", "flex", "priority"]
    assert [name for name, row in rows.items() if "flex" in row["tiers"]] == ["gemini-3.8-flash"]
    assert rows["gemini-3.8-flash"]["cache_min_tokens"] == 2_048


# Google's English Priority PayGo page, docs.cloud.google.com/vertex-ai/generative-ai/
# docs/priority-paygo, read 2026-12-04: its model list, in its order.
PRIORITY_PAGE_MODELS = [
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


def test_priority_is_offered_on_every_model_and_endpoint_the_english_page_names() -> None:
    from niah.catalog.models import find_model
    from niah.catalog.tiers import PRIORITY_MODELS, offered_tiers, tier_refusal

    assert tuple(PRIORITY_PAGE_MODELS) == PRIORITY_MODELS
    in_catalog = [name for name in PRIORITY_PAGE_MODELS if find_model(name)]
    assert {"gemini-4-neon", "gemini-4-carbon", "gemini-3-flash-preview"} <= set(in_catalog)
    for name in in_catalog:
        assert "priority" in offered_tiers(name), name
        # "In general, Priority PayGo is supported on the global, us, and eu endpoints"
        for location in ("global", "us", "eu"):
            assert tier_refusal(name, "priority", location) is None, (name, location)
        assert tier_refusal(name, "priority", "us-central1") is not None
    # Not on the page: refused, naming the page.
    refusal = tier_refusal("gemini-3-pro-preview", "priority", "global")
    assert refusal and "Priority PayGo page does not list gemini-3-pro-preview" in refusal


def test_flex_is_offered_only_on_the_model_the_vertex_page_names() -> None:
    """Google's Vertex Flex PayGo page names Gemini 3.8 Flash alone (read 2026-12-05).

    "select Gemini 3.8 Flash and earlier models": the earlier ones are named in no copy
    read. Before, seven 3.x models were offered flex from the Gemini API's pages
    (ai.google.dev), which are not Vertex's. Each refusal gives its reason.
    """
    from niah.catalog.models import CATALOG
    from niah.catalog.tiers import (
        FLEX_MODELS,
        FLEX_NEWER,
        FLEX_UNNAMED,
        offered_tiers,
        tier_refusal,
    )

    assert FLEX_MODELS == ("gemini-3.8-flash",)
    assert tier_refusal("gemini-3.8-flash", "flex", "global") is None
    for info in CATALOG.values():
        if info.name == "gemini-3.8-flash":
            assert "flex" in offered_tiers(info.name)
            continue
        assert "flex" not in offered_tiers(info.name), info.name
        refusal = tier_refusal(info.name, "flex", "global") or ""
        reason = FLEX_NEWER if info.name.startswith("gemini-4") else FLEX_UNNAMED
        assert refusal.startswith(reason), info.name
    assert "select Gemini 3.8 Flash and earlier models" in FLEX_UNNAMED


def test_the_estimate_marks_the_row_the_run_pays_and_offers_only_the_models_tiers() -> None:
    args = ("--model_name", "gemini-3.8-flash")
    batch_text = niah("run", *GRID, *args, "--batch", "--estimate").stdout
    assert "this run's tier: batch" in batch_text
    marked = [line.strip() for line in batch_text.splitlines() if "(this run)" in line]
    assert len(marked) == 1 and marked[0].startswith("batch (this run):")
    assert estimate(*args, "--batch")["tier_row"] == "batch"
    assert estimate(*args)["tier_row"] == "standard"
    online = niah("run", *GRID, *args, "--estimate").stdout
    assert "(--tier standard, flex or priority)" in online
    assert [ln.strip()[:8] for ln in online.splitlines() if "(this run)" in ln] == ["standard"]
    argon_text = niah("run", *GRID, "--model_name", "gemini-4-argon", "--estimate").stdout
    assert "(--tier standard or priority)" in argon_text
