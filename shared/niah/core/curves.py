"""Score against context length: one curve per run with its 95 % band, as inline SVG.

The view RULER, MRCR v2 and the long-context leaderboards use. Lengths are spaced
evenly, one step each (as RULER's table columns), not to scale: a grid of 1K to 128K
would otherwise crowd its short lengths into a corner. Drawn as markup with no request
of any kind, so the page's Content Security Policy holds.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from niah.core.uncertainty import with_interval

# Okabe and Ito's colour-blind-safe palette ("Color Universal Design", 2008), darkest
# first; with a dash pattern of its own each curve stays apart in grey print too.
CURVE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
CURVE_DASHES = ("", "7 4", "2 3", "9 3 2 3")


@dataclass(frozen=True)
class Curve:
    """One run's mean per length (percent) and each mean's 95 % interval (or None)."""

    name: str
    means: dict[int, float | None]
    intervals: dict[int, list[float] | None]


def curve_svg(curves: Sequence[Curve], *, label: str) -> str:
    """The curves on one plot: x the lengths (evenly spaced), y 0-100 %, bands behind lines."""
    lengths = sorted({length for curve in curves for length in curve.means})
    width, height, left, right, top, bottom = 760, 300, 52, 16, 14, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    step = plot_w / max(1, len(lengths) - 1)

    def x(length: int) -> float:
        # One length sits in the middle; more are spread edge to edge.
        return left + (plot_w / 2 if len(lengths) == 1 else lengths.index(length) * step)

    def y(percent: float) -> float:
        return top + plot_h * (1 - percent / 100)

    legend_rows = (len(curves) + 2) // 3
    total_h = height + 20 * legend_rows + 6
    parts = [
        f'<svg class="curves" role="img" aria-label="{escape(label)}" '
        f'xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
        f'viewBox="0 0 {width} {total_h}" font-family="sans-serif" font-size="11">'
    ]
    for percent in range(0, 101, 25):
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(percent):.1f}" y2="{y(percent):.1f}" '
            f'stroke="#e4e4e4"/><text x="{left - 6}" y="{y(percent) + 4:.1f}" '
            f'text-anchor="end">{percent}</text>'
        )
    for length in lengths:
        parts.append(
            f'<text x="{x(length):.1f}" y="{top + plot_h + 16}" '
            f'text-anchor="middle">{length:,}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{top + plot_h + 34}" text-anchor="middle">'
        "context length (tokens), evenly spaced</text>"
        f'<text x="12" y="{top + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + plot_h / 2})">mean score (%)</text>'
    )
    for index, curve in enumerate(curves):
        colour = CURVE_COLOURS[index % len(CURVE_COLOURS)]
        parts.append(_band(curve, colour, x, y))
    for index, curve in enumerate(curves):
        colour = CURVE_COLOURS[index % len(CURVE_COLOURS)]
        dash = CURVE_DASHES[index % len(CURVE_DASHES)]
        parts.append(_line(curve, colour, dash, x, y))
        column, row = index % 3, index // 3
        lx, ly = left + column * (plot_w / 3), height + 14 + 20 * row
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<g class="legend"><line x1="{lx}" x2="{lx + 26}" y1="{ly - 4}" y2="{ly - 4}" '
            f'stroke="{colour}" stroke-width="2.5"{dashed}/>'
            f'<text x="{lx + 32}" y="{ly}">{escape(_shorten(curve.name))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


Position = Callable[[int], float]
Height = Callable[[float], float]


def _band(curve: Curve, colour: str, x: Position, y: Height) -> str:
    """The 95 % band: upper bounds left to right, lower ones back; a bar for one length."""
    bounded = [(n, b) for n, b in sorted(curve.intervals.items()) if b is not None]
    if not bounded:
        return ""
    title = f"<title>{escape(curve.name)}: 95 % interval of each length's mean</title>"
    if len(bounded) == 1:
        length, (low, high) = bounded[0]
        return (
            f'<g class="band">{title}<line x1="{x(length):.1f}" x2="{x(length):.1f}" '
            f'y1="{y(low):.1f}" y2="{y(high):.1f}" stroke="{colour}" stroke-width="8" '
            'stroke-opacity="0.2"/></g>'
        )
    upper = [f"{x(n):.1f},{y(b[1]):.1f}" for n, b in bounded]
    lower = [f"{x(n):.1f},{y(b[0]):.1f}" for n, b in reversed(bounded)]
    return (
        f'<g class="band">{title}<polygon points="{" ".join(upper + lower)}" '
        f'fill="{colour}" fill-opacity="0.15" stroke="none"/></g>'
    )


def _line(curve: Curve, colour: str, dash: str, x: Position, y: Height) -> str:
    """The means joined in length order, each a dot whose tooltip gives it with its interval."""
    points = [(n, m) for n, m in sorted(curve.means.items()) if m is not None]
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    line = (
        f'<polyline class="curve" data-run="{escape(curve.name)}" '
        f'points="{" ".join(f"{x(n):.1f},{y(m):.1f}" for n, m in points)}" fill="none" '
        f'stroke="{colour}" stroke-width="2.5"{dashed}/>'
    )
    dots = "".join(
        f'<circle cx="{x(n):.1f}" cy="{y(m):.1f}" r="3.5" fill="{colour}" data-value="{m:.6g}">'
        f"<title>{escape(curve.name)}, {n:,} tokens: "
        f"{escape(with_interval(m, curve.intervals.get(n), unit=' %'))}</title></circle>"
        for n, m in points
    )
    return f'<g class="run">{line}{dots}</g>'


def escape(value: str) -> str:
    """Text made safe for SVG text and attribute values."""
    return html.escape(value, quote=True)


def _shorten(name: str, limit: int = 40) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
