"""A sentinel's trend for the runs index: its runs' means over time, with intervals and flags.

Each sentinel gets one plot: its complete runs in the order they were due (evenly
spaced, one step a firing, as a sentinel's firings are), each mean with its 95 %
interval as the band, and the runs its check flagged marked in red. The ``trend``
macro (``templates/trend.html``) draws it as inline SVG; here is only where each point
falls, and the rows of the table under it.
"""

from __future__ import annotations

from collections.abc import Sequence
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
        "mean_text": entry.get("mean_text"),
        "flagged": bool(entry.get("sentinel_flagged")),
        "text": entry.get("sentinel_text") or "",
        "report_url": entry.get("report_url"),
    }


def trend_figure(name: str, points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The plot of one sentinel's scored runs: x the firing, y 0-100 %."""
    scored = [p for p in points if p["mean"] is not None]
    step = PLOT_WIDTH / max(1, len(scored) - 1)

    def x(index: int) -> float:
        return LEFT + (PLOT_WIDTH / 2 if len(scored) == 1 else index * step)

    dots = []
    for index, point in enumerate(scored):
        low_high = point["mean_interval"] or [point["mean"], point["mean"]]
        dots.append(
            {
                "x": f"{x(index):.1f}",
                "y": f"{_y(point['mean']):.1f}",
                "low": f"{_y(low_high[0]):.1f}",
                "high": f"{_y(low_high[1]):.1f}",
                "colour": FLAG_COLOUR if point["flagged"] else LINE_COLOUR,
                "flagged": point["flagged"],
                "tooltip": f"{point['scheduled_at']}: "
                + with_interval(point["mean"], point["mean_interval"], unit=" %")
                + (f"; flagged: {point['text']}" if point["flagged"] else ""),
            }
        )
    # A tick under each firing, at most about eight labelled.
    every = max(1, -(-len(scored) // 8))
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
        "ticks": [
            {
                "x": dot["x"],
                "text": str(point["scheduled_at"] or "")[:16].replace("T", " "),
                # The ends' labels lean inwards, so neither is cut at the plot's edge.
                "anchor": "middle"
                if len(scored) == 1 or 0 < i < len(scored) - 1
                else ("start" if i == 0 else "end"),
            }
            for i, (dot, point) in enumerate(zip(dots, scored, strict=True))
            if i % every == 0 or i == len(scored) - 1
        ],
        "tick_y": TOP + PLOT_HEIGHT + 16,
        "axis_y": TOP + PLOT_HEIGHT + 34,
        "middle": TOP + PLOT_HEIGHT / 2,
        "centre": LEFT + PLOT_WIDTH / 2,
    }


def _y(percent: float) -> float:
    return TOP + PLOT_HEIGHT * (1 - percent / 100)
