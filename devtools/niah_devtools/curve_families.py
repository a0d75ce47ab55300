"""Randomized model curves drawn from a seed, to check a certificate on curves nobody tuned it to.

Issue 54: a certificate measured on a hand-picked list of curves says little of the
curves it meets. Here each curve is drawn from one of six families, its parameters
drawn from ranges stated once (``FAMILIES``), so a bench or a test names a seed and a
count, never a curve. A curve gives the chance a sample at a length and depth is
answered right; a length's share is its mean over the depths (as a certificate's
samples draw their depth at random). Every family falls (or stays level) with length,
the assumption bisection rests on.

- ``logistic``: ``1 / (1 + exp((ln L - ln m) / w))``, any midpoint ``m`` (log-uniform,
  300 to 3,000,000 tokens) and width ``w`` (0.1 to 1.0).
- ``plateau``: the same, times a top of 80 % to 100 %, so the model is right at most
  that often before falling (``m`` 2,000 to 3,000,000, ``w`` 0.1 to 0.6).
- ``shelf``: right ``h1`` (93-100 %) to a first drop at ``m1`` (2,000 to 200,000), then
  ``h2`` (80-92 %) for half a decade to a decade and a half, then falling.
- ``lost_in_middle``: a plateau (top 90-100 %) whose middle depths are worse: a depth
  ``d`` of the document is right ``1 - dip sin(pi d)`` times as often, ``dip`` 10-40 %
  (at the middle depth that is 9-40 points lower).
- ``always_right`` and ``never_right``.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from niah.core.results.certify import Certificate, CertifyPlan

# How many curves of each family a draw holds: 230 in all.
FAMILY_COUNTS = {
    "logistic": 60,
    "plateau": 50,
    "shelf": 50,
    "lost_in_middle": 50,
    "always_right": 10,
    "never_right": 10,
}
# The grid's depths (percent), as the bench's 11 x 11 grid has them.
DEPTHS = tuple(10.0 * i for i in range(11))


def _logistic(length: float, midpoint: float, width: float) -> float:
    exponent = (math.log(length) - math.log(midpoint)) / width
    return 1 / (1 + math.exp(min(exponent, 700.0)))


@dataclass(frozen=True)
class DrawnCurve:
    """One drawn curve: its family, parameters, and the chance right at (length, depth)."""

    family: str
    params: dict[str, float] = field(default_factory=dict)
    seed: int = 0  # the answers' draws

    def right_share(self, length: float, depth: float) -> float:
        """The chance a sample at ``length`` tokens with its needle at ``depth`` % is right."""
        p = self.params
        if self.family == "always_right":
            return 1.0
        if self.family == "never_right":
            return 0.0
        if self.family == "logistic":
            return _logistic(length, p["midpoint"], p["width"])
        if self.family == "plateau":
            return p["top"] * _logistic(length, p["midpoint"], p["width"])
        if self.family == "shelf":
            low = p["shelf"] * _logistic(length, p["midpoint2"], p["width2"])
            return low + (p["top"] - p["shelf"]) * _logistic(length, p["midpoint"], p["width"])
        if self.family == "lost_in_middle":
            base = p["top"] * _logistic(length, p["midpoint"], p["width"])
            return base * (1 - p["dip"] * math.sin(math.pi * depth / 100))
        raise ValueError(f"unknown family {self.family}")

    def length_share(self, length: float) -> float:
        """The share right at a length: the mean over the grid's depths."""
        return sum(self.right_share(length, d) for d in DEPTHS) / len(DEPTHS)

    def answers_right(self, length: int, sample: int) -> bool:
        """Sample ``sample`` at ``length``: a depth drawn at random, then right or wrong."""
        digest = hashlib.sha256(f"{self.seed}:{length}:{sample}".encode()).digest()
        depth = DEPTHS[int.from_bytes(digest[:4], "big") % len(DEPTHS)]
        return int.from_bytes(digest[8:16], "big") / 2**64 < self.right_share(length, depth)

    def label(self) -> str:
        """The family and its parameters, short."""
        shown = ", ".join(
            f"{k} {v:,.0f}" if v >= 100 else f"{k} {v:.2f}" for k, v in self.params.items()
        )
        return f"{self.family} ({shown})" if shown else self.family


def _log_uniform(draw: random.Random, low: float, high: float) -> float:
    return math.exp(draw.uniform(math.log(low), math.log(high)))


def _draw_params(family: str, draw: random.Random) -> dict[str, float]:
    """A family's parameters, from the ranges the module's docstring states."""
    if family == "logistic":
        return {
            "midpoint": _log_uniform(draw, 300, 3_000_000),
            "width": draw.uniform(0.1, 1.0),
        }
    if family == "plateau":
        return {
            "top": draw.uniform(0.80, 1.00),
            "midpoint": _log_uniform(draw, 2_000, 3_000_000),
            "width": draw.uniform(0.1, 0.6),
        }
    if family == "shelf":
        first = _log_uniform(draw, 2_000, 200_000)
        return {
            "top": draw.uniform(0.93, 1.00),
            "shelf": draw.uniform(0.80, 0.92),
            "midpoint": first,
            "width": draw.uniform(0.1, 0.4),
            "midpoint2": first * 10 ** draw.uniform(0.5, 1.5),
            "width2": draw.uniform(0.1, 0.4),
        }
    if family == "lost_in_middle":
        return {
            "top": draw.uniform(0.90, 1.00),
            "midpoint": _log_uniform(draw, 2_000, 3_000_000),
            "width": draw.uniform(0.1, 0.6),
            "dip": draw.uniform(0.10, 0.40),
        }
    return {}


def draw_curves(seed: int, counts: dict[str, int] | None = None) -> list[DrawnCurve]:
    """``counts`` curves of each family (``FAMILY_COUNTS`` by default), drawn from ``seed``."""
    draw = random.Random(seed)
    curves = []
    for family, count in (counts or FAMILY_COUNTS).items():
        for _ in range(count):
            params = _draw_params(family, draw)
            curves.append(DrawnCurve(family, params, seed=draw.randrange(2**32)))
    return curves


def steps_off(found: int, allowed: Sequence[int]) -> int:
    """How many candidates an answer (an index) is from the nearest allowed one."""
    return min((abs(found - i) for i in allowed), default=len(DEPTHS))


def certify_curve(
    plan: CertifyPlan, curve: DrawnCurve, cost: Callable[[int], float]
) -> Certificate:
    """Run ``plan`` to its certificate, each sample it asks for drawn from ``curve``."""
    from niah.core.results.certify_forecast import run_planner

    return run_planner(plan, lambda length, k: float(curve.answers_right(length, k)), cost)
