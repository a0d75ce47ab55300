"""Issue 54: the certificate on curves drawn from a seed, and its statistics.

The planner (``niah.core.results.certify``, design 2: an indifference zone of 5 points,
alpha split by price, first looks by price) is replayed over curves drawn by
``niah_devtools.curve_families`` with a seed other than the bench's (54), priced as the
bench prices them (Gemini 3.1 Pro, 11 lengths 1,000-1,000,000, a quarter of the
11 x 11 x 5 grid). The claims that are "never" are asserted as zero counts.
"""

from __future__ import annotations

import math

import pytest

from niah.core.money.pricing import cost_of
from niah.core.results.certify import Certificate, CertifyPlan
from niah.core.results.certify_oracle import fixed_test_samples, reach, truth
from niah.core.results.certify_tests import length_alphas
from niah_devtools.curve_families import DrawnCurve, certify_curve, draw_curves, steps_off

pytestmark = pytest.mark.unit

LENGTHS = tuple(round(1000 * 1000 ** (i / 10)) for i in range(11))
PRICE = {n: cost_of("gemini-3.1-pro-preview", n, 20).usd for n in LENGTHS}
GRID_USD = 55 * sum(PRICE.values())
BUDGET = 0.25 * GRID_USD
PLAN = CertifyPlan(LENGTHS, 85.6, budget=BUDGET)


def certify(curve: DrawnCurve, plan: CertifyPlan = PLAN) -> Certificate:
    """Run ``plan`` to its certificate, each asked sample drawn from ``curve``."""
    return certify_curve(plan, curve, PRICE.__getitem__)


def index(length: int | None) -> int:
    return LENGTHS.index(length) if length is not None else -1


def test_drawn_curves_are_never_claimed_longer_than_the_truth_beyond_the_zone() -> None:
    """Five curves of each drawn family, seed 7: no claim beyond the zone, no overspend."""
    curves = draw_curves(7, dict.fromkeys(("logistic", "plateau", "shelf", "lost_in_middle"), 5))
    longer = overspent = reachable = within = 0
    for curve in curves:
        shares = [curve.length_share(n) for n in LENGTHS]
        known = truth(shares, 85.6, 5.0)
        found = certify(curve)
        longer += index(found.length) > known.longest_safe
        overspent += found.cost > BUDGET + 1e-9
        if reach(shares, lambda i: PRICE[LENGTHS[i]], 85.6, 5.0, budget=BUDGET) is not None:
            reachable += 1
            within += steps_off(index(found.length), known.allowed) <= 1
        elif found.reason != "determined":
            assert found.reason == "budget", (curve.label(), found.reason)
    assert (longer, overspent) == (0, 0)
    assert reachable >= 15 and within >= reachable - 1


def test_a_model_just_below_the_zone_is_never_certified_at_any_length() -> None:
    """Right 80 % at every length, 0.6 points under 85.6 - 5: any claim is wrong.

    The tightest case for the pass test (its alpha is spent where the truth sits just
    under the line): over 12 answer seeds, no length is claimed and no budget overrun.
    """
    claims = overspent = 0
    for seed in range(12):
        flat = DrawnCurve("plateau", {"top": 0.80, "midpoint": 1e12, "width": 1.0}, seed=seed)
        found = certify(flat)
        claims += found.length is not None
        overspent += found.cost > BUDGET + 1e-9
    assert (claims, overspent) == (0, 0)


def test_a_model_always_right_is_certified_within_one_length_of_1m_and_never_right_below() -> None:
    """The issue's 0 of 20: a model right on every sample stopped at "at least 251,189"."""
    for seed in range(3):
        found = certify(DrawnCurve("always_right", seed=seed))
        assert found.length is not None and found.below is None
        assert found.length >= 501_187 and found.cost <= BUDGET
        never = certify(DrawnCurve("never_right", seed=seed))
        assert (never.length, never.below, never.determined) == (None, 1000, True)
        assert never.cost < 0.01 * GRID_USD


def test_alpha_is_split_in_proportion_to_price_with_a_floor_and_sums_to_five_percent() -> None:
    alphas = length_alphas(PLAN, PRICE.__getitem__)
    assert math.isclose(sum(alphas), 0.05)
    mean = sum(PRICE.values()) / len(PRICE)
    weights = [max(p, mean) for p in PRICE.values()]
    assert all(
        math.isclose(a, 0.05 * w / sum(weights)) for a, w in zip(alphas, weights, strict=True)
    )
    assert alphas[-1] / alphas[-2] == pytest.approx(PRICE[1_000_000] / PRICE[501_187])
    # Design 1 (runs admitted before the zone) splits it evenly, and has no zone.
    old = CertifyPlan(LENGTHS, 85.6, budget=BUDGET, design=1)
    assert length_alphas(old, PRICE.__getitem__) == pytest.approx((0.05 / 11,) * 11)
    assert old.zone == 0


def test_a_plan_kept_before_design_2_replays_by_design_1() -> None:
    """A run's document keeps its plan: one admitted before 2026-12-05 has no design."""
    from niah.core.request.spec import RunRequest
    from niah.core.results.certify_run import certify_plan, plan_record

    spec = RunRequest.model_validate(
        {"mode": "certify", "context_lengths": [1000, 2000, 4000], "certify_max_tokens": 10**6}
    )
    record = plan_record(spec, 500)
    assert (record["design"], record["zone"]) == (2, 5.0)
    kept = {k: v for k, v in record.items() if k not in ("design", "zone")}
    old = certify_plan(spec, record=kept)
    assert (old.design, old.zone) == (1, 0.0)
    assert (certify_plan(spec, record=record).design, certify_plan(spec, record=record).zone) == (
        2,
        5.0,
    )


def test_the_truth_and_the_reach_follow_their_definitions() -> None:
    """The zone's allowed answers, and what an oracle's fixed tests need."""
    shares = [0.99, 0.95, 0.88, 0.83, 0.5]  # 0.88 and 0.83 lie in the zone (80.6-90.6)
    known = truth(shares, 85.6, 5.0)
    assert known.length == 2 and known.allowed == (1, 2, 3) and known.longest_safe == 3
    assert steps_off(0, known.allowed) == 1 and steps_off(4, known.allowed) == 1
    # All right: 0.806^n <= 5 % first at 14 (one test, at 1M: no length to fail above).
    assert fixed_test_samples(1.0, 0.806, 0.05, above=True, most=100) == 14
    assert 0.806**13 > 0.05 >= 0.806**14
    # A share on the zone's edge is never shown above it.
    assert fixed_test_samples(0.806, 0.806, 0.05, above=True, most=10**6) is None
    everywhere = [1.0] * 11
    assert reach(everywhere, lambda i: PRICE[LENGTHS[i]], 85.6, 5.0, budget=BUDGET) == (
        pytest.approx(14 * PRICE[1_000_000])
    )
    edge = [0.80] * 11  # the only allowed answer is "below the shortest": fail 1,000
    assert truth(edge, 85.6, 5.0).allowed == (-1,)
    assert reach(edge, lambda i: PRICE[LENGTHS[i]], 85.6, 5.0, budget=BUDGET) is not None


def test_a_token_budget_alone_is_never_exceeded_and_no_claim_passes_the_zone() -> None:
    """An unpriced model (the local one): budgeted in prompt tokens, ``max_tokens`` alone.

    The price split, first looks and deferral then weigh tokens; the same safety holds.
    """
    grid_tokens = 55 * sum(LENGTHS)
    plan = CertifyPlan(LENGTHS, 85.6, max_tokens=int(0.25 * grid_tokens))
    longer = over = 0
    for curve in draw_curves(11, dict.fromkeys(("logistic", "shelf", "always_right"), 3)):
        shares = [curve.length_share(n) for n in LENGTHS]
        found = certify_curve(plan, curve, float)
        longer += index(found.length) > truth(shares, 85.6, 5.0).longest_safe
        over += found.tokens > 0.25 * grid_tokens
    assert (longer, over) == (0, 0)
