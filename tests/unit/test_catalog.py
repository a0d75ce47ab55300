"""The model catalog answers every question about a model, and the dispatcher asks it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from niah.core.pricing import call_cost, cost_of
from niah.core.spec import RunRequest
from niah.errors import ConfigurationError, RequestError
from niah.models.catalog import (
    CATALOG,
    LOCAL_MODEL,
    Prices,
    default_output_tokens,
    find_model,
    input_limit,
    is_gemini_name,
    prices_for,
    provider_for_model,
)
from niah.service.dispatch import check_budget, model_warnings
from niah.settings import get_settings


@pytest.mark.parametrize(
    ("name", "entry"),
    [
        ("gemini-2.5-flash", "gemini-2.5-flash"),
        ("gemini-2.5-flash-001", "gemini-2.5-flash"),  # a pinned version takes its family
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),  # not flash's entry
        ("gemini-2.5-flash-lite-preview-06-17", "gemini-2.5-flash-lite"),
        ("publishers/google/models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini-3-pro-preview", "gemini-3-pro-preview"),
        (LOCAL_MODEL, LOCAL_MODEL),
    ],
)
def test_a_model_name_finds_its_entry(name: str, entry: str) -> None:
    found = find_model(name)
    assert found is not None and found.name == entry


@pytest.mark.parametrize("name", ["gemini-2.5-flashy", "gemini-9-ultra", "llama-3", "gemini"])
def test_an_unknown_model_has_no_entry(name: str) -> None:
    assert find_model(name) is None


@pytest.mark.parametrize(
    ("name", "provider"),
    [
        (LOCAL_MODEL, "local"),
        ("gemini-2.5-pro", "gemini"),
        ("gemini-9-ultra", "gemini"),  # unknown to the catalog, still a Gemini ID
        ("gemini-pro", "gemini"),  # refused later as not a Gemini ID, with that message
        ("meta-llama/Llama-3.1-8B", "openai_compatible"),
    ],
)
def test_the_provider_comes_from_the_catalog_or_the_name(name: str, provider: str) -> None:
    assert provider_for_model(name) == provider
    assert RunRequest(model_name=name).provider() == provider


def test_gemini_ids_need_a_version_digit() -> None:
    assert is_gemini_name("gemini-2.5-flash")
    assert is_gemini_name("publishers/google/models/gemini-3-pro-preview")
    assert not is_gemini_name("gemini-pro") and not is_gemini_name("gemma-3")


@pytest.mark.parametrize(
    "name",
    [
        "models/gemini-3-pro-preview",
        "projects/another/locations/us-central1/publishers/google/models/gemini-2.5-flash",
        "publishers/someone/models/gemini-2.5-flash",
        "gemini-2.5-flash/../../x",
        "gemini-2..5-flash",
        "gemini-2.5-flash:generateContent",
    ],
)
def test_a_gemini_name_is_checked_whole(name: str) -> None:
    assert not is_gemini_name(name)


def test_limits_and_output_budgets() -> None:
    assert input_limit("gemini", "gemini-2.5-pro") == 1_048_576
    assert input_limit("gemini", "gemini-9-ultra") is None  # unknown: the API will say
    window = get_settings().local_model_max_context
    assert input_limit("local", LOCAL_MODEL) == window - 1 - 24
    assert default_output_tokens("gemini", "gemini-2.5-flash") == 300  # the harness's
    assert default_output_tokens("local", LOCAL_MODEL) == 24


def test_every_gemini_entry_has_limits_and_every_current_one_a_price() -> None:
    for info in CATALOG.values():
        if info.provider != "gemini":
            continue
        assert info.input_tokens and info.output_tokens, info.name
        if not info.lifecycle.retired():
            assert info.prices is not None, info.name


def test_the_long_context_tier_prices_the_whole_request() -> None:
    pro = prices_for("gemini-2.5-pro")
    assert pro is not None
    assert call_cost(pro, 200_000, 1_000).usd == pytest.approx(
        (200_000 * 1.25 + 1_000 * 10.0) / 1e6
    )
    assert call_cost(pro, 200_001, 1_000).usd == pytest.approx(
        (200_001 * 2.50 + 1_000 * 15.0) / 1e6
    )


def test_an_unpriced_model_costs_unknown_not_zero() -> None:
    cost = cost_of("gemini-9-ultra", 1_000, 10)
    assert not cost.priced


def test_the_price_table_setting_overrides_the_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "NIAH_PRICE_TABLE",
        json.dumps(
            {
                "gemini-2.5-flash": {"input": 1.0, "output": 2.0},
                "my-model": {"input": 3, "output": 4},
            }
        ),
    )
    get_settings.cache_clear()
    try:
        assert prices_for("gemini-2.5-flash-001") == Prices(1.0, 2.0, checked="NIAH_PRICE_TABLE")
        assert cost_of("my-model", 1_000_000, 0).usd == 3.0
    finally:
        monkeypatch.delenv("NIAH_PRICE_TABLE")
        get_settings.cache_clear()


@pytest.mark.parametrize(
    ("model", "budget", "message"),
    [
        ("gemini-2.5-pro", 0, "cannot turn thinking off"),
        ("gemini-2.5-pro", 64, "128 to 32768"),
        ("gemini-2.5-flash", 30_000, "0 to 24576"),
        ("gemini-2.0-flash", 1024, "does not think"),
    ],
)
def test_a_thinking_budget_the_model_cannot_take_is_refused(
    model: str, budget: int, message: str
) -> None:
    spec = RunRequest(model_name=model, context_lengths=[1000], thinking_budget=budget)
    with pytest.raises(RequestError, match=message) as caught:
        check_budget(spec)
    assert caught.value.field == "thinking_budget"


@pytest.mark.parametrize(
    ("model", "budget"),
    [("gemini-2.5-pro", -1), ("gemini-2.5-pro", 128), ("gemini-2.5-flash", 0), ("gemini-9", 5)],
)
def test_a_thinking_budget_the_model_takes_passes(model: str, budget: int) -> None:
    check_budget(RunRequest(model_name=model, context_lengths=[1000], thinking_budget=budget))


@pytest.mark.parametrize(
    ("field", "options", "retired", "replacement"),
    [
        ("model_name", {"model_name": "gemini-1.5-pro"}, "2025-09-24", "gemini-2.5-pro"),
        ("model_name", {"model_name": "gemini-2.0-flash-001"}, "2026-06-01", "gemini-2.5-flash"),
        (
            "evaluator_model_name",
            {"scorer": "judge", "evaluator_model_name": "gemini-2.0-flash-lite"},
            "2026-06-01",
            "gemini-2.5-flash-lite",
        ),
    ],
)
def test_a_retired_model_is_refused_naming_its_replacement(
    field: str, options: dict[str, Any], retired: str, replacement: str
) -> None:
    with pytest.raises(RequestError) as caught:
        check_budget(RunRequest(context_lengths=[1000], **options))
    assert caught.value.field == field
    assert retired in caught.value.message and f"replacement, {replacement}" in caught.value.message
    # Each replacement here is itself past its date: the message names what is current.
    assert "current Gemini models: gemini-3-pro-preview" in caught.value.message


def test_a_model_past_its_date_without_a_named_replacement_is_warned() -> None:
    spec = RunRequest(model_name="gemini-2.5-flash", context_lengths=[1000])
    check_budget(spec)  # accepted
    (warning,) = model_warnings(spec)
    assert "2026-10-20" in warning
    assert model_warnings(RunRequest(context_lengths=[1000])) == []


@pytest.mark.parametrize(
    "table", ["{not json", '{"m": {"input": 1}}', '{"m": {"inputs": 1}}', "[1]"]
)
def test_a_bad_price_table_names_the_setting(monkeypatch: pytest.MonkeyPatch, table: str) -> None:
    monkeypatch.setenv("NIAH_PRICE_TABLE", table)
    get_settings.cache_clear()
    try:
        with pytest.raises(ConfigurationError, match="NIAH_PRICE_TABLE must be a JSON object"):
            prices_for("m")
    finally:
        monkeypatch.delenv("NIAH_PRICE_TABLE")
        get_settings.cache_clear()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model_name": "gemini-3-pro-preview", "thinking_budget": 1024}, "by thinking_level"),
        ({"model_name": "gemini-3-pro-preview", "thinking_level": "medium"}, "low, high"),
        ({"model_name": "gemini-2.5-flash", "thinking_level": "low"}, "takes thinking_budget"),
        (
            {"model_name": "gemini-3-flash-preview", "thinking_level": "low", "thinking_budget": 0},
            "or thinking_level",
        ),
    ],
)
def test_thinking_is_set_the_way_each_model_takes_it(options: dict, message: str) -> None:
    spec = RunRequest(context_lengths=[1000], **options)
    with pytest.raises(RequestError, match=message):
        check_budget(spec)


def test_gemini_3_levels_pass() -> None:
    check_budget(
        RunRequest(
            model_name="gemini-3-flash-preview", context_lengths=[1000], thinking_level="minimal"
        )
    )
