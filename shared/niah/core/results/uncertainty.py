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

- **Samples that share a grid point** (more than one sample per point): the samples of
  one point share its haystack and the needle's place (with a fixed needle, the whole
  prompt), so they are not independent draws and the intervals above would be too
  narrow. Their mean gets a cluster-robust interval, clustered by grid point: Miller's
  clustered standard error (2024, "Adding Error Bars to Evals", arXiv 2411.00640: the
  naive variance plus every within-cluster cross product, ``(1/n²) Σ_c (Σ_i (s_ic -
  mean))²``), with the CR1 factor ``G/(G-1)`` and Student's t on ``G - 1`` degrees of
  freedom for few clusters, as github.com/charlescoverdale/evaluatellm ``R/cluster.R``
  (0.1.0, read 2026-12-05) implements Miller's formula. The interval is Wilson's at the
  effective number of samples, the n whose binomial variance equals the clustered one,
  shrunk by ``(z/t)²`` for the degrees of freedom (the effective-sample-size Wilson
  interval for clustered survey data: Korn and Graubard 1998, Survey Methodology 24;
  SAS PROC SURVEYFREQ's "modified Wilson" limits, read 2026-12-05): it stays inside
  [0, 100] and does not collapse at 100 % as a mean ± t x SE does. Where every sample
  agrees there is no variance to say how alike a point's samples are: each point then
  counts once. Its coverage, simulated: ``tests/unit/test_clustered_intervals.py``.

scipy (1.17.1, PyPI, read 2026-11-27) is chosen over statsmodels: it is already the
reference both name, has both methods, and adds one package to the report function,
not two.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Interval:
    """A mean's interval, in percent (0-100), the method that made it and what it rests on."""

    low: float
    high: float
    method: str  # "wilson", "bootstrap" or "clustered"
    # The samples it rests on, and the clusters (grid points) they fall in: as many as
    # the samples when each sample is a point of its own.
    samples: int = 0
    clusters: int = 0

    def as_list(self) -> list[float]:
        """``[low, high]`` as stored in summaries (rounded to 0.01 of a percent)."""
        return [round(self.low, 2), round(self.high, 2)]

    def basis(self) -> dict[str, Any]:
        """What the interval assumes, as summaries store it beside the bounds."""
        return {"method": self.method, "samples": self.samples, "clusters": self.clusters}


def interval(
    scores: Sequence[float],
    confidence: float = CONFIDENCE,
    *,
    clusters: Sequence[Hashable] | None = None,
) -> Interval | None:
    """The ``confidence`` interval of the mean of ``scores`` (each in [0, 1]), in percent.

    ``clusters``: each score's cluster (its grid point), where samples share one. When
    some cluster holds two samples or more and there are two clusters or more, the
    clustered interval; else Wilson when every score is 0 or 1, else a bootstrap. None
    with no scores, or with one graded score (nothing to resample).
    """
    if not scores:
        return None
    count = len(scores) if clusters is None else len(set(clusters))
    if 1 < count < len(scores):
        assert clusters is not None
        return clustered_interval(scores, clusters, confidence)
    if all(score in (0.0, 1.0) for score in scores):
        low, high = wilson_bounds(int(sum(scores)), len(scores), confidence)
        return Interval(100 * low, 100 * high, "wilson", len(scores), count)
    found = bootstrap_interval(scores, confidence)
    if found is None:
        return None
    return Interval(100 * found[0], 100 * found[1], "bootstrap", len(scores), count)


def clustered_interval(
    scores: Sequence[float], clusters: Sequence[Hashable], confidence: float = CONFIDENCE
) -> Interval:
    """The cluster-robust interval of the mean of ``scores`` (in [0, 1]), in percent.

    Wilson's interval at ``effective_samples`` (the module's docstring says why).
    """
    mean = math.fsum(scores) / len(scores)
    effective = effective_samples(scores, clusters, confidence)
    low, high = wilson_share_bounds(mean, effective, confidence)
    return Interval(100 * low, 100 * high, "clustered", len(scores), len(set(clusters)))


def effective_samples(
    values: Sequence[float], clusters: Sequence[Hashable], confidence: float = CONFIDENCE
) -> float:
    """How many independent right/wrong samples the clustered ``values`` (in [0, 1]) are worth.

    The n at which a proportion's binomial variance ``p (1 - p) / n`` equals the mean's
    variance (the clustered one, or the samples' own when that is larger), times
    ``(z / t)²`` for the clusters' ``G - 1`` degrees of freedom. With no variance to
    measure (every value alike), each cluster counts once.
    """
    naive, clustered, count = cluster_variances(values, clusters)
    degrees = degrees_factor(count, confidence)
    mean = math.fsum(values) / len(values)
    variance = max(naive, clustered)
    if variance <= 0 or not 0 < mean < 1:
        return count * degrees
    return mean * (1 - mean) / variance * degrees


def cluster_variances(
    values: Sequence[float], clusters: Sequence[Hashable]
) -> tuple[float, float, int]:
    """The variance of the values' mean taken as independent, and clustered; the clusters.

    Naive: ``Σ (v - mean)² / n²``. Clustered (Miller 2024; CR1): ``G / (G - 1) x
    Σ_c (Σ_i (v_ic - mean))² / n²``, the naive one plus every within-cluster cross
    product. With one cluster, the clustered variance is 0 (nothing to compare across).
    """
    groups: dict[Hashable, float] = {}
    n = len(values)
    mean = math.fsum(values) / n
    for value, cluster in zip(values, clusters, strict=True):
        groups[cluster] = groups.get(cluster, 0.0) + (value - mean)
    count = len(groups)
    naive = math.fsum((v - mean) ** 2 for v in values) / n**2
    if count < 2:
        return naive, 0.0, count
    clustered = count / (count - 1) * math.fsum(s * s for s in groups.values()) / n**2
    return naive, clustered, count


def degrees_factor(clusters: int, confidence: float = CONFIDENCE) -> float:
    """``(z / t)²`` on ``clusters - 1`` degrees of freedom: how few clusters shrink n."""
    return (z_value(confidence) / t_value(max(1, clusters - 1), confidence)) ** 2


@functools.cache
def t_value(degrees: int, confidence: float = CONFIDENCE) -> float:
    """Student's two-sided quantile on ``degrees`` degrees of freedom (12.7 at 1, 95 %)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2, degrees))


def wilson_bounds(
    successes: int, trials: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval of ``successes / trials``, as fractions."""
    return wilson_share_bounds(successes / trials, trials, confidence)


def wilson_share_bounds(
    share: float, trials: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Wilson's score interval (1927) of a share over ``trials`` samples, as fractions.

    ``trials`` may be fractional: an effective number of samples. The closed form
    scipy's ``proportion_ci(method="wilson")`` computes, without its integer counts.
    """
    z = z_value(confidence)
    centre = share + z * z / (2 * trials)
    half = z * math.sqrt(max(0.0, share * (1 - share)) / trials + z * z / (4 * trials * trials))
    scale = 1 + z * z / trials
    return max(0.0, (centre - half) / scale), min(1.0, (centre + half) / scale)


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


def with_interval(
    value: float | None,
    bounds: list[float] | None,
    *,
    unit: str = "",
    basis: dict[str, Any] | None,
) -> str:
    """A mean with its 95 % interval and what it assumes, as the report and CLI write it.

    "66.7 (95 %, clustered by grid point, 15 points: 52.1-79)"; with ``unit=" %"``,
    "66.7 % (95 %, ...: 52.1-79 %)"; the mean alone without bounds. ``basis``: the
    interval's (``Interval.basis``), or None for one stored before intervals said it.
    """
    if value is None:
        return "not determined (nothing scored)"
    shown = f"{figure(value)}{unit}"
    if not bounds:
        return shown
    return f"{shown} (95 %, {basis_text(basis)}: {interval_range(bounds, unit)})"


def basis_text(basis: dict[str, Any] | None) -> str:
    """What an interval assumes, in a few words: "clustered by grid point, 15 points".

    None: an interval stored before intervals said it, computed as if every sample were
    independent (as every interval was then).
    """
    if not basis:
        return "samples taken as independent"
    samples, clusters = int(basis.get("samples") or 0), int(basis.get("clusters") or 0)
    if basis.get("method") == "clustered":
        return f"clustered by grid point, {clusters:,} points"
    if clusters == 1 and samples > 1:
        return f"{samples:,} samples of one grid point, taken as independent"
    return "one sample per grid point" if samples > 1 else "one sample"


def z_value(confidence: float = CONFIDENCE) -> float:
    """The two-sided normal quantile of ``confidence`` (1.959964 at 95 %)."""
    return _normal_quantile(0.5 + confidence / 2)


@functools.cache
def _normal_quantile(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(level)


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
