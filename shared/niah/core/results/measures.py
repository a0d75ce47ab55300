"""A run's measures from its samples' task scores: means, intervals, effective length.

The mean per length, per depth and overall, each with its 95 % interval, the effective
length and the area under the curve: what the report, the comparison, the axes' small
multiples and the sentinel's check all read.

Samples of one grid point are not independent: they share its haystack (the same
tokens at every sample of a length), the needle's place and, with a fixed needle, the
whole prompt; at temperature 0 they are near repeats. Each interval is therefore
clustered by grid point (``grid_point``), and says so (``interval_basis``).
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any

from niah.core.request.request_options import EffectiveLengthRule
from niah.core.results.effective import effective_length
from niah.core.results.uncertainty import CONFIDENCE, Interval, interval

# What an interval's clusters are, as the report's notes say it.
CLUSTERS_TEXT = (
    "clustered by grid point (length, depth and axis value): a point's samples share its "
    "haystack and the needle's place, so they count as one cluster, not as independent samples"
)
# What a summary stored before intervals were clustered assumed.
INDEPENDENT_NOTE = (
    "every sample taken as independent (a summary made before intervals were clustered)"
)


def grid_point(cell: dict[str, Any]) -> tuple[int, float, str]:
    """The cluster a sample belongs to: its length, depth and variant (its axis's value)."""
    return int(cell["context_length"]), float(cell["depth_percent"]), str(cell.get("variant") or "")


def measures(cells: list[dict[str, Any]], *, rule: EffectiveLengthRule) -> dict[str, Any]:
    """The run's measures from every sample's ``task_score`` (in [0, 1]), as percents.

    Mean per length, per depth and overall, each with its 95 % interval clustered by
    grid point (``niah.core.results.uncertainty``) and what it rests on; effective
    length under the run's ``rule`` (the longest length whose mean is at least RULER's
    85.6, or NoLiMa's 85 % of the mean at lengths of 1,000 tokens or less) with the
    lengths its intervals allow; and the area under the mean-vs-length curve
    (trapezoids over the lengths, divided by their span, so 100 is perfect everywhere).
    """
    scored = [c for c in cells if c.get("task_score") is not None]
    by_length = _means(scored, "context_length")
    by_depth = _means(scored, "depth_percent")
    length_intervals = _intervals(scored, "context_length")
    depth_intervals = _intervals(scored, "depth_percent")
    scores = [float(c["task_score"]) for c in scored]
    overall = mean_percent(scores)
    mean_interval = interval(scores, clusters=[grid_point(c) for c in scored])
    found = [mean_interval, *length_intervals.values(), *depth_intervals.values()]
    methods = {i.method for i in found if i is not None}
    return {
        "mean": overall,
        "mean_interval": mean_interval.as_list() if mean_interval else None,
        "by_length": {str(k): v for k, v in by_length.items()},
        "by_length_interval": {
            str(k): i.as_list() if i else None for k, i in length_intervals.items()
        },
        "by_depth": {f"{k:g}": v for k, v in by_depth.items()},
        "by_depth_interval": {
            f"{k:g}": i.as_list() if i else None for k, i in depth_intervals.items()
        },
        "confidence": CONFIDENCE,
        "interval_methods": sorted(methods),
        # What each interval rests on: its samples and clusters (``basis_text`` says it).
        "interval_basis": {
            "clusters": CLUSTERS_TEXT,
            "mean": mean_interval.basis() if mean_interval else None,
            "by_length": {str(k): i.basis() for k, i in length_intervals.items() if i},
            "by_depth": {f"{k:g}": i.basis() for k, i in depth_intervals.items() if i},
        },
        "effective_length": effective_length(
            {int(k): v for k, v in by_length.items()},
            {int(k): i for k, i in length_intervals.items()},
            rule=rule,
        ),
        "area_under_curve": area_under_curve({int(k): v for k, v in by_length.items()}),
    }


def basis_of(measures: dict[str, Any], part: str, key: str | None = None) -> dict[str, Any] | None:
    """What one stored interval rests on: ``"mean"``, or ``"by_length"`` and a length.

    None for a summary stored before intervals kept it (``basis_text`` then says its
    samples were taken as independent, as they were).
    """
    found = (measures.get("interval_basis") or {}).get(part)
    if key is not None:
        found = (found or {}).get(key)
    return found or None


def _intervals(cells: list[dict[str, Any]], key: str) -> dict[Any, Interval | None]:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for cell in cells:
        groups.setdefault(cell[key], []).append(cell)
    return {
        k: interval([float(c["task_score"]) for c in found], clusters=list(map(grid_point, found)))
        for k, found in sorted(groups.items())
    }


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
