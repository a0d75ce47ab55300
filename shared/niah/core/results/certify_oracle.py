"""What an oracle that knows a curve pays to certify it: the yardstick for the planner.

Issue 54: a certificate is graded against the truth of a curve, give or take the
indifference zone, and a budget is judged by what deciding that truth costs at best.
The oracle knows each candidate length's share and picks the cheapest answer the zone
allows; it then runs fixed-size exact one-sided binomial tests (no looking as it goes,
so no price for looking), each seeing the true share as it is. The planner
(``niah.core.results.certify``) runs always-valid tests and looks after every round, so
it pays more; the bench (``scripts/bench_certify_random.py``) counts a curve as one the
budget can be asked to settle only if the oracle's reach is within it, and ``niah plan
--mode certify`` prints both figures side by side. Definitions as docs/certify.md
("Measured: curves drawn at random") states them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# The run's 5 %, as the planner's (``certify_plan.CONFIDENCE``): split over an answer's
# tests (two, or one at either end) by the oracle.
ALPHA = 0.05


@dataclass(frozen=True)
class Truth:
    """What a curve's certificate may say, with an indifference zone of ``zone`` points.

    ``length``: the true effective length (the longest candidate at or above the
    threshold; None below the shortest). ``allowed``: every answer the zone allows (a
    length whose share is within ``zone`` points of the threshold may be called either
    way), as candidate indices (-1: below the shortest). ``longest_safe``: the longest
    candidate whose share is at least threshold - zone: claiming longer is wrong beyond
    the zone.
    """

    length: int | None
    allowed: tuple[int, ...]
    longest_safe: int  # an index, -1 for none


def truth(shares: Sequence[float], threshold: float, zone: float) -> Truth:
    """The truth of a curve whose shares (fractions) at the candidates are ``shares``."""
    top, bottom = (threshold + zone) / 100, (threshold - zone) / 100
    at_or_above = [i for i, s in enumerate(shares) if s >= threshold / 100]
    # An answer i says: every candidate to i passes, i + 1 fails.
    allowed = tuple(
        i
        for i in range(-1, len(shares))
        if all(s >= bottom for s in shares[: i + 1])
        and (i + 1 == len(shares) or shares[i + 1] < top)
    )
    safe = [i for i, s in enumerate(shares) if s >= bottom]
    return Truth(
        length=max(at_or_above, default=None),
        allowed=allowed,
        longest_safe=max(safe, default=-1),
    )


@dataclass(frozen=True)
class FixedTest:
    """One of an answer's fixed tests: candidate ``index``'s share above or below ``against``.

    ``samples``: the fewest at which seeing the true share decides it (None: not within
    the cap, or never: the share is on the wrong side of ``against``).
    """

    index: int
    against: float  # a fraction
    above: bool  # True: shows the share above ``against`` (a pass); False: below (a fail)
    level: float  # the test's alpha
    samples: int | None


def answer_tests(
    shares: Sequence[float],
    answer: int,
    threshold: float,
    zone: float,
    *,
    level: float = ALPHA,
    most: Callable[[int], int],
) -> list[FixedTest]:
    """The fixed tests that decide ``answer`` (a candidate index, -1: below the shortest).

    One showing the answer's share above threshold - zone, one showing the next
    length's below threshold + zone, each at ``level / 2`` (one test at ``level`` if the
    answer is the shortest's miss or the longest). ``most(index)``: the most samples a
    test at that candidate may take.
    """
    bottom, top = (threshold - zone) / 100, (threshold + zone) / 100
    wanted = [(answer, bottom, True)] if answer >= 0 else []
    if answer + 1 < len(shares):
        wanted.append((answer + 1, top, False))
    each = level / len(wanted)
    return [
        FixedTest(
            index,
            against,
            above,
            each,
            fixed_test_samples(shares[index], against, each, above=above, most=most(index)),
        )
        for index, against, above in wanted
    ]


def reach(
    shares: Sequence[float],
    price: Callable[[int], float],
    threshold: float,
    zone: float,
    *,
    alpha: float = ALPHA,
    budget: float,
) -> float | None:
    """What deciding the curve costs an oracle that knows where its truth is, priced.

    Fixed one-sided exact tests at an allowed answer (``answer_tests``), the observed
    share equal to the truth. The cheapest allowed answer's cost; None past ``budget``
    (the budget cannot reach the truth). ``price(i)``: a sample's cost at candidate ``i``.
    """
    best: float | None = None
    for answer in truth(shares, threshold, zone).allowed:
        tests = answer_tests(
            shares,
            answer,
            threshold,
            zone,
            level=alpha,
            most=lambda index: int(budget / price(index)) + 1,
        )
        cost = sum(
            math.inf if test.samples is None else test.samples * price(test.index) for test in tests
        )
        if cost <= budget and (best is None or cost < best):
            best = cost
    return best


def fixed_test_samples(
    share: float, against: float, alpha: float, *, above: bool, most: int
) -> int | None:
    """The fewest samples at which a fixed one-sided exact binomial test decides.

    Whether ``share`` (the truth, seen as it is: ``round(share n)`` right of ``n``) is
    shown above ``against`` (``above``) or below it at level ``alpha``; None if not
    within ``most`` samples.
    """
    if (above and share <= against) or (not above and share >= against):
        return None

    def decides(n: int) -> bool:
        right = round(share * n)
        return (
            _binomial_tail(n, against if above else 1 - against, right if above else n - right)
            <= alpha
        )

    # Doubling, then bisection: ``decides`` is monotone in n but for rounding.
    high = 1
    while not decides(high):
        if high > most:
            return None
        high *= 2
    low = high // 2  # does not decide (or 0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if decides(middle) else (middle, high)
    return high if high <= most else None


def _binomial_tail(n: int, p: float, at_least: int) -> float:
    """P(Binomial(n, p) >= at_least), summed from ``at_least`` up while terms count."""
    if at_least <= 0:
        return 1.0
    if at_least > n:
        return 0.0
    log_p, log_q = math.log(max(p, 1e-300)), math.log(max(1 - p, 1e-300))
    total = 0.0
    for k in range(at_least, n + 1):
        log_term = (
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * log_p + (n - k) * log_q
        )  # fmt: skip
        term = math.exp(log_term)
        total += term
        if k > n * p and term < 1e-12 * total:
            break
    return total
