"""How many samples a point a comparison of two runs needs: the power of the service's test.

``niah plan`` answers "how many samples a point to tell a 5-point change at 80 % power,
and what will it cost?". This module is the power half (the dollars are ``niah run
--estimate``'s, for the grid it plans). The power is that of the test ``niah compare``
runs on two runs over the same grid (``niah.core.results.paired``), so a plan promises
what the comparison will deliver, not what a textbook test would:

- **One sample a point**: the exact McNemar test of the discordant pairs, two-sided,
  significant at p < 0.05. Its power is computed exactly: a sum over the binomial count
  of discordant pairs and, for each, of those going the first run's way.
- **Several samples a point** (and two points or more): the sign-flip permutation test
  of the points' summed differences. Its power is in closed form (``clustered_power``):
  the noncentral t beyond the flip test's own critical value, which plain Student's t
  overstates at few points. With fewer than 6 points no arrangement of flips reaches
  p < 0.05 (the least p is 2 / 2**G: 0.0625 at 5), so the power there is 0; at 6 the
  test rejects only when every point moves the same way, and the closed form promises
  too much (a plan says so).

The outcome model (assumptions a plan states in its output and docs/planning.md):

- each grid point has its own chance of a right answer in the first run, drawn from a
  beta distribution whose mean is the expected score and whose intra-cluster
  correlation is ``icc`` (how alike a point's samples are: the model the clustered
  intervals' coverage test draws from, ``tests/unit/test_clustered_intervals.py``);
- the change falls on a share ``changed_points`` of the points (all of them by default;
  NIAH's drops are often at the longest lengths only), and on each in proportion to
  the room the point has: for a drop, its chance times the factor that moves the
  run's mean by the points asked; for a rise, its chance of a wrong answer so. The
  change then differs from point to point, which the clustered test pays for: the
  more so the fewer points it falls on;
- a pair (one sample asked of both runs) is answered alike wherever the two chances
  allow with probability ``coupling`` (one draw decides both answers), else its two
  answers are independent given the point's chances. 0 is the cautious end (the most
  discordant pairs, the most samples); runs asked the same prompts agree more, which
  two pilot runs' discordant pairs measure;
- the samples of a point are independent given its chances; scores are right or wrong
  (a graded score has no more variance than a right/wrong one of the same mean, so a
  plan for graded scores errs on the side of more samples).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from niah.core.results.paired import SIGNIFICANCE_LEVEL
from niah.core.results.uncertainty import z_value
from niah.errors import RequestError

Change = Literal["drop", "rise"]
Method = Literal["mcnemar", "clustered"]
# The fewest points at which the exact sign-flip test can reach p < 0.05: 2 / 2**6.
LEAST_CLUSTERED_POINTS = 6
# The most samples a point a run takes (RunRequest.samples_per_cell's own bound).
MOST_SAMPLES_PER_POINT = 100
DEFAULT_POWER = 80.0
# The first run's score when neither the user nor a pilot says it: about the worst case
# (the most discordant pairs), as ``niah run --estimate --margin`` takes 50 %.
DEFAULT_EXPECTED_SCORE = 50.0
DEFAULT_ICC = 0.3
DEFAULT_COUPLING = 0.0
DEFAULT_CHANGED_POINTS = 100.0


@dataclass(frozen=True)
class PlanAssumptions:
    """What a plan assumes of the two runs (percent and points; ``icc``, ``coupling`` 0-1)."""

    expected_score: float  # the first run's mean, percent
    detect: float  # the change to detect, points
    change: Change = "drop"
    icc: float = DEFAULT_ICC
    coupling: float = DEFAULT_COUPLING
    changed_points: float = DEFAULT_CHANGED_POINTS  # percent of the points the change is on

    @property
    def second_score(self) -> float:
        """The second run's mean, percent: the first's moved by ``detect``."""
        return self.expected_score + (self.detect if self.change == "rise" else -self.detect)


@dataclass(frozen=True)
class PairMoments:
    """What the test sees of one pair and of one point, under the assumptions.

    Fractions, on the side that falls (the right answers of a drop, the wrong ones of
    a rise: a rise is a drop of the wrong answers, and the test is two-sided).
    """

    effect: float  # the mean difference's size
    falling_only: float  # pairs right (for a drop) in the first run only
    rising_only: float  # pairs right in the second run only
    within: float  # E[Var(a pair's difference | its point)]
    between: float  # Var(a point's expected difference) across points


@dataclass(frozen=True)
class Plan:
    """Samples a point, the power they give, and the test that power is of."""

    samples_per_point: int
    power: float  # fraction
    method: Method
    points: int
    reached: bool  # the target power was reached within MOST_SAMPLES_PER_POINT


def check_assumptions(assumptions: PlanAssumptions) -> None:
    """Refuse assumptions no pair of runs can meet, naming the option and the fix."""
    score, detect = assumptions.expected_score, assumptions.detect
    if not 0 < score < 100:
        raise RequestError(
            "expected_score", f"must be more than 0 and less than 100, not {score:g}"
        )
    if not 0 < detect < 100:
        raise RequestError(
            "detect", f"must be between 0 and 100 points (exclusive), not {detect:g}"
        )
    room = score if assumptions.change == "drop" else 100 - score  # points it can move
    if not 0 <= assumptions.second_score <= 100:
        raise RequestError(
            "detect",
            f"a {detect:g}-point {assumptions.change} from {score:g} % leaves 0-100 %: "
            f"give at most {room:g} points, or another expected_score",
        )
    changed = assumptions.changed_points
    if not 0 < changed <= 100:
        raise RequestError(
            "changed_points", f"must be more than 0 and at most 100 %, not {changed:g}"
        )
    if detect > room * changed / 100:
        raise RequestError(
            "changed_points",
            f"a {detect:g}-point {assumptions.change} carried by {changed:g} % of the points "
            f"moves each by {100 * detect / changed:.3g} points, more than the {room:g} it "
            f"has: give at least {100 * detect / room:.3g} %",
        )
    if not 0 <= assumptions.icc < 1:
        raise RequestError("icc", f"must be at least 0 and less than 1, not {assumptions.icc:g}")
    if not 0 <= assumptions.coupling <= 1:
        raise RequestError("coupling", f"must be between 0 and 1, not {assumptions.coupling:g}")


def pair_moments(assumptions: PlanAssumptions) -> PairMoments:
    """The moments of the pairs' differences under the outcome model (module docstring).

    On the falling side, with ``s`` the first run's share, each point's chance ``q``
    (mean ``s``, variance ``icc s (1 - s)``) and, on a changed point (a share ``f`` of
    them), its second chance ``a q`` with ``a`` such that the mean moves by ``δ``: a
    pair is the first's only with ``κ (1 - a) q + (1 - κ) q (1 - a q)``, the second's
    only with ``(1 - κ) (1 - q) a q`` (``a`` = 1 on an unchanged point); their
    expectations need only E[q²].
    """
    check_assumptions(assumptions)
    first, second = assumptions.expected_score / 100, assumptions.second_score / 100
    share, target = (first, second) if assumptions.change == "drop" else (1 - first, 1 - second)
    changed, kappa = assumptions.changed_points / 100, assumptions.coupling
    ratio = 1 - (share - target) / (changed * share)  # a, on a changed point
    square = assumptions.icc * share * (1 - share) + share * share  # E[q²]
    moved, still = _one_way(share, ratio, square, kappa), _one_way(share, 1.0, square, kappa)
    falling_only = changed * moved[0] + (1 - changed) * still[0]
    rising_only = changed * moved[1] + (1 - changed) * still[1]
    moved_square = changed * (1 - ratio) ** 2 * square  # E[(point's difference)²]
    return PairMoments(
        effect=share - target,
        falling_only=falling_only,
        rising_only=rising_only,
        within=falling_only + rising_only - moved_square,
        between=max(0.0, moved_square - (share - target) ** 2),  # 0, not -1e-18
    )


def _one_way(share: float, ratio: float, square: float, kappa: float) -> tuple[float, float]:
    """A point's pairs right in the first run only, and in the second only, on average.

    E over ``q`` of ``κ (1 - a) q + (1 - κ) q (1 - a q)`` and ``(1 - κ) (1 - q) a q``.
    """
    return (
        kappa * (1 - ratio) * share + (1 - kappa) * (share - ratio * square),
        (1 - kappa) * ratio * (share - square),
    )


def discordance(first: float, second: float, icc: float, coupling: float) -> float:
    """The share of pairs the model expects discordant, the change on every point.

    ``first`` and ``second``: the runs' shares (0-1). What a pilot's pairs are weighed
    against to measure ``coupling`` (``niah.core.results.pilot``).
    """
    share, target = (first, second) if second <= first else (1 - first, 1 - second)
    if share <= 0:
        return 0.0  # never right (or never wrong) in either run: every pair agrees
    square = icc * share * (1 - share) + share * share
    return sum(_one_way(share, target / share, square, coupling))


def comparison_power(
    assumptions: PlanAssumptions,
    points: int,
    samples_per_point: int,
    alpha: float = SIGNIFICANCE_LEVEL,
) -> tuple[float, Method]:
    """The chance the service's paired test calls the change significant, and that test.

    ``points``: the grid points both runs share (lengths x depths x variants). The test
    is chosen as ``paired.paired_test`` chooses it: clustered where a point holds two
    pairs or more and there are two points or more, else McNemar over every pair (one
    point's samples are then taken as independent, as the service takes them).
    """
    if points < 1 or samples_per_point < 1:
        raise ValueError("a comparison needs a point and a sample")
    moments = pair_moments(assumptions)
    if 1 < points < points * samples_per_point:
        return clustered_power(moments, points, samples_per_point, alpha), "clustered"
    return (
        mcnemar_power(moments.falling_only, moments.rising_only, points * samples_per_point, alpha),
        "mcnemar",
    )


def clustered_power(
    moments: PairMoments, points: int, samples_per_point: int, alpha: float = SIGNIFICANCE_LEVEL
) -> float:
    """The sign-flip test's power over ``points`` summed differences, in closed form.

    A point's sum has mean ``m δ`` and variance ``m W + m² B`` (W within, B between).
    The flip test compares the sums' total ``T`` with its flips', whose spread is
    ``sqrt(Σ S²)``: it rejects about when ``|T| - 1 > z sqrt(Σ S²)`` (the one: half the
    step of 2 between the flips' integer totals, as its p counts ties). ``|T| / sqrt(Σ
    S²) > z`` is exactly Student's ``|t| > z sqrt((G - 1) / (G - z²))``, so the power is
    the noncentral t's beyond that, its noncentrality shifted by the one. Against
    simulation of the service's own test it is within 5 points from 7 points up
    (``tests/unit/test_power.py``); plain Student's ``t`` at its own quantile promises
    up to 9 points too much at 8 points.
    """
    if points < LEAST_CLUSTERED_POINTS:
        return 0.0
    from scipy.stats import nct

    m = samples_per_point
    spread = math.sqrt(points * (m * moments.within + m * m * moments.between))
    total = points * m * moments.effect
    if spread <= 0:
        return 1.0  # every point moves by the same sure amount: no flip matches it
    z, degrees = z_value(1 - alpha), points - 1
    critical = z * math.sqrt(degrees / (points - z * z))
    return float(
        nct.sf(critical, degrees, (total - 1) / spread)
        + nct.cdf(-critical, degrees, (total + 1) / spread)
    )


def mcnemar_power(
    first_only: float, second_only: float, pairs: int, alpha: float = SIGNIFICANCE_LEVEL
) -> float:
    """The exact McNemar test's power over ``pairs`` independent pairs.

    ``first_only`` and ``second_only``: each pair's chance of being discordant either way.
    Given ``K`` discordant pairs the test rejects when the fewer way number at most
    ``c_K``, the largest count whose two-sided binomial p at one half is below ``alpha``
    (``scipy.stats.binomtest``'s p at one half is twice the lower tail).
    """
    import numpy as np
    from scipy.stats import binom

    discordant = first_only + second_only
    if discordant <= 0:
        return 0.0
    counts = np.arange(pairs + 1)
    # c_K: binom.ppf gives the least c whose tail reaches alpha / 2; one fewer is below.
    critical = binom.ppf(alpha / 2, counts, 0.5) - 1
    share = first_only / discordant
    rejected = binom.cdf(critical, counts, share) + binom.sf(counts - critical - 1, counts, share)
    rejected = np.where(critical >= 0, rejected, 0.0)
    return float(np.sum(binom.pmf(counts, pairs, discordant) * rejected))


def plan_samples(
    assumptions: PlanAssumptions, points: int, power: float = DEFAULT_POWER / 100
) -> Plan:
    """The fewest samples a point whose power reaches ``power`` (a fraction), up to 100.

    Searched one by one, not solved: the test changes at two samples (McNemar to the
    clustered one), so the power need not grow smoothly with the samples. Not
    reached: the plan at 100 samples, ``reached`` False.
    """
    if not 0 < power < 1:
        raise RequestError("power", f"must be more than 0 and less than 100 %, not {100 * power:g}")
    found: tuple[float, Method] = 0.0, "mcnemar"
    for samples in range(1, MOST_SAMPLES_PER_POINT + 1):
        found = comparison_power(assumptions, points, samples)
        if found[0] >= power:
            return Plan(samples, found[0], found[1], points, reached=True)
    return Plan(MOST_SAMPLES_PER_POINT, found[0], found[1], points, reached=False)
