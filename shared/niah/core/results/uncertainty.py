"""How sure a mean is: a 95 % interval for every mean the service reports.

A NIAH grid has one to a few samples per point, so the difference between two models at
one length is often noise; each mean carries its interval so a reader can tell.

- **Right/wrong outcomes** (every score 0 or 1): the Wilson score interval, from
  scipy's ``binomtest(k, n).proportion_ci(method="wilson")``. It stays inside [0, 1]
  and keeps its coverage near 95 % at the small n and the extreme proportions NIAH
  grids have (a run at 100 %), where the normal ("Wald") interval collapses to a point.
- **Graded scores** (a share of needles, a similarity ratio): scipy's ``bootstrap`` of
  the mean, percentile method, 2,000 resamples (Efron and Tibshirani advise at least
  1,000 for percentile intervals; scipy's default 9,999 made a 10,000-sample summary
  take seconds) from a fixed seed, so the same samples always give the same interval.
  One graded sample gives no interval (None).

scipy (1.17.1, PyPI, read 2026-11-27) is chosen over statsmodels: it is already the
reference both name, has both methods, and adds one package to the report function,
not two.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Interval:
    """A mean's interval, in percent (0-100), and the method that made it."""

    low: float
    high: float
    method: str  # "wilson" or "bootstrap"

    def as_list(self) -> list[float]:
        """``[low, high]`` as stored in summaries (rounded to 0.01 of a percent)."""
        return [round(self.low, 2), round(self.high, 2)]


def interval(scores: Sequence[float], confidence: float = CONFIDENCE) -> Interval | None:
    """The ``confidence`` interval of the mean of ``scores`` (each in [0, 1]), in percent.

    Wilson when every score is 0 or 1, else a bootstrap; None with no scores, or with
    one graded score (nothing to resample).
    """
    if not scores:
        return None
    if all(score in (0.0, 1.0) for score in scores):
        low, high = wilson_bounds(int(sum(scores)), len(scores), confidence)
        return Interval(100 * low, 100 * high, "wilson")
    found = bootstrap_interval(scores, confidence)
    return None if found is None else Interval(100 * found[0], 100 * found[1], "bootstrap")


def wilson_bounds(
    successes: int, trials: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval of ``successes / trials``, as fractions."""
    from scipy.stats import binomtest

    found = binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="wilson")
    return float(found.low), float(found.high)


def bootstrap_interval(
    values: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean of ``values``, in their own unit.

    None with fewer than two values. A paired comparison bootstraps its differences
    (-1 to 1) with it, so it knows nothing of percent or of right/wrong scores.
    """
    if len(values) < 2:
        return None
    import numpy as np
    from scipy.stats import bootstrap

    data = np.asarray(values, dtype=float)
    if np.all(data == data[0]):
        # Every resample has the same mean; scipy warns of a degenerate distribution.
        return float(data[0]), float(data[0])
    result = bootstrap(
        (data,),
        np.mean,
        confidence_level=confidence,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
        # 200 resamples at a time: 16 MB at 10,000 values, not 160 MB all at once.
        batch=200,
    )
    found = result.confidence_interval
    return float(found.low), float(found.high)


def figure(value: float | None) -> str:
    """Three significant digits; thousands written out, never as 1.2e+03; None as "–"."""
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def interval_range(bounds: list[float], unit: str = "") -> str:
    """Stored ``[low, high]`` bounds as "52.1-79" (with ``unit``: "52.1-79 %")."""
    return f"{figure(bounds[0])}-{figure(bounds[1])}{unit}"


def with_interval(value: float | None, bounds: list[float] | None, *, unit: str = "") -> str:
    """A mean with its 95 % interval, as the report and ``niah status`` both write it.

    "66.7 (95 %: 52.1-79)"; with ``unit=" %"``, "66.7 % (95 %: 52.1-79 %)"; the mean
    alone without bounds.
    """
    if value is None:
        return "not determined (nothing scored)"
    shown = f"{figure(value)}{unit}"
    return f"{shown} (95 %: {interval_range(bounds, unit)})" if bounds else shown


def z_value(confidence: float = CONFIDENCE) -> float:
    """The two-sided normal quantile of ``confidence`` (1.959964 at 95 %)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def samples_for_margin(
    margin_points: float, score_percent: float = 50.0, confidence: float = CONFIDENCE
) -> int:
    """Samples a mean needs for its ``confidence`` interval to be ± ``margin_points``.

    The normal approximation, n = z² p (1 - p) / m², rounded up; p = 50 % is the worst
    case (the widest interval). Near 0 or 100 % and at a few samples the Wilson interval
    the report draws is a little different, so take this as the order of magnitude.
    """
    p, margin = score_percent / 100, margin_points / 100
    needed = z_value(confidence) ** 2 * p * (1 - p) / margin**2
    return max(1, math.ceil(needed - 1e-9))  # 1e-9: an exact integer stays itself


def margin_for_samples(
    samples: int, score_percent: float = 50.0, confidence: float = CONFIDENCE
) -> float:
    """The ± margin, in points, a mean of ``samples`` samples has (the inverse of above)."""
    p = score_percent / 100
    return 100 * z_value(confidence) * math.sqrt(p * (1 - p) / samples)
