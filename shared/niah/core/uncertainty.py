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
        from scipy.stats import binomtest

        found = binomtest(int(sum(scores)), len(scores)).proportion_ci(
            confidence_level=confidence, method="wilson"
        )
        return Interval(100 * float(found.low), 100 * float(found.high), "wilson")
    if len(scores) < 2:
        return None
    import numpy as np
    from scipy.stats import bootstrap

    values = np.asarray(scores, dtype=float)
    if np.all(values == values[0]):
        # Every resample has the same mean; scipy warns of a degenerate distribution.
        return Interval(100 * float(values[0]), 100 * float(values[0]), "bootstrap")
    result = bootstrap(
        (values,),
        np.mean,
        confidence_level=confidence,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
    )
    found = result.confidence_interval
    return Interval(100 * float(found.low), 100 * float(found.high), "bootstrap")
