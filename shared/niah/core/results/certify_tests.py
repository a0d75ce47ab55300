"""A certification's test at one length: its level, what it tests against, how many samples.

Each candidate length's verdict is an always-valid test
(``niah.core.results.confidence_sequence``), so a look may come at any sample size. The
run's 5 % is split over the ``K`` candidate lengths, fixed before any sample is seen
(the union bound). Design 1 split it evenly. Design 2 (issue 54) splits it in
proportion to a sample's price at each length: the samples a test needs grow with the
log of one over its alpha, so the least total cost of a given certainty puts alpha
where samples are dear (minimising the sum of ``price_i * log(1 / alpha_i)`` under
``sum alpha_i = alpha`` gives ``alpha_i`` in proportion to ``price_i``). Over 1,000 to
1,000,000 tokens on Gemini 3.1 Pro a 1M-token sample costs 2,000 times a 1,000-token
one: the longest length's test runs at 98.4 % instead of 99.5 %, the lengths whose
sample costs less than the mean price at 99.73 % (``LEAST_SHARE``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

from niah.core.results.certify_plan import (
    FAIL,
    GROWTH,
    NOLIMA,
    OPEN,
    PASS,
    CertifyPlan,
    Look,
    Thresholds,
)
from niah.core.results.confidence_sequence import bounds, shows_above, shows_below

# A first look of ``first_look`` samples is kept where it costs at most this share of
# the budget; where a sample is dearer (design 2), the first look is the fewest samples
# that, all wrong, fail the length: a clear failure at 1M tokens then costs 2 samples,
# not 8 ($8 of a $103 budget, not $32).
CHEAP_LOOK = 0.04
# A length is weighted as if a sample cost at least this share of the mean price over
# the lengths: a nearly free length's test would otherwise need hundreds more samples
# (against the run's cell limit). On 230 drawn curves (scripts/bench_certify.py) a
# floor of 5 %, 20 %, 50 % or 100 % landed as often within one length (97.6 %); 100 %
# costs the fewest samples: no length's alpha is below about 0.6 of an even split.
LEAST_SHARE = 1.0

# Design 2: a length whose settling, if its share held, would cost more than this share
# of what is left of the budget waits while its cheaper neighbours are asked (as one
# that would not settle within ``max_samples`` does in both designs): a length inside
# the zone can take the whole budget, where its neighbours settle an allowed answer.
DEAR_SHARE = 0.5

above = lru_cache(maxsize=1 << 16)(shows_above)
below = lru_cache(maxsize=1 << 16)(shows_below)


def length_alphas(plan: CertifyPlan, cost: Callable[[int], float]) -> tuple[float, ...]:
    """Each candidate length's share of ``1 - confidence`` (the union bound over them).

    Under NoLiMa's rule the base's two bounds are a test too: K + 1 even shares.
    """
    alpha = 1 - plan.confidence
    if not plan.by_price():
        tests = len(plan.lengths) + (1 if plan.rule == NOLIMA else 0)
        return (alpha / tests,) * len(plan.lengths)
    prices = [max(cost(n), 0.0) for n in plan.lengths]
    even = sum(prices) / len(prices)
    if even <= 0:
        return (alpha / len(prices),) * len(prices)
    weights = [max(p, LEAST_SHARE * even) for p in prices]
    return tuple(alpha * w / sum(weights) for w in weights)


def base_alpha(plan: CertifyPlan) -> float:
    """NoLiMa's base's share of ``1 - confidence``: one of K + 1 even shares."""
    return (1 - plan.confidence) / (len(plan.lengths) + 1)


def ruler_thresholds(plan: CertifyPlan) -> Thresholds:
    """RULER's rule: the threshold less the zone to pass, plus it to fail (in [0, 1])."""
    return Thresholds(
        max(plan.threshold - plan.zone, 0.0) / 100, min(plan.threshold + plan.zone, 100.0) / 100
    )


def samples_to_pass(
    plan: CertifyPlan, cost: Callable[[int], float] = float, length: int | None = None
) -> int:
    """The fewest samples, all right, that pass ``length`` (the longest by default)."""
    length = length if length is not None else plan.lengths[-1]
    found = samples_to_decide(plan, cost, length, 1.0, verdict=PASS, most=1 << 20)
    assert found is not None  # all right passes any threshold below 100 %, in time
    return found


def samples_to_decide(
    plan: CertifyPlan,
    cost: Callable[[int], float],
    length: int,
    share: float,
    *,
    verdict: str,
    most: int | None = None,
) -> int | None:
    """The fewest samples at which ``length``'s own test gives ``verdict`` at ``share``.

    ``share n`` right of ``n``, as ``look_plan`` asks "if the share held". None: not
    within ``most`` samples (``max_samples`` by default, where the planner leaves a
    length open), or never (the share is on the other side).

    RULER's rule: the test's thresholds are fixed before any sample (NoLiMa's follow the
    base's look).
    """
    alpha = length_alphas(plan, cost)[plan.lengths.index(length)]
    limits = ruler_thresholds(plan)
    if (verdict == PASS and share < limits.pass_at) or (
        verdict == FAIL and share >= limits.fail_at
    ):
        return None
    shows = above if verdict == PASS else below
    against = limits.pass_at if verdict == PASS else limits.fail_at
    for n in range(1, (most if most is not None else plan.max_samples) + 1):
        if shows(share * n, n, against, alpha):
            return n
    return None


def first_look(
    plan: CertifyPlan, length: int, cost: Callable[[int], float], alpha: float, limits: Thresholds
) -> int:
    """A length's first look: ``first_look``, or where a sample is dear, the fewest to fail.

    The fewest samples that, all wrong, show the share below the fail threshold (at
    least 2), where ``first_look`` samples would cost more than ``CHEAP_LOOK`` of the
    budget (design 2 only).
    """
    budget = plan.budget if plan.budget is not None else plan.max_tokens
    if not plan.by_price() or budget is None:
        return plan.first_look
    dear = cost(length) if plan.budget is not None else float(length)
    if plan.first_look * dear <= CHEAP_LOOK * budget:
        return plan.first_look
    n = 2
    while n < plan.first_look and not below(0, n, limits.fail_at, alpha):
        n += 1
    return n


def look_size(
    looked: Sequence[float], plan: CertifyPlan, limits: Thresholds, alpha: float, first: int
) -> tuple[int, bool]:
    """How many samples the next look at a length takes, given those already looked at.

    A first look is small (``first``): a clear failure costs little. After that, the
    fewest samples at which, if the share seen so far held, the sequence would clear
    the threshold (above it, or below it): at least half as many again as before, at
    most ``GROWTH`` times as many (an early, noisy mean never commits the budget to one
    length at once). Any size is valid: the sequence holds at every size. With it,
    whether ``max_samples`` would settle the length if the share held.
    """
    size, settles_at = look_plan(looked, plan, limits, alpha, first)
    return size, settles_at is not None


def look_plan(
    looked: Sequence[float], plan: CertifyPlan, limits: Thresholds, alpha: float, first: int
) -> tuple[int, int | None]:
    """``look_size``, with the samples at which the length would settle (None: past the cap)."""
    have = len(looked)
    if not have:
        return first, first
    share = sum(looked) / have
    least, most = math.ceil(1.5 * have), GROWTH * have
    for n in range(least, max(most, plan.max_samples) + 1):
        if settled(share * n, n, limits, alpha):
            # Settled within the cap if the share held; past it, the length is open.
            return min(n, most), n if n <= plan.max_samples else None
    return most, None


def settled(right: float, n: int, limits: Thresholds, alpha: float) -> bool:
    """Whether ``right`` of ``n`` would give a verdict: above the threshold, or below.

    In the zone (pass threshold below the fail one) a share between may show either.
    """
    share = right / n
    if share >= limits.pass_at and above(right, n, limits.pass_at, alpha):
        return True
    return share < limits.fail_at and below(right, n, limits.fail_at, alpha)


def look_at(t: int, length: int, scores: Sequence[float], limits: Thresholds, alpha: float) -> Look:
    """Round ``t``'s verdict on ``length`` from its first samples: a pass first."""
    right, n = sum(scores), len(scores)
    low, high = bounds(right, n, alpha)
    if right / n >= limits.pass_at and above(right, n, limits.pass_at, alpha):
        verdict = PASS
    elif right / n < limits.fail_at and below(right, n, limits.fail_at, alpha):
        verdict = FAIL
    else:
        verdict = OPEN
    return Look(t, length, n, round(100 * right / n, 2), 100 * low, 100 * high, 1 - alpha, verdict)
