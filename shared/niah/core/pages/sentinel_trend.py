"""A sentinel's trend for the runs index: its runs' scores over time, its baseline, its flags.

Each sentinel gets one plot: its runs at the times they were due (to scale), each run's
score as its test weighed it (the share of every sample asked, an unscored one counting
as wrong) with its 95 % interval as the band, the baseline each run was weighed against
as a dashed line, and the runs its check flagged marked in red. A run checked before
sentinels kept a baseline shows its mean instead. The ``trend`` macro
(``templates/trend.html``) draws it as inline SVG; here is only where each point falls,
and the rows of the table under it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from niah.core.results.curves import LEFT, PLOT_HEIGHT, PLOT_WIDTH, TOP, WIDTH
from niah.core.results.uncertainty import wilson_share_bounds, with_interval

FLAG_COLOUR, LINE_COLOUR = "#D55E00", "#0072B2"  # Okabe and Ito's, as the curves
TREND_HEIGHT = TOP + PLOT_HEIGHT + 40


def sentinel_trends(entries: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per sentinel (by name): its runs oldest first, the latest check, and its plot."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        if entry.get("sentinel"):
            runs.setdefault(str(entry["sentinel"]), []).append(entry)
    trends = {}
    for name, found in sorted(runs.items()):
        found.sort(key=lambda e: str(e.get("scheduled_at") or ""))
        points = [_point(e) for e in found]
        checked = [p for p in points if p["text"]]
        trends[name] = {
            "runs": points,
            "flagged": sum(p["flagged"] for p in points),
            "latest": checked[-1] if checked else None,
            "figure": trend_figure(name, points),
        }
    return trends


def _point(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": entry["run_id"],
        "scheduled_at": entry.get("scheduled_at"),
        "status": entry.get("status"),
        "mean": entry.get("mean"),
        "mean_interval": entry.get("mean_interval"),
        "mean_basis": entry.get("mean_basis"),
        "mean_text": entry.get("mean_text"),
        "share": entry.get("sentinel_share"),
        "samples": entry.get("sentinel_samples"),
        "baseline": entry.get("sentinel_baseline"),
        "flagged": bool(entry.get("sentinel_flagged")),
        "text": entry.get("sentinel_text") or "",
        "report_url": entry.get("report_url"),
    }


def trend_figure(name: str, points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The plot of one sentinel's scored runs: x the time each was due, to scale; y 0-100 %."""
    scored = [p for p in points if _score(p)[0] is not None]
    times = [_seconds(p["scheduled_at"]) for p in scored]
    first, last = (min(times), max(times)) if times else (0.0, 0.0)

    def x(when: float) -> float:
        # One time (or one run) sits in the middle; more are spread edge to edge.
        return LEFT + (
            PLOT_WIDTH / 2 if last == first else PLOT_WIDTH * (when - first) / (last - first)
        )

    dots = []
    for point, when in zip(scored, times, strict=True):
        value, bounds, said = _score(point)
        assert value is not None  # ``scored`` holds only runs with a score
        low_high = bounds or [value, value]
        dots.append(
            {
                "x": f"{x(when):.1f}",
                "y": f"{_y(value):.1f}",
                "low": f"{_y(low_high[0]):.1f}",
                "high": f"{_y(low_high[1]):.1f}",
                "colour": FLAG_COLOUR if point["flagged"] else LINE_COLOUR,
                "flagged": point["flagged"],
                "tooltip": f"{point['scheduled_at']}: {said}"
                + (f"; flagged: {point['text']}" if point["flagged"] else ""),
            }
        )
    return {
        "label": f"sentinel {name}: each run's score with its 95 % interval, and its baseline",
        "baseline": _steps(
            [
                (x(when), _y(point["baseline"]))
                for point, when in zip(scored, times, strict=True)
                if point.get("baseline") is not None
            ]
        ),
        "width": WIDTH,
        "height": TREND_HEIGHT,
        "grid": [
            {"x1": LEFT, "x2": LEFT + PLOT_WIDTH, "y": f"{_y(p):.1f}", "percent": p}
            for p in range(0, 101, 25)
        ],
        "line": " ".join(f"{d['x']},{d['y']}" for d in dots),
        "dots": dots,
        "ticks": _ticks(first, last, x),
        "tick_y": TOP + PLOT_HEIGHT + 16,
        "axis_y": TOP + PLOT_HEIGHT + 34,
        "middle": TOP + PLOT_HEIGHT / 2,
        "centre": LEFT + PLOT_WIDTH / 2,
    }


def _steps(points: list[tuple[float, float]]) -> str:
    """The baselines as steps: each held until the next run, which drops to its own.

    A new baseline (after a flag) is a jump at the run weighed against it, not a slope.
    """
    found: list[tuple[float, float]] = []
    for at, level in points:
        if found:
            found.append((at, found[-1][1]))
        found.append((at, level))
    return " ".join(f"{at:.1f},{level:.1f}" for at, level in found)


def _score(point: dict[str, Any]) -> tuple[float | None, list[float] | None, str]:
    """What a run's dot shows: the share its test weighed, else (older checks) its mean.

    The share's interval is Wilson's over the run's samples: the sentinel asks the same
    prompts each time, so what varies from run to run is the model's answers to them.
    """
    share, samples = point.get("share"), point.get("samples")
    if share is not None and samples:
        low, high = wilson_share_bounds(share / 100, samples)
        share_bounds = [round(100 * low, 2), round(100 * high, 2)]
        shown = with_interval(share, share_bounds, unit=" %", basis=None)
        said = f"{shown} of {samples:,} samples asked right (an unscored one counts as wrong)"
        if point.get("baseline") is not None:
            said += f"; baseline {point['baseline']:g} %"
        return share, share_bounds, said
    mean, bounds = point.get("mean"), point.get("mean_interval")
    shown = with_interval(mean, bounds, unit=" %", basis=point.get("mean_basis"))
    return mean, bounds, f"mean {shown}"


# Labelled times under the plot, evenly over its span (not one per run: firings by hand
# between scheduled ones would crowd their labels).
TICKS = 5


def _ticks(first: float, last: float, x: Callable[[float], float]) -> list[dict[str, Any]]:
    """Times evenly over the span, dates only when it is days long; the ends lean in."""
    if last == first:
        return [{"x": f"{x(first):.1f}", "text": _label(first, last - first), "anchor": "middle"}]
    spots = [first + (last - first) * i / (TICKS - 1) for i in range(TICKS)]
    return [
        {
            "x": f"{x(when):.1f}",
            "text": _label(when, last - first),
            "anchor": "start" if i == 0 else ("end" if i == TICKS - 1 else "middle"),
        }
        for i, when in enumerate(spots)
    ]


def _label(when: float, span: float) -> str:
    moment = dt.datetime.fromtimestamp(when, dt.UTC)
    return moment.strftime("%Y-%m-%d" if span >= 4 * 86_400 else "%m-%d %H:%M")


def _seconds(scheduled_at: Any) -> float:
    """A firing's time (RFC 3339, UTC) in seconds; 0 for one not recorded."""
    try:
        return dt.datetime.fromisoformat(str(scheduled_at).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _y(percent: float) -> float:
    return TOP + PLOT_HEIGHT * (1 - percent / 100)
