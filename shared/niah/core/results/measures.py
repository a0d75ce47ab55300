"""A run's measures from its samples' task scores: means, intervals, effective length.

The mean per length, per depth and overall, each with its 95 % interval, the effective
length and the area under the curve: what the report, the comparison, the axes' small
multiples and the sentinel's check all read.
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any

from niah.core.request.request_options import EffectiveLengthRule
from niah.core.results.effective import effective_length
from niah.core.results.uncertainty import CONFIDENCE, Interval, interval


def measures(cells: list[dict[str, Any]], *, rule: EffectiveLengthRule) -> dict[str, Any]:
    """The run's measures from every sample's ``task_score`` (in [0, 1]), as percents.

    Mean per length, per depth and overall, each with its 95 % interval
    (``niah.core.results.uncertainty``); effective length under the run's ``rule`` (the
    longest length whose mean is at least RULER's 85.6, or NoLiMa's 85 % of the mean at
    lengths of 1,000 tokens or less) with the lengths its intervals allow; and the area
    under the mean-vs-length curve (trapezoids over the lengths, divided by their span,
    so 100 is perfect everywhere).
    """
    scored = [c for c in cells if c.get("task_score") is not None]
    by_length = _means(scored, "context_length")
    by_depth = _means(scored, "depth_percent")
    length_intervals = _intervals(scored, "context_length")
    scores = [float(c["task_score"]) for c in scored]
    overall = mean_percent(scores)
    mean_interval = interval(scores)
    methods = {i.method for i in [mean_interval, *length_intervals.values()] if i is not None}
    return {
        "mean": overall,
        "mean_interval": mean_interval.as_list() if mean_interval else None,
        "by_length": {str(k): v for k, v in by_length.items()},
        "by_length_interval": {
            str(k): i.as_list() if i else None for k, i in length_intervals.items()
        },
        "by_depth": {f"{k:g}": v for k, v in by_depth.items()},
        "by_depth_interval": {
            f"{k:g}": i.as_list() if i else None
            for k, i in _intervals(scored, "depth_percent").items()
        },
        "confidence": CONFIDENCE,
        "interval_methods": sorted(methods),
        "effective_length": effective_length(
            {int(k): v for k, v in by_length.items()},
            {int(k): i for k, i in length_intervals.items()},
            rule=rule,
        ),
        "area_under_curve": area_under_curve({int(k): v for k, v in by_length.items()}),
    }


def _intervals(cells: list[dict[str, Any]], key: str) -> dict[Any, Interval | None]:
    groups: dict[Any, list[float]] = {}
    for cell in cells:
        groups.setdefault(cell[key], []).append(float(cell["task_score"]))
    return {k: interval(values) for k, values in sorted(groups.items())}


def _means(cells: list[dict[str, Any]], key: str) -> dict[Any, float]:
    groups: dict[Any, list[float]] = {}
    for cell in cells:
        groups.setdefault(cell[key], []).append(float(cell["task_score"]))
    return {k: v for k, values in sorted(groups.items()) if (v := mean_percent(values)) is not None}


def mean_percent(values: list[float]) -> float | None:
    """The mean of scores in [0, 1] as a percent, to two decimals; None for none."""
    return round(100 * statistics.fmean(values), 2) if values else None


def area_under_curve(by_length: dict[int, float]) -> float | None:
    """Area under mean (percent) vs length, over the span of lengths (0 to 100)."""
    points = sorted(by_length.items())
    if not points:
        return None
    if len(points) == 1:
        return points[0][1]
    area = sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in itertools.pairwise(points))
    span = points[-1][0] - points[0][0]
    return round(area / span, 2)
