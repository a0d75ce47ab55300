"""Has a sentinel's model fallen from its baseline? A sequential test, its false alarms stated.

Compared with the run before only, at 5 % a comparison, a daily sentinel raised about 18
false alarms a year, flagged a one-run blip twice and never saw a drift of a point a
week. Here each run is weighed against a fixed baseline, and the evidence accumulates:

- **The baseline**: the sentinel's first ``BASELINE_RUNS`` runs of its request (each
  joins unless it raised an alarm or looks fallen itself: its own likelihood ratio,
  below, above 1), or the run the user pins. After an alarm, a
  sentinel with no pin starts a new baseline at the run that raised it: one alert per
  change, and the new level is what is watched from then on. A pinned baseline stays.
- **What a run scores**: the sum of its samples' task scores over every sample asked
  (a sample with no score, a failed, blocked or cut-off call, counts 0: calls that start
  failing are a change too).
- **The floor**: the baseline's share's one-sided ``FLOOR_CONFIDENCE`` lower bound
  (Wilson's), so a baseline that came out high by chance does not hold the model to more
  than it showed.
- **A run's evidence of a fall**: the likelihood ratio of its score under a share one
  ``margin`` below the floor against the floor, ``(q/f)^s ((1-q)/(1-f))^(n-s)``. When
  the run's expected share is at least the floor and its samples are independent given
  their prompts (the sentinel asks the same prompts every time), its mean is at most 1;
  for graded scores in [0, 1] too, the ratio being convex in each score.
- **Shiryaev-Roberts** (Shiryaev 1963, Roberts 1966): ``R_t = (1 + R_(t-1)) L_t``, an
  alarm when ``R_t >= A``, then ``R`` starts again at 0. With no fall, ``E[R_t | past] <=
  1 + R'_(t-1)`` (``R'`` after any restart), so summing over N firings, ``A x E[alarms] <=
  E[sum of R at alarms] <= N``: at most ``N / A`` false alarms in N firings, whatever N.
  ``A`` is the firings a year over the false alarms a year allowed (the
  ``sentinel_false_alarms_per_year`` setting). A slow drift adds up where a comparison
  with the run before sees nothing.
- **"Unchanged"** is an equivalence: the run's share minus the baseline's, its 90 %
  interval (Newcombe's square-and-add of the two Wilson intervals, 1998, method 10)
  inside ``± margin`` (two one-sided tests at 5 %).

The simulated rate and delays (``tests/unit/test_sentinel_watch.py``): docs/sentinels.md.
Every function takes numpy arrays as well as numbers, so a thousand simulated years run
through this code at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from niah.core.results.uncertainty import wilson_share_bounds, z_value

# A week of a daily sentinel. More runs make the floor tighter (fewer false alarms and a
# fall seen sooner) and the baseline later to form.
BASELINE_RUNS = 7
# The floor's one-sided confidence: at 80 % a 100-sample baseline run's floor is about
# 1.8 points under a 95 % share.
FLOOR_CONFIDENCE = 0.8
# "Unchanged": the difference's interval inside ± margin at this two-sided level (TOST 5 %).
EQUIVALENCE_CONFIDENCE = 0.90
EDGE = 1e-9  # shares kept inside (0, 1): their logarithms stay finite
# The sentinel docs/sentinels.md recommends (its cost there): 2 lengths x 5 depths x 12
# samples, the size the simulated rates and delays are stated at.
DEFAULT_REQUEST: dict[str, Any] = {
    "model_name": "gemini-3.8-flash",
    "context_lengths": [8000, 32000],
    "document_depth_percents": [0, 25, 50, 75, 100],
    "samples_per_cell": 12,
    "thinking_level": "low",
}
DEFAULT_SAMPLES = 2 * 5 * 12


@dataclass(frozen=True)
class WatchSettings:
    """How a sentinel is watched: its false alarms a year, its firings a year, its margin."""

    false_alarms_per_year: float
    firings_per_year: float
    margin_points: float

    @property
    def threshold(self) -> float:
        """Shiryaev-Roberts' ``A``: the firings one false alarm may take, at least 1."""
        return max(1.0, self.firings_per_year / self.false_alarms_per_year)

    def as_dict(self) -> dict[str, Any]:
        """As a check stores them."""
        return {
            "false_alarms_per_year": self.false_alarms_per_year,
            "firings_per_year": round(self.firings_per_year, 2),
            "margin_points": self.margin_points,
            "threshold": round(self.threshold, 2),
        }


def floor_share(right: Any, samples: Any) -> Any:
    """The baseline share's one-sided lower bound at ``FLOOR_CONFIDENCE`` (Wilson's)."""
    samples = np.maximum(np.asarray(samples, dtype=float), 1.0)
    share = np.clip(np.asarray(right, dtype=float) / samples, 0.0, 1.0)
    z = z_value(2 * FLOOR_CONFIDENCE - 1)  # the one-sided quantile
    centre = share + z * z / (2 * samples)
    half = z * np.sqrt(share * (1 - share) / samples + z * z / (4 * samples * samples))
    return np.clip((centre - half) / (1 + z * z / samples), EDGE, 1 - EDGE)


def fall_evidence(right: Any, samples: Any, floor: Any, margin: float) -> Any:
    """Log of a run's likelihood ratio of a share ``margin`` under ``floor`` against it.

    The lower share is at least half the floor (a floor under twice the margin has
    little room to fall).
    """
    floor = np.clip(np.asarray(floor, dtype=float), EDGE, 1 - EDGE)
    lower = floor - np.minimum(margin, floor / 2)
    right = np.asarray(right, dtype=float)
    wrong = np.asarray(samples, dtype=float) - right
    return right * np.log(lower / floor) + wrong * np.log((1 - lower) / (1 - floor))


def watch_step(
    baseline: tuple[Any, Any, Any],
    statistic: Any,
    run: tuple[Any, Any],
    *,
    settings: WatchSettings,
    pinned: bool = False,
) -> dict[str, Any]:
    """One run weighed against the baseline: the statistic, the alarm, the next baseline.

    ``baseline``: its score, samples and runs (0 runs: this run starts it, with nothing
    to weigh it against); ``run``: the run's score and samples.
    Returns arrays (or numbers): ``floor``, ``evidence`` (the statistic before any
    restart), ``alarm``, ``statistic`` (after it), and the baseline for the next run.
    """
    baseline_right, baseline_samples, baseline_runs = baseline
    right, samples = run
    runs = np.asarray(baseline_runs)
    started = runs > 0
    floor = floor_share(baseline_right, baseline_samples)
    log_ratio = fall_evidence(right, samples, floor, settings.margin_points / 100)
    grown = (1.0 + np.asarray(statistic, dtype=float)) * np.exp(np.minimum(log_ratio, 700.0))
    evidence = np.where(started, grown, 0.0)
    alarm = started & (evidence >= settings.threshold)
    # A run joins a baseline still forming only if it looks like it (its own ratio
    # favours the baseline's share): a fall in the first week is not taken in as normal.
    joins = ~alarm & (runs < BASELINE_RUNS) & (log_ratio <= 0) & (not pinned)
    restart = ~started | (alarm & (not pinned))
    right, samples = np.asarray(right, dtype=float), np.asarray(samples, dtype=float)
    return {
        "floor": floor,
        "evidence": evidence,
        "alarm": alarm,
        "statistic": np.where(alarm, 0.0, evidence),
        "baseline_right": np.where(
            restart, right, np.where(joins, baseline_right + right, baseline_right)
        ),
        "baseline_samples": np.where(
            restart, samples, np.where(joins, baseline_samples + samples, baseline_samples)
        ),
        "baseline_runs": np.where(restart, 1, np.where(joins, runs + 1, runs)),
    }


def difference(
    right: float, samples: int, baseline_right: float, baseline_samples: int, margin: float
) -> dict[str, Any]:
    """The run's share minus the baseline's, in points, its 90 % interval and the verdict.

    "unchanged" when the interval lies inside ± ``margin`` points, "fell" or "rose" when
    it lies wholly beyond it, else "undecided" (too few samples to say either).
    """
    share, base = right / samples, baseline_right / baseline_samples
    low_run, high_run = wilson_share_bounds(share, samples, EQUIVALENCE_CONFIDENCE)
    low_base, high_base = wilson_share_bounds(base, baseline_samples, EQUIVALENCE_CONFIDENCE)
    effect = share - base
    low = effect - float(np.hypot(share - low_run, high_base - base))
    high = effect + float(np.hypot(high_run - share, base - low_base))
    bounds = (100 * low, 100 * high)
    if -margin < bounds[0] and bounds[1] < margin:
        verdict = "unchanged"
    elif bounds[1] < -margin:
        verdict = "fell"
    elif bounds[0] > margin:
        verdict = "rose"
    else:
        verdict = "undecided"
    return {
        "effect": round(100 * effect, 1) + 0.0,
        "interval": [round(bounds[0], 1) + 0.0, round(bounds[1], 1) + 0.0],
        "confidence": EQUIVALENCE_CONFIDENCE,
        "margin": margin,
        "verdict": verdict,
    }
