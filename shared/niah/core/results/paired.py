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

Everything is in points of percent: the second run minus the first. p >= 0.05 is
reported as "no significant difference"; per-length tests are each at 5 %, uncorrected
for the number of lengths (docs/outputs.md says what that means when reading them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from niah.core.results.uncertainty import CONFIDENCE, bootstrap_interval, wilson_bounds

SIGNIFICANCE_LEVEL = 0.05
NO_DIFFERENCE = "no significant difference"
# Exact sign-flip permutations up to 2**13 = 8,192 arrangements; beyond, this many
# seeded random ones (scipy uses the exact distribution whenever it is no larger).
PERMUTATION_RESAMPLES = 9_999
PERMUTATION_SEED = 0
# Resamples computed at once: 200 x 10,000 pairs of float64 is 16 MB, where all 9,999 at
# once would be 800 MB (scipy's default is every resample in one array).
RESAMPLE_BATCH = 200

Method = Literal["mcnemar", "permutation"]


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

    @property
    def significant(self) -> bool:
        """A p-value below 5 %: a difference the samples show, not one noise could make."""
        return self.p_value < SIGNIFICANCE_LEVEL

    @property
    def verdict(self) -> str:
        """Either "significant" or "no significant difference"."""
        return "significant" if self.significant else NO_DIFFERENCE

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
    pairs: list[tuple[int, float, float]] = []
    unscored = 0
    for cell in first[1]:
        other = theirs.get(pair_key(cell))
        if other is None:
            continue
        a, b = cell.get("task_score"), other.get("task_score")
        if a is None or b is None:
            unscored += 1
            continue
        pairs.append((int(cell["context_length"]), float(a), float(b)))
    binary = all(a in (0.0, 1.0) and b in (0.0, 1.0) for _, a, b in pairs)
    by_length: dict[int, list[tuple[float, float]]] = {}
    for length, a, b in sorted(pairs):
        by_length.setdefault(length, []).append((a, b))
    return PairedComparison(
        first=first[0],
        second=second[0],
        overall=paired_test([(a, b) for _, a, b in pairs], binary=binary) if pairs else None,
        by_length={n: paired_test(p, binary=binary) for n, p in by_length.items()},
        unscored_pairs=unscored,
        first_name=names[0],
        second_name=names[1],
    )


def paired_test(pairs: Sequence[tuple[float, float]], *, binary: bool) -> PairedTest:
    """McNemar (``binary``) or a permutation test over (first, second) score pairs."""
    n = len(pairs)
    mean_first = 100 * math.fsum(a for a, _ in pairs) / n
    mean_second = 100 * math.fsum(b for _, b in pairs) / n
    if binary:
        return _mcnemar(pairs, mean_first, mean_second)
    differences = [b - a for a, b in pairs]
    found = bootstrap_interval(differences)
    return PairedTest(
        pairs=n,
        mean_first=mean_first,
        mean_second=mean_second,
        effect=mean_second - mean_first,
        low=None if found is None else 100 * found[0],
        high=None if found is None else 100 * found[1],
        p_value=_permutation_p(differences),
        method="permutation",
    )


def _mcnemar(
    pairs: Sequence[tuple[float, float]], mean_first: float, mean_second: float
) -> PairedTest:
    first_only = sum(1 for a, b in pairs if a == 1.0 and b == 0.0)
    second_only = sum(1 for a, b in pairs if a == 0.0 and b == 1.0)
    both = sum(1 for a, b in pairs if a == 1.0 and b == 1.0)
    neither = len(pairs) - first_only - second_only - both
    low, high = newcombe_paired_interval(both, second_only, first_only, neither)
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
    both: int, second_only: int, first_only: int, neither: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Newcombe's method 10 interval of (second's proportion - first's), paired data.

    The counts are the paired 2 x 2 table with the second run as rows: both right,
    second right only, first right only, both wrong. Each proportion's Wilson interval,
    combined "square and add" with the correlation of the two proportions (Newcombe's
    continuity-corrected phi: its numerator shrunk by n/2 when positive, 0 below that).
    """
    n = both + second_only + first_only + neither
    right_second, right_first = both + second_only, both + first_only
    p2, p1 = right_second / n, right_first / n
    l2, u2 = wilson_bounds(right_second, n, confidence)
    l1, u1 = wilson_bounds(right_first, n, confidence)
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


def _permutation_p(differences: Sequence[float]) -> float:
    """Two-sided p of the mean difference under random swaps within each pair."""
    if len(differences) < 2 or all(d == 0 for d in differences):
        # One pair's swap gives the same |mean|, as do swaps of zeros: no evidence.
        return 1.0
    import numpy as np
    from scipy.stats import permutation_test

    values = np.asarray(differences, dtype=float)
    result = permutation_test(
        (values,),
        np.mean,
        permutation_type="samples",
        n_resamples=PERMUTATION_RESAMPLES,
        alternative="two-sided",
        rng=np.random.default_rng(PERMUTATION_SEED),
        batch=RESAMPLE_BATCH,
    )
    return float(min(1.0, result.pvalue))


def p_figure(p_value: float) -> str:
    """A p-value as a reader takes it: two significant digits, tiny ones as "< 0.001"."""
    return "< 0.001" if p_value < 0.001 else f"{p_value:.2g}"


def p_text(p_value: float) -> str:
    """The p-value in words: "p = 0.0078", "p < 0.001"."""
    figure = p_figure(p_value)
    return f"p {figure}" if figure.startswith("<") else f"p = {figure}"


def points_text(value: float) -> str:
    """A difference in points with its sign: "+12.5", "-3", "0"."""
    rounded = round_points(value)
    return f"{rounded:+g}" if rounded else "0"


def effect_text(test: PairedTest) -> str:
    """A test in one line: "-50 points (95 %: -75.2 to -12.1), p = 0.0078, 8 pairs: ..."."""
    bounds = (
        ""
        if test.low is None or test.high is None
        else f" (95 %: {points_text(test.low)} to {points_text(test.high)})"
    )
    return (
        f"{points_text(test.effect)} points{bounds}, {p_text(test.p_value)}, "
        f"{test.pairs:,} pair{'s' * (test.pairs != 1)}: {test.verdict}"
    )


METHOD_NAMES = {
    "mcnemar": "exact McNemar test on right/wrong outcomes",
    "permutation": "paired permutation test on graded scores",
}


def comparison_lines(paired: PairedComparison) -> list[str]:
    """The comparison as text: the method, overall, then each length."""
    first, second = paired.names()
    if paired.overall is None:
        return [
            f"{second} minus {first}: no sample is scored in both runs, so nothing can be tested"
        ]
    lines = [
        f"{second} minus {first} ({METHOD_NAMES[paired.overall.method]}, "
        f"samples paired by length, depth and sample index):",
        f"  overall: {effect_text(paired.overall)}",
    ]
    lines += [f"  {length:,} tokens: {effect_text(t)}" for length, t in paired.by_length.items()]
    if paired.unscored_pairs:
        lines.append(
            f"  {paired.unscored_pairs:,} shared samples are scored in one run only "
            "(failed, unscored or truncated in the other) and are left out"
        )
    return lines
