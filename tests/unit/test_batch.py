"""Batch execution (issue 21): the run option, its identity, and batch prices."""

import pytest

from niah.catalog.prices import Prices, prices_for
from niah.core.money.pricing import call_cost, cost_of
from niah.errors import RequestError
from niah.service.runs.request_body import parse_request

GEMINI = {
    "model_name": "gemini-3.1-pro-preview",
    "context_lengths": [1000],
    "document_depth_percents": [50],
}


def test_batch_is_part_of_the_runs_identity_and_online_is_the_default() -> None:
    unset = parse_request(GEMINI)
    online = parse_request(GEMINI | {"execution": "online"})
    batch = parse_request(GEMINI | {"execution": "batch"})
    assert unset.run_id() == online.run_id() != batch.run_id()
    assert batch.is_batch() and not online.is_batch() and online.execution is None


def test_batch_is_refused_for_a_model_vertex_does_not_serve() -> None:
    with pytest.raises(RequestError) as refused:
        parse_request(GEMINI | {"model_name": "gemma-3-270m-local", "execution": "batch"})
    assert refused.value.field == "execution" and "gemini-*" in refused.value.message


def test_batch_bills_half_the_input_and_output_rates_and_cached_tokens_at_the_cached_rate() -> None:
    prices = Prices(input=1.25, output=10.0, cached_input=0.125)
    online = call_cost(prices, 10_000, 200, cached_tokens=4_000, thinking_tokens=300)
    batch = call_cost(prices, 10_000, 200, cached_tokens=4_000, thinking_tokens=300, batch=True)
    assert online.usd == pytest.approx((6_000 * 1.25 + 4_000 * 0.125 + 500 * 10.0) / 1e6)
    # The cache's discount takes precedence over batch's: the two do not stack.
    assert batch.usd == pytest.approx((6_000 * 0.625 + 4_000 * 0.125 + 500 * 5.0) / 1e6)
    assert batch.usd_without_cache == pytest.approx((10_000 * 0.625 + 500 * 5.0) / 1e6)
    # With nothing cached, batch is exactly half of online.
    assert call_cost(prices, 10_000, 200, batch=True).usd == pytest.approx(
        call_cost(prices, 10_000, 200).usd / 2
    )
    # A model without a cached rate: cached input is billed as batch input.
    plain = Prices(input=1.0, output=2.0)
    assert call_cost(plain, 1_000, 0, cached_tokens=1_000, batch=True).usd == pytest.approx(
        500 / 1e6
    )


def test_a_catalog_model_in_batch_costs_half_above_the_long_context_tier_too() -> None:
    prices = prices_for("gemini-3.1-pro-preview")
    assert prices is not None and prices.long_context_threshold is not None
    long = prices.long_context_threshold + 1
    online, batch = (
        cost_of("gemini-3.1-pro-preview", long, 100),
        cost_of("gemini-3.1-pro-preview", long, 100, batch=True),
    )
    assert batch.priced and batch.usd == pytest.approx(online.usd / 2)


def test_niah_run_batch_is_execution_batch_and_the_estimate_shows_batch() -> None:
    from niah.cli.parser import parse_command_line
    from niah.cli.run_options import run_payload

    args = parse_command_line(["run", "--model_name", "gemini-3.1-pro-preview", "--batch"])
    assert run_payload(args)["execution"] == "batch"
    from niah.cli.estimate import estimate_figures

    figures = estimate_figures(GEMINI | {"context_lengths": [1000, 5000]})
    assert figures["batch"]["cost_usd"] == pytest.approx(figures["naive"]["cost_usd"] / 2, abs=1e-6)


def test_a_batch_estimate_says_what_a_job_that_ends_partway_costs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Unwritten lines: not billed, not bought online; failed lines: online, capped a job.

    The figure is the cap's costliest calls at the online rate: with a cap of 2 of these
    4 cells, the two 100,000-token ones, each at twice its batch price.
    """
    from niah.cli.estimate import estimate_figures, format_estimate
    from niah.core.money.tier_prices import CallTokens, price_calls
    from niah.settings import get_settings

    monkeypatch.setenv("NIAH_BATCH_ONLINE_FALLBACK_MAX", "2")
    get_settings.cache_clear()
    try:
        request = GEMINI | {"execution": "batch", "context_lengths": [5000, 100_000],
                            "document_depth_percents": [0, 50]}  # fmt: skip
        figures = estimate_figures(request)
        online = estimate_figures(request | {"execution": None})
    finally:
        get_settings.cache_clear()
    partial = figures["batch"]["partial_job"]
    assert partial["online_fallback_lines_per_job"] == 2
    longest = [c for c in figures["per_cell"] if c["prompt_tokens"] > 90_000]
    assert len(longest) == 2 and len(figures["per_cell"]) == 4
    calls = [CallTokens(c["prompt_tokens"], 0, c["max_output_tokens"]) for c in longest]
    online_usd = price_calls("gemini-3.1-pro-preview", calls).usd
    assert online_usd == pytest.approx(2 * price_calls("gemini-3.1-pro-preview", calls,
                                                       batch=True).usd)  # fmt: skip
    assert partial["online_fallback_usd_per_job_at_most"] == pytest.approx(online_usd, abs=1e-6)
    assert "partial_job" not in online["batch"]  # an online run has no batch job
    text = format_estimate(figures)
    assert "lines it never wrote are not bought online" in text
    assert f"at most ${online_usd:.4f} a job above the batch figure" in text
