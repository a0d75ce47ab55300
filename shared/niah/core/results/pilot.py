"""What runs already made say of a plan's assumptions: the score, the icc, the coupling.

A plan (``niah.core.results.power``) rests on three figures no catalog knows: the
first run's score, how alike a grid point's samples are (the intra-cluster
correlation) and how often two runs answer a pair alike (the coupling). Its defaults
are guesses; a pilot measures them. ``niah plan --pilot RUN [RUN]`` reads them here:

- **the score**: the first run's mean over its scored samples;
- **the icc**: the one-way analysis-of-variance estimator over grid points, ``(MSB -
  MSW) / (MSB + (n0 - 1) MSW)`` with ``n0`` the points' adjusted mean size (Donner
  1986, "A review of inference procedures for the intraclass correlation coefficient
  in the one-way random effects model", International Statistical Review 54:67-82),
  clipped to 0 below and 0.95 above, on the first run (the model's icc is the first
  run's; the change moves the second's). It needs a point with two samples or more.
  Simulated (55 points of 10 samples at 85 %, 20 seeds), it reads 0.27 for 0.3 and
  0.52 for 0.5, each give or take 0.1;
- **the coupling** (two runs over the same grid): the pairs' observed discordant share
  placed between what the outcome model expects of it at coupling 0 and at 1, given
  the two means and the icc (``power.discordance``; linear in the coupling), clipped
  to 0-1 (simulated as above: 0.63 for 0.6, 0.28 for 0.3, 0.91 for 0.9, give or take
  0.07). Right/wrong scores only: the model has no graded answers.

A figure a pilot cannot give is None, with the reason beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from niah.core.results.measures import grid_point
from niah.core.results.paired import pair_key
from niah.core.results.power import DEFAULT_ICC, discordance

# The plan takes an icc below 1; a pilot's estimate at or near it says "alike", not 1.
MOST_ICC = 0.95

Cells = Sequence[dict[str, Any]]


@dataclass(frozen=True)
class PilotFigures:
    """The assumptions a pilot measured (None: not measurable), and what they rest on."""

    expected_score: float | None  # percent
    icc: float | None
    coupling: float | None
    points: int
    samples: int
    pairs: int
    why_not: list[str] = field(default_factory=list)


def _scores(cells: Cells) -> list[tuple[tuple[int, float, str], float]]:
    """(grid point, score) of each scored sample."""
    return [
        (grid_point(c), float(c["task_score"])) for c in cells if c.get("task_score") is not None
    ]


def point_icc(cells: Cells) -> float | None:
    """The one-way ANOVA intra-cluster correlation of the scores by grid point, or None.

    None with no point of two samples (nothing within a point to compare) or with
    every sample alike (no variance to share out).
    """
    groups: dict[tuple[int, float, str], list[float]] = {}
    for point, score in _scores(cells):
        groups.setdefault(point, []).append(score)
    count, total = len(groups), sum(len(g) for g in groups.values())
    if count < 2 or total <= count:
        return None
    mean = math.fsum(s for g in groups.values() for s in g) / total
    between = math.fsum(len(g) * (math.fsum(g) / len(g) - mean) ** 2 for g in groups.values())
    within = math.fsum((s - math.fsum(g) / len(g)) ** 2 for g in groups.values() for s in g)
    msb, msw = between / (count - 1), within / (total - count)
    size = (total - math.fsum(len(g) ** 2 for g in groups.values()) / total) / (count - 1)
    denominator = msb + (size - 1) * msw
    if denominator <= 0:
        return None
    return min(MOST_ICC, max(0.0, (msb - msw) / denominator))


def pilot_figures(first: Cells, second: Cells | None = None) -> PilotFigures:
    """The plan's assumptions from one pilot run's cells, or two runs' over one grid."""
    why_not: list[str] = []
    scored = _scores(first)
    if not scored:
        return PilotFigures(None, None, None, 0, 0, 0, ["the first run has no scored sample"])
    points = len({point for point, _ in scored})
    icc = point_icc(first)  # the model's icc is the first run's (the second's is moved)
    if icc is None:
        why_not.append(
            "icc: no grid point holds two scored samples (run the pilot with "
            "--samples_per_cell 2 or more), or every sample is alike"
        )
    coupling, pairs = None, 0
    if second is not None:
        coupling, pairs, said = _coupling(first, second, DEFAULT_ICC if icc is None else icc)
        why_not += said
    return PilotFigures(
        expected_score=100 * math.fsum(s for _, s in scored) / len(scored),
        icc=icc,
        coupling=coupling,
        points=points,
        samples=len(scored),
        pairs=pairs,
        why_not=why_not,
    )


def _coupling(first: Cells, second: Cells, icc: float) -> tuple[float | None, int, list[str]]:
    """The coupling two runs' pairs show (module docstring), their count, or why not."""
    theirs = {
        pair_key(c): float(c["task_score"]) for c in second if c.get("task_score") is not None
    }
    pairs = [
        (float(c["task_score"]), theirs[pair_key(c)])
        for c in first
        if c.get("task_score") is not None and pair_key(c) in theirs
    ]
    if not pairs:
        unpaired = "coupling: the two runs share no scored sample (paired by length, depth, sample)"
        return None, 0, [unpaired]
    if any(a not in (0.0, 1.0) or b not in (0.0, 1.0) for a, b in pairs):
        return None, len(pairs), ["coupling: graded scores; the model is of right/wrong ones"]
    first_share = math.fsum(a for a, _ in pairs) / len(pairs)
    second_share = math.fsum(b for _, b in pairs) / len(pairs)
    observed = sum(1 for a, b in pairs if a != b) / len(pairs)
    apart = discordance(first_share, second_share, icc, 0.0)
    alike = discordance(first_share, second_share, icc, 1.0)
    if apart - alike <= 0:
        return None, len(pairs), ["coupling: every pair must agree at these means"]
    return min(1.0, max(0.0, (apart - observed) / (apart - alike))), len(pairs), []
