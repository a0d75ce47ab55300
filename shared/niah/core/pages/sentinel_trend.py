"""A sentinel's trend for the runs index: its runs' means over time, with intervals and flags.

Each sentinel gets one plot: its runs at the times they were due (to scale), each mean
with its 95 % interval as the band, and the runs its check flagged marked in red. The
``trend`` macro (``templates/trend.html``) draws it as inline SVG; here is only where
each point falls, and the rows of the table under it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from niah.core.results.curves import LEFT, PLOT_HEIGHT, PLOT_WIDTH, TOP, WIDTH
from niah.core.results.uncertainty import with_interval

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
        "flagged": bool(entry.get("sentinel_flagged")),
        "text": entry.get("sentinel_text") or "",
        "report_url": entry.get("report_url"),
    }


def trend_figure(name: str, points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The plot of one sentinel's scored runs: x the time each was due, to scale; y 0-100 %."""
    scored = [p for p in points if p["mean"] is not None]
    times = [_seconds(p["scheduled_at"]) for p in scored]
    first, last = (min(times), max(times)) if times else (0.0, 0.0)

    def x(when: float) -> float:
        # One time (or one run) sits in the middle; more are spread edge to edge.
        return LEFT + (
            PLOT_WIDTH / 2 if last == first else PLOT_WIDTH * (when - first) / (last - first)
        )

    dots = []
    for point, when in zip(scored, times, strict=True):
        low_high = point["mean_interval"] or [point["mean"], point["mean"]]
        dots.append(
            {
                "x": f"{x(when):.1f}",
                "y": f"{_y(point['mean']):.1f}",
                "low": f"{_y(low_high[0]):.1f}",
                "high": f"{_y(low_high[1]):.1f}",
                "colour": FLAG_COLOUR if point["flagged"] else LINE_COLOUR,
                "flagged": point["flagged"],
                "tooltip": f"{point['scheduled_at']}: "
                + with_interval(
                    point["mean"], point["mean_interval"], unit=" %", basis=point.get("mean_basis")
                )
                + (f"; flagged: {point['text']}" if point["flagged"] else ""),
            }
        )
    return {
        "label": f"sentinel {name}: mean score of each run, with its 95 % interval",
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
