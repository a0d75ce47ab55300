"""Is one run really better than another? Paired tests of two runs' samples.

Two runs over the same grid answer the same prompts (the same length, depth and sample
index), so their samples pair up, and the test is on the pairs: far more sensitive than
comparing two means, because what both runs got right (or wrong) says nothing about the
difference. Only pairs scored in both runs count.

- **Right/wrong outcomes** (every score of both runs 0 or 1): the exact McNemar test,
  a two-sided binomial test of the discordant pairs (``b`` the first run right and the
  second wrong, ``c`` the reverse) at one half: under no difference each discordant pair
  is a coin toss. Its interval for the difference of the two proportions is Newcombe's
  hybrid score interval for paired data (1998, "Improved confidence intervals for the
  difference between binomial proportions based on paired data", Statistics in
  Medicine 17:2635-2650, method 10), which Fagerland, Lydersen and Laake (2014, BMC
  Medical Research Methodology 14:41) recommend for small samples: built from the two
  Wilson intervals, it stays honest when every pair agrees (a Wald interval collapses to
  a point there).
- **Graded scores** (a share of needles, a similarity): a paired permutation test (each
  pair's two scores swapped or not; exact up to 13 pairs, else 9,999 seeded
  resamples) for the p-value, and a percentile bootstrap of the pairs' differences for
  the interval (``uncertainty.bootstrap_interval``, the same seed and resamples as
  every other bootstrap here).

- **Pairs that share a grid point** (several samples a point): the pairs of one point
  share its haystack and the needle's place, so they are not independent, and the two
  tests above would count them as if they were. The p-value is then the paired
  permutation test over grid points: each point's pairs swapped together (its summed
  differences' sign flipped), exact up to 13 points. The interval is clustered by grid
  point (``niah.core.results.uncertainty``, Miller 2024): on right/wrong outcomes
  Newcombe's interval above at the effective number of pairs (the table's counts
  scaled by it), on graded scores the mean difference ± t x its clustered standard
  error, on ``G - 1`` degrees of freedom.

Everything is in points of percent: the second run minus the first. p >= 0.05 is
reported as "no significant difference"; per-length tests are each at 5 %, uncorrected
for the number of lengths (docs/outputs.md says what that means when reading them).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from niah.core.results.inverted import (
    RESAMPLES,
    FlipTest,
    hull,
    mcnemar_conditional_interval,
)
from niah.core.results.measures import grid_point
from niah.core.results.uncertainty import (
    CONFIDENCE,
    bootstrap_interval,
    cluster_variances,
    degrees_factor,
    t_value,
    wilson_share_bounds,
)

SIGNIFICANCE_LEVEL = 0.05
NO_DIFFERENCE = "no significant difference"
# Exact sign-flip permutations up to 2**13 = 8,192 arrangements; beyond, this many
# seeded random ones (``niah.core.results.inverted``).
PERMUTATION_RESAMPLES = RESAMPLES

Method = Literal["mcnemar", "permutation", "clustered"]


@dataclass(frozen=True)
class PairedTest:
    """The second run minus the first over a set of pairs (all, or one length's)."""

    pairs: int
    mean_first: float  # percent
    mean_second: float  # percent
    effect: float  # points: mean_second - mean_first
    low: float | None  # points; None when there is no interval (one graded pair)
    high: float | None
    p_value: float
    method: Method
    # McNemar's discordant pairs: (first right & second wrong, first wrong & second right).
    discordant: tuple[int, int] | None = None
    # The grid points the pairs fall in: as many as the pairs when each is a point's own.
    clusters: int = 0

    @property
    def significant(self) -> bool:
        """A p-value below 5 % and an interval that leaves 0 out: the two always agree.

        The interval holds its test's inversion (``niah.core.results.inverted``), so it
        leaves 0 out only where p < 5 %: significant exactly when 0 is outside it.
        """
        if self.low is not None and self.high is not None and self.low <= 0 <= self.high:
            return False
        return self.p_value < SIGNIFICANCE_LEVEL

    @property
    def verdict(self) -> str:
        """The verdict: significant, or no significant difference (and why, where p < 5 %)."""
        if self.significant:
            return "significant"
        if self.p_value < SIGNIFICANCE_LEVEL:
            return f"{NO_DIFFERENCE} (the interval holds 0)"
        return NO_DIFFERENCE

    def as_dict(self) -> dict[str, Any]:
        """The test as JSON holds it (figures rounded to what they can say)."""
        return {
            "pairs": self.pairs,
            "mean_first": round(self.mean_first, 2),
            "mean_second": round(self.mean_second, 2),
            "effect": round_points(self.effect),
            "interval": None
            if self.low is None or self.high is None
            else [round_points(self.low), round_points(self.high)],
            "confidence": CONFIDENCE,
            "p_value": float(f"{self.p_value:.4g}"),
            "significant": self.significant,
            "verdict": self.verdict,
            "method": self.method,
            "clusters": self.clusters,
            **({"discordant": list(self.discordant)} if self.discordant else {}),
        }


@dataclass(frozen=True)
class PairedComparison:
    """Two runs' pairs tested overall and per length, and the samples left unpaired."""

    first: str  # run IDs
    second: str
    overall: PairedTest | None  # None: no pair scored in both runs
    by_length: dict[int, PairedTest]
    # Shared samples that are scored in one run only (failed, unscored or truncated in
    # the other): they are in neither mean here.
    unscored_pairs: int
    # What people call the two runs (their labels; the IDs when not given).
    first_name: str = ""
    second_name: str = ""

    def names(self) -> tuple[str, str]:
        """The first and second run as a reader knows them."""
        return self.first_name or self.first, self.second_name or self.second

    def as_dict(self) -> dict[str, Any]:
        """The comparison as ``niah compare --json`` prints it."""
        return {
            "first": self.first,
            "second": self.second,
            "first_label": self.names()[0],
            "second_label": self.names()[1],
            "difference": "second minus first, in points of percent",
            "overall": self.overall.as_dict() if self.overall else None,
            "by_length": {str(n): test.as_dict() for n, test in self.by_length.items()},
            "unscored_pairs": self.unscored_pairs,
        }


def round_points(value: float) -> float:
    """A difference in points as far as a NIAH mean can say it: 0.1, and never -0."""
    return round(value, 1) + 0.0


def pair_key(cell: dict[str, Any]) -> tuple[int, float, int, str]:
    """What pairs two runs' samples: the same length, depth, sample index and variant.

    The variant (``niah.core.request.axes``): two runs with 0, 1 and 4 distractors pair
    each count with its own; ``niah.core.results.variants`` pairs across an axis.
    """
    return (
        int(cell["context_length"]),
        float(cell["depth_percent"]),
        int(cell.get("sample", 0)),
        str(cell.get("variant") or ""),
    )


def paired_comparison(
    first: tuple[str, list[dict[str, Any]]],
    second: tuple[str, list[dict[str, Any]]],
    *,
    names: tuple[str, str] = ("", ""),
) -> PairedComparison:
    """Test ``second``'s samples against ``first``'s, overall and per length.

    Each is (run ID, cells); ``names`` what a reader calls them (their labels).
    Samples pair by ``pair_key``; a pair counts when both samples have a ``task_score``.
    Right/wrong or graded is decided once for the whole comparison (graded if any score
    of either run is neither 0 nor 1), so every length is tested the same way.
    """
    theirs = {pair_key(c): c for c in second[1]}
    pairs: list[tuple[int, float, float, tuple[int, float, str]]] = []
    unscored = 0
    for cell in first[1]:
        other = theirs.get(pair_key(cell))
        if other is None:
            continue
        a, b = cell.get("task_score"), other.get("task_score")
        if a is None or b is None:
            unscored += 1
            continue
        pairs.append((int(cell["context_length"]), float(a), float(b), grid_point(cell)))
    binary = all(a in (0.0, 1.0) and b in (0.0, 1.0) for _, a, b, _ in pairs)
    by_length: dict[int, list[tuple[float, float, tuple[int, float, str]]]] = {}
    for length, a, b, point in sorted(pairs):
        by_length.setdefault(length, []).append((a, b, point))
    return PairedComparison(
        first=first[0],
        second=second[0],
        overall=_test([(a, b, point) for _, a, b, point in pairs], binary) if pairs else None,
        by_length={n: _test(p, binary) for n, p in by_length.items()},
        unscored_pairs=unscored,
        first_name=names[0],
        second_name=names[1],
    )


def _test(found: list[tuple[float, float, tuple[int, float, str]]], binary: bool) -> PairedTest:
    """``paired_test`` of (first, second, grid point) triples, clustered by their point."""
    return paired_test(
        [(a, b) for a, b, _ in found], binary=binary, clusters=[point for _, _, point in found]
    )


def paired_test(
    pairs: Sequence[tuple[float, float]],
    *,
    binary: bool,
    clusters: Sequence[Hashable] | None = None,
) -> PairedTest:
    """McNemar (``binary``) or a permutation test over (first, second) score pairs.

    ``clusters``: each pair's grid point; where a point holds two pairs or more (and
    there are two points or more), the clustered test (the module's docstring).
    """
    n = len(pairs)
    count = n if clusters is None else len(set(clusters))
    mean_first = 100 * math.fsum(a for a, _ in pairs) / n
    mean_second = 100 * math.fsum(b for _, b in pairs) / n
    if 1 < count < n:
        assert clusters is not None
        return _clustered(pairs, clusters, binary, mean_first, mean_second)
    if binary:
        return replace(_mcnemar(pairs, mean_first, mean_second), clusters=count)
    differences = [b - a for a, b in pairs]
    flips = FlipTest(differences, [1] * n)
    found = bootstrap_interval(differences)
    if found is not None:
        found = hull(found, flips.interval(SIGNIFICANCE_LEVEL))
    return PairedTest(
        pairs=n,
        mean_first=mean_first,
        mean_second=mean_second,
        effect=mean_second - mean_first,
        low=None if found is None else 100 * found[0],
        high=None if found is None else 100 * found[1],
        p_value=flips.p_value(),
        method="permutation",
        clusters=count,
    )


def _clustered(
    pairs: Sequence[tuple[float, float]],
    clusters: Sequence[Hashable],
    binary: bool,
    mean_first: float,
    mean_second: float,
) -> PairedTest:
    """The pairs tested with each grid point's pairs together (the module's docstring)."""
    differences = [b - a for a, b in pairs]
    sums: dict[Hashable, float] = {}
    sizes: dict[Hashable, int] = {}
    for difference, cluster in zip(differences, clusters, strict=True):
        sums[cluster] = sums.get(cluster, 0.0) + difference
        sizes[cluster] = sizes.get(cluster, 0) + 1
    flips = FlipTest(list(sums.values()), [sizes[point] for point in sums])
    naive, clustered, count = cluster_variances(differences, clusters)
    n, effect = len(pairs), math.fsum(differences) / len(pairs)
    discordant = None
    if binary:
        first_only = sum(1 for a, b in pairs if a == 1.0 and b == 0.0)
        second_only = sum(1 for a, b in pairs if a == 0.0 and b == 1.0)
        both = sum(1 for a, b in pairs if a == 1.0 and b == 1.0)
        neither = n - first_only - second_only - both
        # The effective number of pairs: n over the design effect of the differences;
        # with no variance to measure it (every pair alike), each point counts once.
        effective = (n / max(1.0, clustered / naive) if naive > 0 else count) * degrees_factor(
            count
        )
        scale = effective / n
        low, high = newcombe_paired_interval(
            both * scale, second_only * scale, first_only * scale, neither * scale
        )
        discordant = (first_only, second_only)
    else:
        half = t_value(count - 1) * math.sqrt(max(naive, clustered))
        low, high = max(-1.0, effect - half), min(1.0, effect + half)
    low, high = hull((low, high), flips.interval(SIGNIFICANCE_LEVEL))
    return PairedTest(
        pairs=n,
        mean_first=mean_first,
        mean_second=mean_second,
        effect=mean_second - mean_first,
        low=100 * low,
        high=100 * high,
        p_value=flips.p_value(),
        method="clustered",
        discordant=discordant,
        clusters=count,
    )


def _mcnemar(
    pairs: Sequence[tuple[float, float]], mean_first: float, mean_second: float
) -> PairedTest:
    first_only = sum(1 for a, b in pairs if a == 1.0 and b == 0.0)
    second_only = sum(1 for a, b in pairs if a == 0.0 and b == 1.0)
    both = sum(1 for a, b in pairs if a == 1.0 and b == 1.0)
    neither = len(pairs) - first_only - second_only - both
    low, high = hull(
        newcombe_paired_interval(both, second_only, first_only, neither),
        mcnemar_conditional_interval(first_only, second_only, len(pairs), SIGNIFICANCE_LEVEL),
    )
    return PairedTest(
        pairs=len(pairs),
        mean_first=mean_first,
        mean_second=mean_second,
        effect=mean_second - mean_first,
        low=100 * low,
        high=100 * high,
        p_value=mcnemar_exact_p(first_only, second_only),
        method="mcnemar",
        discordant=(first_only, second_only),
    )


def mcnemar_exact_p(b: int, c: int) -> float:
    """The exact McNemar p-value: two-sided binomial test of ``b`` of ``b + c`` at 1/2."""
    if b + c == 0:
        return 1.0  # no discordant pair: nothing argues for a difference
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5).pvalue)


def newcombe_paired_interval(
    both: float,
    second_only: float,
    first_only: float,
    neither: float,
    confidence: float = CONFIDENCE,
) -> tuple[float, float]:
    """Newcombe's method 10 interval of (second's proportion - first's), paired data.

    The counts are the paired 2 x 2 table with the second run as rows: both right,
    second right only, first right only, both wrong (fractional for an effective
    number of pairs: clustered ones, scaled). Each proportion's Wilson interval,
    combined "square and add" with the correlation of the two proportions (Newcombe's
    continuity-corrected phi: its numerator shrunk by n/2 when positive, 0 below that).
    """
    n = both + second_only + first_only + neither
    right_second, right_first = both + second_only, both + first_only
    p2, p1 = right_second / n, right_first / n
    l2, u2 = wilson_share_bounds(p2, n, confidence)
    l1, u1 = wilson_share_bounds(p1, n, confidence)
    margins = right_second * (n - right_second) * right_first * (n - right_first)
    phi = 0.0
    if margins:
        agreement = both * neither - second_only * first_only
        if agreement > n / 2:
            phi = (agreement - n / 2) / math.sqrt(margins)
        elif agreement < 0:
            phi = agreement / math.sqrt(margins)
    estimate = p2 - p1
    below = math.sqrt(max(0.0, (p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1)))
    above = math.sqrt(max(0.0, (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)))
    return max(-1.0, estimate - below), min(1.0, estimate + above)
