"""Score against context length: one curve per run with its 95 % band, as plain numbers.

The view RULER, MRCR v2 and the long-context leaderboards use. Lengths are spaced
evenly, one step each (as RULER's table columns), not to scale: a grid of 1K to 128K
would otherwise crowd its short lengths into a corner. The ``curves`` macro
(``templates/curves.html``) draws the figure as inline SVG with no request of any kind,
so the page's Content Security Policy holds; here is only where each point falls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from niah.core.results.measures import basis_of
from niah.core.results.uncertainty import with_interval

# Okabe and Ito's colour-blind-safe palette ("Color Universal Design", 2008), darkest
# first; with a dash pattern of its own each curve stays apart in grey print too.
CURVE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
CURVE_DASHES = ("", "7 4", "2 3", "9 3 2 3")
REFERENCE_STYLE = ("#8c8c8c", "4 3")


@dataclass(frozen=True)
class Curve:
    """One run's mean per length (percent) and each mean's 95 % interval (or None)."""

    name: str
    means: dict[int, float | None]
    intervals: dict[int, list[float] | None]
    # What each interval rests on (``Interval.basis``); none given: taken as independent.
    bases: dict[int, dict[str, Any] | None] = field(default_factory=dict)
    # A reference drawn beside another curve (the first value of an axis): a thin grey
    # line without band or dots, so that no two bands overlap and the curve stays first.
    reference: bool = False


def measures_curve(name: str, measures: dict[str, Any]) -> Curve:
    """A run's curve from its stored measures: mean per length, intervals, their bases."""
    return Curve(
        name,
        {int(n): v for n, v in measures["by_length"].items()},
        {int(n): b for n, b in (measures.get("by_length_interval") or {}).items()},
        {int(n): basis_of(measures, "by_length", n) for n in measures["by_length"]},
    )


def curve_figure(
    curves: Sequence[Curve], *, label: str, width: int | None = None
) -> dict[str, Any]:
    """The curves on one plot: x the lengths (evenly spaced), y 0-100 %, bands behind lines.

    ``width``: pixels, narrower for small multiples (one plot per value of an axis).
    """
    width = width or WIDTH
    plot_width = width - LEFT - RIGHT
    lengths = sorted({length for curve in curves for length in curve.means})
    step = plot_width / max(1, len(lengths) - 1)

    def x(length: int) -> float:
        # One length sits in the middle; more are spread edge to edge.
        return LEFT + (plot_width / 2 if len(lengths) == 1 else lengths.index(length) * step)

    styles = [
        REFERENCE_STYLE
        if curve.reference
        else (CURVE_COLOURS[index % len(CURVE_COLOURS)], CURVE_DASHES[index % len(CURVE_DASHES)])
        for index, curve in enumerate(curves)
    ]
    bands = [
        _band(curve, colour, x)
        for curve, (colour, _) in zip(curves, styles, strict=True)
        if not curve.reference
    ]
    # The key under the plot: three to a row, one on a narrow plot (a small multiple).
    columns = 3 if width >= WIDTH else 1
    return {
        "label": label,
        "width": width,
        "height": HEIGHT + 20 * ((len(curves) + columns - 1) // columns) + 6,
        "grid": [
            {
                "x1": LEFT,
                "x2": width - RIGHT,
                "y": f"{_y(p):.1f}",
                "text_x": LEFT - 6,
                "text_y": f"{_y(p) + 4:.1f}",
                "percent": p,
            }
            for p in range(0, 101, 25)
        ],
        "ticks": [
            {"x": f"{x(n):.1f}", "y": TOP + PLOT_HEIGHT + 16, "text": f"{n:,}"} for n in lengths
        ],
        "axis": {
            "x": LEFT + plot_width / 2,
            "y": TOP + PLOT_HEIGHT + 34,
            "middle": TOP + PLOT_HEIGHT / 2,
        },
        "bands": [band for band in bands if band],
        "runs": [
            _run(curve, colour, dash, x, index, plot_width / columns, columns)
            for index, (curve, (colour, dash)) in enumerate(zip(curves, styles, strict=True))
        ],
    }


Position = Callable[[int], float]
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 760, 300, 52, 24, 14, 44
PLOT_WIDTH, PLOT_HEIGHT = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


def _y(percent: float) -> float:
    return TOP + PLOT_HEIGHT * (1 - percent / 100)


def _band(curve: Curve, colour: str, x: Position) -> dict[str, Any] | None:
    """The 95 % band: upper bounds left to right, lower ones back; a bar for one length."""
    bounded = [(n, b) for n, b in sorted(curve.intervals.items()) if b is not None]
    if not bounded:
        return None
    band: dict[str, Any] = {"name": curve.name, "colour": colour, "bar": None, "points": ""}
    if len(bounded) == 1:
        length, (low, high) = bounded[0]
        band["bar"] = {"x": f"{x(length):.1f}", "y1": f"{_y(low):.1f}", "y2": f"{_y(high):.1f}"}
        return band
    upper = [f"{x(n):.1f},{_y(b[1]):.1f}" for n, b in bounded]
    lower = [f"{x(n):.1f},{_y(b[0]):.1f}" for n, b in reversed(bounded)]
    band["points"] = " ".join(upper + lower)
    return band


def _run(
    curve: Curve,
    colour: str,
    dash: str,
    x: Position,
    index: int,
    slot: float,
    columns: int,
) -> dict[str, Any]:
    """A curve: its means joined in length order, and a dot for each with its interval.

    Also the curve's key under the plot, ``columns`` to a row, each ``slot`` wide.
    """
    points = [(n, m) for n, m in sorted(curve.means.items()) if m is not None]
    legend_x = LEFT + index % columns * slot
    legend_y = HEIGHT + 14 + 20 * (index // columns)
    return {
        "name": curve.name,
        "colour": colour,
        "dash": dash,
        "stroke_width": 1.5 if curve.reference else 2.5,
        "points": " ".join(f"{x(n):.1f},{_y(m):.1f}" for n, m in points),
        "dots": []
        if curve.reference
        else [
            {
                "x": f"{x(n):.1f}",
                "y": f"{_y(m):.1f}",
                "value": f"{m:.6g}",
                "tooltip": f"{curve.name}, {n:,} tokens: "
                + with_interval(m, curve.intervals.get(n), unit=" %", basis=curve.bases.get(n)),
            }
            for n, m in points
        ],
        "legend": {
            "x1": legend_x,
            "x2": legend_x + 26,
            "line_y": legend_y - 4,
            "text_x": legend_x + 32,
            "text_y": legend_y,
            "text": _shorten(curve.name),
        },
    }


def _shorten(name: str, limit: int = 40) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
