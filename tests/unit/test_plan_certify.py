"""``niah plan --mode certify``: a certificate's budget, reach and forecast on an assumed curve.

Issue 54's planner for a certificate to reach. Its dollars must be ``niah certify
--estimate``'s to the digit, and its forecast the service's own planner
(``plan_progress``) replayed here on the same answers, equal where the answers are
fixed (a model right on every sample, or never).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pytest

from niah.core.results.certify import Certificate, CertifyPlan, plan_progress
from niah.core.results.certify_forecast import budget_to_reach, forecast, right_at
from niah.core.results.certify_oracle import answer_tests, reach, truth
from niah.core.results.certify_plan import FAIL, PASS
from niah.core.results.certify_run import certify_plan, plan_record, sample_cost
from niah.core.results.certify_tests import above, below, length_alphas, samples_to_decide
from niah.service.runs.request_body import parse_request
from tests.cli_inprocess import niah

pytestmark = pytest.mark.unit

# Gemini 3.1 Pro over 1,000-1,000,000 tokens, log-spaced, 11 depths: the bench's grid.
LENGTHS = [round(1000 * 1000 ** (i / 10)) for i in range(11)]
PRO = (
    "--model_name", "gemini-3.1-pro-preview", "--context_lengths", *map(str, LENGTHS),
    "--document_depth_percent_intervals", "11",
)  # fmt: skip
FLASH_FLEX = (
    "--model_name", "gemini-3.8-flash", "--tier", "flex", "--context_lengths", "1000", "8000",
    "64000", "--document_depth_percent_intervals", "3",
)  # fmt: skip
LOCAL = (
    "--context_lengths",
    "250",
    "500",
    "1000",
    "2000",
    "--document_depth_percent_intervals",
    "3",
)


def planned(*words: str) -> dict[str, Any]:
    """``niah plan --mode certify ... --json``, parsed; the command must succeed."""
    done = niah("plan", "--mode", "certify", *words, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def service_plan(**record: Any) -> tuple[CertifyPlan, Any]:
    """The plan the dispatcher admits for ``PRO`` (the cell limit, 500, included)."""
    spec = parse_request(
        {
            "mode": "certify",
            "model_name": "gemini-3.1-pro-preview",
            "context_lengths": LENGTHS,
            "document_depth_percent_intervals": 11,
        }
    )
    kept = plan_record(spec, 500) | record
    return certify_plan(spec, record=kept), sample_cost(kept)


def replay(plan: CertifyPlan, right: dict[int, bool], cost: Any) -> Certificate:
    """The service's planner run by hand: every asked sample right where ``right`` says."""
    scores: dict[int, list[float]] = {}
    while (progress := plan_progress(plan, scores, cost)).next_round:
        asked = progress.next_round
        scores[asked.length] = [float(right[asked.length])] * asked.samples
    assert progress.certificate is not None
    return progress.certificate


@pytest.mark.parametrize("words", [PRO, FLASH_FLEX, LOCAL], ids=["pro", "flex", "local"])
def test_the_budget_and_the_grid_are_niah_certify_estimate_s_to_the_digit(
    words: tuple[str, ...],
) -> None:
    done = niah("certify", *words, "--estimate", "--json")
    assert done.returncode == 0, done.stderr
    estimate = json.loads(done.stdout)["certify"]
    plan = planned(*words)
    assert plan["certify"] == estimate
    # The plan's own budget is the same figure, in the planner's unit.
    assert plan["budget"] == (
        estimate["budget_usd"] or estimate["budget_seconds"] or estimate["budget_tokens"]
    )
    text = niah("plan", "--mode", "certify", *words).stdout
    certify_line = [line for line in text.splitlines() if line.startswith("certify (")]
    estimated = niah("certify", *words, "--estimate").stdout
    assert certify_line and certify_line[0] in estimated.splitlines()


def test_a_model_always_right_is_forecast_as_the_service_s_planner_certifies_it() -> None:
    plan_figures = planned(*PRO)
    plan, cost = service_plan()
    by_hand = replay(plan, dict.fromkeys(LENGTHS, True), cost)
    forecast_ = plan_figures["forecast"]
    assert (forecast_["length"], forecast_["below"], forecast_["reason"]) == (
        by_hand.length, by_hand.below, by_hand.reason
    )  # fmt: skip
    assert (forecast_["cost"], forecast_["samples"]) == (by_hand.cost, by_hand.samples)
    assert forecast_["length"] == 501_187 and forecast_["reason"] == "budget"
    # Passing 1M: the service's test wants 28 in a row ($112 of $103), an oracle's 14.
    last = plan_figures["lengths"][-1]
    assert last["service"]["pass"] == 28 and last["service"]["cost"] == 28 * cost(1_000_000)
    assert last["fixed"]["pass"] == 14 and plan_figures["oracle_usd"] == 14 * cost(1_000_000)
    assert plan_figures["budget"] < last["service"]["cost"]
    # The budget found reaches 1M on the same planner; a cent less does not.
    needed = plan_figures["to_reach"]["needed"]
    always = dict.fromkeys(LENGTHS, True)
    at_needed = replay(service_plan(budget_usd=needed["budget"])[0], always, cost)
    assert at_needed.length == 1_000_000 and at_needed.cost == needed["cost"]
    short = service_plan(budget_usd=round(needed["budget"] - 0.01, 2))[0]
    assert replay(short, always, cost).length != 1_000_000


def test_a_cliff_is_forecast_as_the_service_s_planner_certifies_it() -> None:
    """Right to 100,000 tokens, never beyond: 63,096 passes and 125,893 fails, determined."""
    plan_figures = planned(*PRO, "--effective_length", "100000")
    plan, cost = service_plan()
    by_hand = replay(plan, {n: n <= 100_000 for n in LENGTHS}, cost)
    assert by_hand.length == 63_096 and by_hand.below == 125_893 and by_hand.determined
    found = plan_figures["forecast"]
    assert (found["length"], found["below"], found["cost"]) == (63_096, 125_893, by_hand.cost)
    assert plan_figures["to_reach"]["reached"] and "needed" not in plan_figures["to_reach"]
    assert plan_figures["assumed"]["scores"] == [100.0] * 7 + [0.0] * 4


def test_each_length_s_samples_are_the_oracle_s_and_the_service_s_own_tests() -> None:
    scores = [100, 100, 100, 97, 97, 95, 90, 80, 50, 20, 0]
    plan_figures = planned(*PRO, "--expected_score", *map(str, scores))
    plan, cost = service_plan()
    shares = [s / 100 for s in scores]
    alphas = length_alphas(plan, cost)
    for i, row in enumerate(plan_figures["lengths"]):
        tests = answer_tests(shares, i, 85.6, 5.0, most=lambda _: 100_000)
        assert row["fixed"]["pass"] == tests[0].samples
        assert row["fixed"].get("fail_next") == (tests[1].samples if i < 10 else None)
        assert row["service"]["pass"] == samples_to_decide(
            plan, cost, LENGTHS[i], shares[i], verdict=PASS
        )
        assert row["service"]["level"] == alphas[i]
    known = truth(shares, 85.6, 5.0)
    assert plan_figures["truth"]["allowed"] == [LENGTHS[i] for i in known.allowed]
    assert plan_figures["oracle_usd"] == reach(
        shares, lambda i: cost(LENGTHS[i]), 85.6, 5.0, budget=100_000 * cost(1_000_000)
    )


def test_a_share_held_decides_first_at_the_samples_counted_and_not_one_before() -> None:
    plan, cost = service_plan()
    alpha, length = length_alphas(plan, cost)[6], LENGTHS[6]
    n = samples_to_decide(plan, cost, length, 0.9, verdict=PASS)
    assert n is not None and above(0.9 * n, n, 0.806, alpha)
    assert not any(above(0.9 * k, k, 0.806, alpha) for k in range(1, n))
    assert samples_to_decide(plan, cost, length, 0.8, verdict=PASS) is None  # under 80.6 %
    assert samples_to_decide(plan, cost, length, 0.91, verdict=FAIL) is None  # over 90.6 %
    wrong = samples_to_decide(plan, cost, length, 0.0, verdict=FAIL)
    assert wrong is not None and below(0, wrong, 0.906, alpha)
    assert not below(0, wrong - 1, 0.906, alpha)


def test_answers_at_a_share_are_that_share_rounded_after_every_sample() -> None:
    for share in (0.0, 0.2, 0.5, 0.856, 0.95, 1.0):
        answers = [right_at(share, k) for k in range(300)]
        assert set(answers) <= {0.0, 1.0}
        assert all(sum(answers[:n]) == math.floor(share * n + 0.5) for n in range(301))


def test_the_budget_search_returns_a_budget_that_reaches_and_one_step_less_does_not() -> None:
    cost = service_plan()[1]
    shares = dict.fromkeys(LENGTHS, 0.95)

    def plan_at(budget: float) -> CertifyPlan:
        return service_plan(budget_usd=budget)[0]

    def reached(certificate: Certificate) -> bool:
        return certificate.length is not None and certificate.length >= 251_189

    found = budget_to_reach(plan_at, shares, cost, reached, start=100.0, most=800.0, step=0.01)
    assert found is not None and reached(forecast(plan_at(found.budget), shares, cost))
    assert not reached(forecast(plan_at(round(found.budget - 0.01, 2)), shares, cost))
    assert budget_to_reach(plan_at, shares, cost, reached, start=10.0, most=20.0) is None


def test_the_text_says_the_budget_the_forecast_and_the_budget_to_reach() -> None:
    figures = planned(*PRO)
    text = niah("plan", "--mode", "certify", *PRO).stdout
    needed = figures["to_reach"]["needed"]["budget"]
    for shown in (
        "assumed: right on every sample at every length; true effective length 1,000,000",
        "the service, on answers right at exactly these shares: at least 501,187 tokens",
        "passing 1,000,000 takes 28 right answers in a row, $112.00 of the budget's $103.29",
        f"to reach 1,000,000: --certify_max_usd {needed:.2f}",
    ):
        assert shown in text, shown


def test_where_the_run_s_cell_limit_binds_first_the_plan_says_what_it_hides() -> None:
    """Right 81 % everywhere: 500 cells end the rounds before 1,000 fails, for $15.

    3,981 fails first (the bisection's middle); 1,000 and 1,995 are left open.
    """
    figures = planned(*PRO, "--expected_score", "81")
    plan, cost = service_plan()
    shares = dict.fromkeys(LENGTHS, 0.81)
    limited, unlimited = figures["forecast"], figures["forecast_without_cell_limit"]
    assert limited["length"] is None and limited["below"] == 3981
    without = forecast(replace(plan, max_total_samples=None), shares, cost)
    assert (unlimited["below"], unlimited["samples"]) == (without.below, without.samples)
    assert unlimited["below"] == 1000 and unlimited["samples"] > 500
    text = niah("plan", "--mode", "certify", *PRO, "--expected_score", "81").stdout
    assert "the run's cell limit (500) binds first: without it the forecast is below 1,000" in (
        text
    )
    assert "within the run's 500 cells, reaches below the shortest" in text


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (("--detect", "5"), "--detect plans a comparison of two runs, not a certificate"),
        (("--pilot", "run-x"), "--pilot plans a comparison of two runs, not a certificate"),
        (("--icc", "0.2"), "leave --icc out"),
        (("--coupling", "0.5"), "leave --coupling out"),
        (("--expected_score", "90", "80"), "one per length (11 here), not 2"),
        (("--effective_length_rule", "nolima"), "plans RULER's rule"),
        (("--samples_per_cell", "3"), "leave --samples_per_cell out"),
    ],
)
def test_a_comparison_s_option_or_a_bad_curve_is_refused_in_one_line(
    words: tuple[str, ...], said: str
) -> None:
    done = niah("plan", "--mode", "certify", *PRO, *words)
    assert done.returncode == 2, done.stdout
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
