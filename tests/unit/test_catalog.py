"""The model catalog answers every question about a model, and the dispatcher asks it."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from niah.catalog.models import (
    CATALOG,
    LOCAL_MODEL,
    find_model,
    input_limit,
    output_limit,
    provider_for_model,
)
from niah.catalog.names import is_gemini_name, not_a_text_model
from niah.catalog.prices import library_prices, prices_for
from niah.core.money.pricing import call_cost, cost_of
from niah.core.request.spec import RunRequest
from niah.errors import ConfigurationError, RequestError
from niah.service.runs.admission_checks import check_budget
from niah.service.runs.model_checks import model_warnings
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
        ("gemini-3.5-flash", "gemini-3.5-flash"),
        ("gemini-3.1-flash-lite-preview", "gemini-3.1-flash-lite"),
        (LOCAL_MODEL, LOCAL_MODEL),
    ],
)
def test_a_model_name_finds_its_entry(name: str, entry: str) -> None:
    found = find_model(name)
    assert found is not None and found.name == entry


@pytest.mark.parametrize("name", ["gemini-2.5-flashy", "gemini-2.9-ultra", "llama-3", "gemini"])
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


def test_limits() -> None:
    assert input_limit("gemini", "gemini-2.5-pro") == 1_048_576
    assert input_limit("gemini", "gemini-9-ultra") is None  # unknown: the API will say
    window = get_settings().local_model_max_context
    assert input_limit("local", LOCAL_MODEL) == window - 1 - 24
    assert output_limit("gemini-4-argon") == 32_768  # non-streaming, as the service calls
    assert output_limit("gemini-3.5-flash") == 65_536


def test_every_gemini_entry_has_limits_thinking_and_a_source() -> None:
    for info in CATALOG.values():
        if info.provider != "gemini":
            continue
        assert info.input_tokens and info.output_tokens, info.name
        assert "read 2026-11-26" in info.source, info.name
        if info.thinking.control == "level":
            assert info.thinking.default_level in info.thinking.levels, info.name
            # 1.0, or none sent where Google says a custom temperature is ignored.
            assert info.temperature in (1.0, None), info.name


@pytest.mark.parametrize(
    ("name", "levels", "default", "stage"),
    [
        # Google's "Developer's guide to Gemini 3.5 Flash" table (read 2026-11-26).
        ("gemini-3.5-flash", ("minimal", "low", "medium", "high"), "medium", "GA"),
        ("gemini-3.1-pro-preview", ("low", "medium", "high"), "high", "Preview"),
        ("gemini-3.1-flash-lite", ("minimal", "low", "medium", "high"), "minimal", "GA"),
        ("gemini-3.6-flash", ("minimal", "low", "medium", "high"), "medium", "GA"),
    ],
)
def test_current_gemini_models_are_known_with_their_thinking(
    name: str, levels: tuple[str, ...], default: str, stage: str
) -> None:
    info = find_model(name)
    assert info is not None and not info.assumed
    assert (info.input_tokens, info.output_tokens) == (1_048_576, 65_536)
    assert info.thinking.levels == levels and info.thinking.default_level == default
    # G36: 3.6 Flash ignores a custom temperature on Vertex, so none is sent.
    assert info.lifecycle.stage == stage
    assert info.temperature == (None if name == "gemini-3.6-flash" else 1.0)


def test_an_unlisted_gemini_3_or_later_gets_the_gemini_3_handling_with_a_warning() -> None:
    info = find_model("gemini-3.9-flash")
    assert info is not None and info.assumed
    assert info.thinking.control == "level" and info.temperature == 1.0
    assert info.input_tokens is None and prices_for("gemini-3.9-flash") is None
    spec = RunRequest(model_name="gemini-3.9-flash", context_lengths=[1000])
    check_budget(spec)
    assert model_warnings(spec) == [
        "gemini-3.9-flash is not in the model catalog: called as a Gemini 3 model "
        "(thinking by level, temperature 1.0), with its limits and price unknown"
    ]
    assert find_model("gemini-2.7-flash") is None  # before Gemini 3: nothing assumed


@pytest.mark.parametrize(
    "name",
    [
        "gemini-2.5-flash-image",
        "gemini-3-pro-image-preview",
        "gemini-3.1-flash-lite-image",
        "gemini-2.5-flash-preview-tts",
        "gemini-3.8-flash-tts",
        "gemini-2.5-flash-native-audio-preview-09-2025",
        "gemini-live-2.5-flash",
        "gemini-3.8-live",
        "gemini-embedding-001",
        "gemini-2.5-computer-use-preview-10-2025",
    ],
)
def test_a_non_text_variant_is_refused_never_priced_as_text(name: str) -> None:
    assert not_a_text_model(name)
    assert find_model(name) is None
    assert prices_for(name) is None  # never its text family's price
    with pytest.raises(RequestError, match="not a text model") as caught:
        check_budget(RunRequest(model_name=name, context_lengths=[1000]))
    assert caught.value.field == "model_name"


USAGES = [  # (prompt, cached, output, thinking)
    (1_000, 0, 50, 0),
    (150_000, 60_000, 300, 1_200),
    (200_000, 0, 10, 0),
    (200_001, 100_000, 10, 500),
    (1_000_000, 900_000, 2_000, 8_000),
]


def _library_usd(model_id: str, prompt: int, cached: int, output: int, thinking: int) -> float:
    """What genai-prices itself charges for the call (thinking is billed as output)."""
    import genai_prices

    usage = genai_prices.Usage(
        input_tokens=prompt, cache_read_tokens=cached, output_tokens=output + thinking
    )
    return float(genai_prices.calc_price(usage, model_id, provider_id="google").total_price)


def test_every_catalogued_price_is_genai_prices_own() -> None:
    priced = [
        info.name
        for info in CATALOG.values()
        if info.provider == "gemini" and library_prices(info.name, dt.date.today())
    ]
    assert "gemini-3.5-flash" in priced and "gemini-2.5-pro" in priced
    for name in priced:
        for prompt, cached, output, thinking in USAGES:
            ours = cost_of(name, prompt, output, cached_tokens=cached, thinking_tokens=thinking).usd
            assert round(ours, 12) == round(
                _library_usd(name, prompt, cached, output, thinking), 12
            ), (name, prompt)
    # A pinned version is priced as its family.
    assert (
        cost_of("gemini-2.5-flash-001", 1_000, 50).usd == cost_of("gemini-2.5-flash", 1_000, 50).usd
    )


def test_the_current_models_genai_prices_lacks_are_exactly_these() -> None:
    unpriced = {
        info.name
        for info in CATALOG.values()
        if info.provider == "gemini"
        and not info.lifecycle.retired()
        and prices_for(info.name) is None
    }
    assert unpriced == {
        "gemini-4-argon-cyber-permissive",
        "gemini-4-carbon",
        "gemini-4-carbon-cyber-permissive",
        "gemini-4-hydrogen",
        "gemini-4-neon",
    }


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


@pytest.fixture
def price_table(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict], None]]:
    def set_table(table: dict) -> None:
        monkeypatch.setenv("NIAH_PRICE_TABLE", json.dumps(table))
        get_settings.cache_clear()

    yield set_table
    monkeypatch.delenv("NIAH_PRICE_TABLE", raising=False)
    get_settings.cache_clear()


def test_an_override_of_one_field_keeps_the_others(price_table: Callable[[dict], None]) -> None:
    library = prices_for("gemini-2.5-pro")
    assert library is not None and library.long_context_threshold == 200_000
    price_table({"gemini-2.5-pro": {"input": 1.0, "output": 8.0}})
    merged = prices_for("gemini-2.5-pro")
    assert merged is not None
    assert (merged.input, merged.output) == (1.0, 8.0)
    assert (merged.cached_input, merged.long_context_threshold) == (0.125, 200_000)
    assert (merged.long_input, merged.long_output, merged.long_cached_input) == (2.5, 15.0, 0.25)
    # 300k tokens: the long tier still applies, and a cached call stays priced.
    cost = cost_of("gemini-2.5-pro", 300_000, 0, cached_tokens=100_000)
    assert cost.priced and cost.usd == pytest.approx((200_000 * 2.5 + 100_000 * 0.25) / 1e6)


def test_overrides_apply_to_pinned_ids(price_table: Callable[[dict], None]) -> None:
    price_table(
        {
            "gemini-2.5-flash": {"output": 3.0},
            "gemini-2.5-flash-001": {"input": 0.5},
            "my-model": {"input": 3, "output": 4},
        }
    )
    pinned = prices_for("gemini-2.5-flash-001")
    family = prices_for("gemini-2.5-flash")
    assert pinned is not None and family is not None
    assert (pinned.input, pinned.output, pinned.cached_input) == (0.5, 3.0, 0.03)
    assert (family.input, family.output) == (0.3, 3.0)
    assert cost_of("my-model", 1_000_000, 0).usd == 3.0


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
    [("gemini-2.5-pro", -1), ("gemini-2.5-pro", 128), ("gemini-2.5-flash", 0), ("gemini-9", -1)],
)
def test_a_thinking_budget_the_model_takes_passes(model: str, budget: int) -> None:
    # The budget-controlled models are the retired 2.5 family: run only with allow_retired.
    check_budget(
        RunRequest(
            model_name=model, context_lengths=[1000], thinking_budget=budget, allow_retired=True
        )
    )


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
    assert f"retired on Vertex AI on {retired}; Google names {replacement} instead" in (
        caught.value.message
    )
    # Each replacement here is itself retired since: the message names what is current.
    assert "(all since retired; current: gemini-4-argon" in caught.value.message


def test_a_model_past_its_date_is_refused_unless_allowed_and_then_warned() -> None:
    with pytest.raises(RequestError, match="set allow_retired"):
        check_budget(RunRequest(model_name="gemini-2.5-flash", context_lengths=[1000]))
    spec = RunRequest(model_name="gemini-2.5-flash", context_lengths=[1000], allow_retired=True)
    check_budget(spec)  # accepted
    (warning,) = model_warnings(spec)
    assert "2026-10-20" in warning and "called anyway (allow_retired)" in warning
    assert model_warnings(RunRequest(context_lengths=[1000])) == []


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("{not json", "is not JSON"),
        ('{"m": {"input": 1}}', "m has no known price, so its entry needs output"),
        ('{"m": {"inputs": 1, "output": 2}}', "unknown field"),
        ('{"m": {"input": -1, "output": 2}}', "m.input must be a number of 0 or more"),
        ('{"m": 1}', "entry must be an object of prices"),
        ("[1]", "must be a JSON object"),
    ],
)
def test_a_bad_price_table_names_the_setting(
    price_table: Callable[[dict], None], monkeypatch: pytest.MonkeyPatch, table: str, message: str
) -> None:
    monkeypatch.setenv("NIAH_PRICE_TABLE", table)
    get_settings.cache_clear()
    with pytest.raises(ConfigurationError, match=message):
        prices_for("m")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model_name": "gemini-3.5-flash", "thinking_budget": 1024}, "by thinking_level"),
        (
            {"model_name": "gemini-3.1-pro-preview", "thinking_level": "minimal"},
            "low, medium, high",
        ),
        ({"model_name": "gemini-9-ultra", "thinking_budget": 1024}, "by thinking_level"),
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
