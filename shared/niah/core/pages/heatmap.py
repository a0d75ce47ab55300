"""The heatmap's figure: every square's place, colour and text, as plain numbers.

The pages draw it as SVG with the ``heatmap`` macro (``templates/heatmap.html``); here
is only the arithmetic (where each square sits, what colour a score takes, what its
tooltip says), so the markup stays in the template and the numbers can be tested alone.
The PNG the report also writes draws from the same scales (``niah.service.reports.render``).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from niah.core.results.summary import ScoreTable
from niah.core.results.uncertainty import figure as _number
from niah.core.results.uncertainty import interval_range as _range

# The harness's red-yellow-green scale; grey for a point with nothing scored.
HARNESS_COLOURS = ("#F0496E", "#EBB839", "#0CD79F")
ERROR_COLOUR = "#BDBDBD"
# A difference: red where the second run scores lower, white where equal, green higher.
DIFFERENCE_COLOURS = ("#F0496E", "#FFFFFF", "#0CD79F")


@dataclass(frozen=True)
class Scale:
    """A colour scale: values from ``low`` to ``high``, drawn through three colours."""

    low: float
    high: float
    label: str
    colours: tuple[str, str, str] = HARNESS_COLOURS

    def colour(self, value: float) -> str:
        """The colour of ``value``, clipped to the scale, interpolated as matplotlib does."""
        share = min(1.0, max(0.0, (value - self.low) / (self.high - self.low)))
        start, end, part = (
            (self.colours[0], self.colours[1], share * 2)
            if share <= 0.5
            else (self.colours[1], self.colours[2], share * 2 - 1)
        )
        mixed = [
            round(int(start[i : i + 2], 16) * (1 - part) + int(end[i : i + 2], 16) * part)
            for i in (1, 3, 5)
        ]
        return "#" + "".join(f"{channel:02X}" for channel in mixed)


HARNESS_SCALE = Scale(1.0, 10.0, "score (1-10)")
PERCENT_SCALE = Scale(0.0, 100.0, "score (%)")
DIFFERENCE_SCALE = Scale(-100.0, 100.0, "difference (points)", DIFFERENCE_COLOURS)


def percent_table(table: ScoreTable) -> ScoreTable:
    """A table of fractions in [0, 1] as percents."""

    def scaled(rows: list[list[float | None]]) -> list[list[float | None]]:
        return [[None if v is None else 100 * v for v in row] for row in rows]

    return ScoreTable(
        table.lengths, table.depths, scaled(table.scores), scaled(table.stds), table.counts
    )


# The heatmap's least width in pixels (a 4 x 5 grid drew 330 px wide, hard to read).
HEATMAP_MIN_PX = 640
CELL_HEIGHT, LEFT, TOP, GAP = 26, 70, 28, 10


def heatmap_figure(
    table: ScoreTable, scale: Scale, *, label: str, marked: frozenset[int] = frozenset()
) -> dict[str, Any]:
    """The grid as the heatmap draws it: lengths across, depths down, with margin means.

    The right column holds each depth's mean over lengths, the bottom row each length's
    mean over depths, the corner their overall mean (of grid points, not samples). Each
    square's tooltip gives the mean, the standard deviation and the number of samples.
    Lengths in ``marked`` carry a star (a comparison's significant difference).
    """
    columns, rows = len(table.lengths), len(table.depths)
    # Wide enough to read at any grid size: squares grow until the map is HEATMAP_MIN_PX.
    cell_w = max(64, math.ceil((HEATMAP_MIN_PX - LEFT - GAP - 150) / (columns + 1)))
    size = (cell_w, CELL_HEIGHT)
    mean_x = LEFT + columns * cell_w + GAP
    mean_y = TOP + rows * CELL_HEIGHT + GAP
    headers = [
        _text(LEFT + col * cell_w + cell_w / 2, TOP - 8, f"{length:,}", marked=length in marked)
        for col, length in enumerate(table.lengths)
    ] + [_text(mean_x + cell_w / 2, TOP - 8, "mean", bold=True)]
    lines = []
    for row, depth in enumerate(table.depths):
        y = TOP + row * CELL_HEIGHT
        points = [
            _square(
                (LEFT + col * cell_w, y),
                size,
                table.scores[row][col],
                scale,
                f"{length:,} tokens, depth {depth:g} %: "
                + _point_text(table.scores[row][col], table.stds[row][col], table.counts[row][col])
                + _interval_text(table.intervals[row][col] if table.intervals else None),
                kind="point",
            )
            for col, length in enumerate(table.lengths)
        ]
        depth_mean = _mean_of(table.scores[row])
        margin = _square(
            (mean_x, y),
            size,
            depth_mean,
            scale,
            f"depth {depth:g} %, mean over lengths: {_number(depth_mean)}",
            kind="margin",
        )
        lines.append(
            {
                "label": _text(LEFT - 8, y + CELL_HEIGHT / 2 + 4, f"{depth:g} %"),
                "squares": [*points, margin],
            }
        )
    length_means = [
        _square(
            (LEFT + col * cell_w, mean_y),
            size,
            length_mean := _mean_of([table.scores[row][col] for row in range(rows)]),
            scale,
            f"{length:,} tokens, mean over depths: {_number(length_mean)}",
            kind="margin",
        )
        for col, length in enumerate(table.lengths)
    ]
    overall = table.mean()
    corner = _square(
        (mean_x, mean_y),
        size,
        overall,
        scale,
        f"mean of every grid point: {_number(overall)}",
        kind="margin",
    )
    lines.append(
        {
            "label": _text(LEFT - 8, mean_y + CELL_HEIGHT / 2 + 4, "mean", bold=True),
            "squares": [*length_means, corner],
        }
    )
    width = LEFT + (columns + 1) * cell_w + GAP + 150
    return {
        "label": label,
        "width": width,
        "height": TOP + (rows + 1) * CELL_HEIGHT + GAP + 46,
        "headers": headers,
        "lines": lines,
        "legend": _legend(scale, mean_x + cell_w + 20, TOP, rows * CELL_HEIGHT, key=label),
        "axis": {"x": 4, "y": mean_y + CELL_HEIGHT + 30},
    }


def _text(
    x: float, y: float, text: str, *, bold: bool = False, marked: bool = False
) -> dict[str, Any]:
    return {"x": x, "y": y, "text": text, "bold": bold, "marked": marked}


def _square(
    at: tuple[float, float],
    size: tuple[int, int],
    value: float | None,
    scale: Scale,
    tooltip: str,
    *,
    kind: str,
) -> dict[str, Any]:
    x, y = at
    return {
        "kind": kind,
        "tooltip": tooltip,
        "x": x,
        "y": y,
        "width": size[0] - 2,
        "height": size[1] - 2,
        "fill": ERROR_COLOUR if value is None else scale.colour(value),
        "value": "" if value is None else f"{value:.6g}",
        "text_x": x + size[0] / 2 - 1,
        "text_y": y + size[1] / 2 + 3,
        "text": "–" if value is None else _number(value),
    }


def _legend(scale: Scale, x: float, y: float, height: float, *, key: str) -> dict[str, Any]:
    """The colour bar: its gradient's stops, its three figures, the grey key."""
    bar = max(height, 60)
    return {
        # One ID per heatmap: a page of several (a comparison) keeps every ID unique.
        "gradient": "scale-" + hashlib.sha256(key.encode()).hexdigest()[:12],
        # Top to bottom: the high end's colour first (offsets must rise).
        "stops": list(zip((0, 0.5, 1), reversed(scale.colours), strict=True)),
        "x": x,
        "y": y,
        "bar": bar,
        "text_x": x + 18,
        "figures": [
            (y + 9, f"{scale.high:g}"),
            (y + bar / 2 + 4, f"{(scale.low + scale.high) / 2:g}"),
            (y + bar, f"{scale.low:g}"),
        ],
        "error_y": y + bar + 8,
        "error_text_y": y + bar + 17,
        "error_colour": ERROR_COLOUR,
        "title_y": y - 8,
        "title": scale.label,
    }


def _point_text(mean: float | None, std: float | None, count: int) -> str:
    if mean is None:
        return "failed, unscored or truncated"
    spread = f" ± {std:.3g}" if count > 1 and std is not None else ""
    return f"mean {mean:.3g}{spread} over {count} sample{'s' * (count != 1)}"


def _interval_text(bounds: list[float] | None) -> str:
    """A point's 95 % interval for its tooltip, or nothing when it has none.

    Within one point there is nothing to cluster by: its samples are taken as
    independent (other needles, or repeats, in one haystack and place).
    """
    return f"; 95 % interval {_range(bounds)} %, its samples taken as independent" if bounds else ""


def _mean_of(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None
