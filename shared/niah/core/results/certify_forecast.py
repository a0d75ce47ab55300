"""The planner run ahead of time on an assumed curve: what a certify run would certify.

``niah plan --mode certify`` asks what a certification will say and spend before it
runs. The planner (``certify.plan_progress``) is a pure function of the answers, so it
can be replayed on answers that are not a model's: here answers that come at exactly
an assumed share at each length (after ``n`` samples, ``round(share n)`` right, as the
oracle's fixed tests see the truth: ``certify_oracle``). For a model right on every
sample (or none) that is what every run does, whatever its seed; for a share in between
it is the run whose answers fall as expected, one path of many.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from niah.core.results.certify import Certificate, CertifyPlan, plan_progress

# The budget search's steps: dollars to the cent; prompt tokens to the token.
CENT = 0.01


def run_planner(
    plan: CertifyPlan, answer: Callable[[int, int], float], cost: Callable[[int], float]
) -> Certificate:
    """Run ``plan`` to its certificate, sample ``k`` at ``length`` answered ``answer(length, k)``.

    ``answer`` gives 1.0 (right) or 0.0 (wrong); ``cost(length)`` one sample's price, in
    the plan's budget's unit.
    """
    scores: dict[int, list[float]] = {}
    while (progress := plan_progress(plan, scores, cost)).next_round:
        asked = progress.next_round
        have = scores.setdefault(asked.length, [])
        have += [answer(asked.length, k) for k in range(len(have), asked.samples)]
    assert progress.certificate is not None  # no next round: the certificate
    return progress.certificate


def right_at(share: float, sample: int) -> float:
    """Sample ``sample`` (from 0) of a length right at exactly ``share``: 1.0 or 0.0.

    After ``n`` samples, ``floor(share n + 1/2)`` are right: the share rounded, never
    ahead of or behind it by half a sample.
    """
    return float(math.floor((sample + 1) * share + 0.5) - math.floor(sample * share + 0.5))


def forecast(
    plan: CertifyPlan, shares: Mapping[int, float], cost: Callable[[int], float]
) -> Certificate:
    """The certificate of ``plan`` on answers right at exactly ``shares[length]``."""
    return run_planner(plan, lambda length, k: right_at(shares[length], k), cost)


@dataclass(frozen=True)
class BudgetFound:
    """A budget at which the forecast reaches what was asked, and its certificate."""

    budget: float
    certificate: Certificate


def budget_to_reach(
    plan_at: Callable[[float], CertifyPlan],
    shares: Mapping[int, float],
    cost: Callable[[int], float],
    reached: Callable[[Certificate], bool],
    *,
    start: float,
    most: float,
    step: float = CENT,
) -> BudgetFound | None:
    """A budget from ``start`` to ``most`` whose forecast is ``reached``: None if ``most``'s is not.

    Doubling from ``start``, then bisection to ``step`` between the last budget that
    fell short and the first that reached. The forecast is not monotone in the budget
    (a first look's size and a length's deferral follow what is left of it: on a curve
    flat at 95 % over Gemini 3.1 Pro's 1,000-1,000,000, $44 certifies 63,096 and $47
    31,623), so the budget found is one that reaches, checked, and not always the least.
    ``plan_at(budget)``: the plan with that budget.
    """
    low, high = start, start
    found = forecast(plan_at(high), shares, cost)
    while not reached(found):
        if high >= most:
            return None
        low, high = high, min(2 * high, most)
        found = forecast(plan_at(high), shares, cost)
    if high == start:
        return BudgetFound(high, found)
    while high - low > step:
        middle = _round_up((low + high) / 2, step)
        if middle >= high:
            break
        at_middle = forecast(plan_at(middle), shares, cost)
        if reached(at_middle):
            high, found = middle, at_middle
        else:
            low = middle
    return BudgetFound(high, found)


def _round_up(value: float, step: float) -> float:
    """``value`` up to a whole number of ``step``s (a budget a user can type)."""
    return round(math.ceil(round(value / step, 9)) * step, 9)
