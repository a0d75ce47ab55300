"""Intervals that are their test inverted, so a comparison's interval and p never disagree.

``niah.core.results.paired`` tests two runs' pairs with one test (exact McNemar; the
sign-flip test of pairs, or of grid points' summed pairs) and drew the interval with
another (Newcombe's; a bootstrap; t on a clustered error). On few pairs or points the
two disagreed: 2 pairs both lost read "-100 points, 95 %: -100 to -7" beside McNemar's
p = 0.5; 5 points of 10 pairs all one way read "-100 to -14" beside p = 0.0625.

Each interval is now the hull of the method's own and the test's inversion: the
differences ``d`` per pair that the same test does not refuse at 5 % (as Hodges and
Lehmann's intervals are made). The test's inversion holds 0 exactly when p >= 0.05, so
the hull does too; and a comparison is significant exactly when its interval leaves 0
out (``PairedTest.significant``). The hull is never narrower than the method's interval,
so it covers at least as often (the method's coverage, tests/unit/test_paired.py).

- **Sign flips** (``FlipTest``): each pair's difference, or each point's summed
  differences, keeps or flips its sign, every way up to ``EXACT_POINTS`` values, else
  ``RESAMPLES`` seeded random ways; p as scipy's ``permutation_test`` gives it
  (two-sided: twice the smaller tail; random ways count the observed one,
  ``(k + 1) / (n + 1)``). Its inversion alone collapses to the estimate when every
  value is alike (shifted, all share a sign), which is why the hull keeps the method's.
- **Exact McNemar** (``mcnemar_conditional_interval``): given the ``b + c`` discordant
  pairs, the share ``c / (b + c)`` has Clopper and Pearson's exact interval, which
  leaves 1/2 out exactly when the two-sided binomial test refuses it; mapped to the
  difference as ``(2 x share - 1) x (b + c) / n``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

EXACT_POINTS = 13  # 2**13 = 8,192 arrangements, enumerated
RESAMPLES = 9_999  # beyond, this many seeded random ones
SEED = 0
# Differences per pair lie in [-1, 1] (scores are shares); the interval is searched there
# on a grid of this many steps, then each end refined to this width (0.01 points).
GRID_STEPS = 200
RESOLUTION = 1e-4


# Random arrangements are drawn this many at a time: 200 x 10,000 pairs of float64 is
# 16 MB, where all 9,999 at once would be 800 MB.
BATCH = 200


def _arranged(values: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Each arrangement's signed sum of ``values`` and of ``sizes``; whether exhaustive."""
    points = len(values)
    if points <= EXACT_POINTS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=points)))
        return signs @ values, signs @ sizes, True
    rng = np.random.default_rng(SEED)
    a, b = np.empty(RESAMPLES), np.empty(RESAMPLES)
    for start in range(0, RESAMPLES, BATCH):
        signs = rng.choice((1.0, -1.0), size=(min(BATCH, RESAMPLES - start), points))
        a[start : start + len(signs)] = signs @ values
        b[start : start + len(signs)] = signs @ sizes
    return a, b, False


class FlipTest:
    """The sign-flip test of points' summed differences, at any shift ``d`` a pair."""

    def __init__(self, sums: Sequence[float], sizes: Sequence[int]) -> None:
        self.sums = np.asarray(sums, dtype=float)
        self.sizes = np.asarray(sizes, dtype=float)
        # Each arrangement's statistic is linear in the shift: A - d * B.
        self._a, self._b, self.exact = _arranged(self.sums, self.sizes)
        self._tolerance = 1e-9 * (float(np.abs(self.sums).sum()) + float(self.sizes.sum()))

    def p_values(self, shifts: np.ndarray) -> np.ndarray:
        """Two-sided p of each shift: the points' sums less ``shift`` times their pairs."""
        observed = self.sums.sum() - shifts * self.sizes.sum()
        statistics = self._a[:, None] - shifts[None, :] * self._b[:, None]
        above = (statistics >= observed[None, :] - self._tolerance).sum(axis=0)
        below = (statistics <= observed[None, :] + self._tolerance).sum(axis=0)
        if self.exact:
            greater, less = above / len(self._a), below / len(self._a)
        else:
            greater, less = (above + 1) / (len(self._a) + 1), (below + 1) / (len(self._a) + 1)
        return np.minimum(1.0, 2 * np.minimum(greater, less))

    def p_value(self, shift: float = 0.0) -> float:
        """Two-sided p at one shift (0: is there any difference at all)."""
        if len(self.sums) < 2 or not np.any(self.sums - shift * self.sizes):
            return 1.0  # one point's flip, or only zeros: no evidence either way
        return float(self.p_values(np.array([shift]))[0])

    def interval(self, level: float = 0.05) -> tuple[float, float]:
        """The per-pair differences the test keeps at ``level``: (low, high) in [-1, 1].

        Points' sums ``s`` of ``n`` pairs are tested at ``d`` as ``s - d * n``.

        Searched on a grid over [-1, 1], the ends of the kept set's hull refined by
        bisection; a shift the grid keeps at -1 or 1 leaves that end open (-1 or 1).
        """
        grid = np.linspace(-1.0, 1.0, GRID_STEPS + 1)
        kept = np.flatnonzero(self._kept(grid, level))
        if kept.size == 0:  # the estimate itself lies between grid points
            estimate = float(self.sums.sum() / self.sizes.sum())
            return estimate, estimate
        first, last = int(kept[0]), int(kept[-1])
        low = -1.0 if first == 0 else self._edge(grid[first - 1], grid[first], level)
        high = 1.0 if last == GRID_STEPS else self._edge(grid[last + 1], grid[last], level)
        return low, high

    def _kept(self, shifts: np.ndarray, level: float) -> np.ndarray:
        p = self.p_values(shifts)
        if len(self.sums) < 2:
            p = np.ones_like(p)
        return p >= level

    def _edge(self, refused: float, kept: float, level: float) -> float:
        """Bisect between a refused and a kept shift down to ``RESOLUTION``."""
        for _ in range(math.ceil(math.log2(abs(kept - refused) / RESOLUTION))):
            middle = (refused + kept) / 2
            if self._kept(np.array([middle]), level)[0]:
                kept = middle
            else:
                refused = middle
        return kept


def mcnemar_conditional_interval(
    first_only: int, second_only: int, pairs: int, level: float = 0.05
) -> tuple[float, float]:
    """Exact McNemar inverted: the difference (second - first) per pair, in [-1, 1]."""
    discordant = first_only + second_only
    if discordant == 0:
        return 0.0, 0.0
    from scipy.stats import beta

    low = 0.0 if second_only == 0 else float(beta.ppf(level / 2, second_only, first_only + 1))
    high = 1.0 if first_only == 0 else float(beta.ppf(1 - level / 2, second_only + 1, first_only))
    scale = discordant / pairs
    return (2 * low - 1) * scale, (2 * high - 1) * scale


def hull(*intervals: tuple[float, float]) -> tuple[float, float]:
    """The smallest interval holding every one given."""
    return min(low for low, _ in intervals), max(high for _, high in intervals)
