"""A run's report pictures: the heatmap PNG, its title and notes, a comparison's PNG.

The heatmap has one panel per value of an axis; matplotlib is loaded by the report only.

Split from ``niah.service.reports.render``, which stores the files and keeps the report's claim.
"""

from __future__ import annotations

import datetime as dt
import io
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from niah.core.pages.heatmap import (
    DIFFERENCE_SCALE,
    ERROR_COLOUR,
    HARNESS_SCALE,
    PERCENT_SCALE,
    Scale,
    percent_table,
)
from niah.core.results.comparison import Comparison
from niah.core.results.effective import effective_length_text
from niah.core.results.measures import basis_of
from niah.core.results.summary import GENERATED_MRCR_NOTE, ScoreTable, format_cost
from niah.core.results.uncertainty import with_interval
from niah.core.runs import RunRecord


def render_heatmap(
    table: ScoreTable,
    *,
    title: str,
    fraction: bool = False,
    notes: str = "",
    panels: Sequence[tuple[str, ScoreTable]] = (),
) -> bytes:
    """The harness's heatmap: x context length, y depth, red-yellow-green, grey errors.

    ``fraction``: scores in [0, 1] (every task but ``single``), drawn as 0-100 %;
    otherwise the harness's 1-10 scale. Repeats show their mean. The title is one
    line; ``notes`` go below the plot, wrapped between words (a URI is never cut).
    ``panels``: a run with an axis (distractors, haystack order) is drawn as one heatmap
    per value, side by side on the one scale, each titled by its value.
    """
    shown = [(title, table)] if not panels else [(f"{title}\n{name}", t) for name, t in panels]
    scale = PERCENT_SCALE if fraction else HARNESS_SCALE
    width = max(6.0, 0.9 * len(table.lengths) + 3)
    with plain_text_figure(ncols=len(shown), figsize=(width * len(shown), 5.5), squeeze=False) as (
        figure,
        axes,
    ):
        lines = wrap_notes(notes, figure.get_figwidth())
        for axis, (name, one) in zip(axes[0], shown, strict=True):
            _draw_heatmap(figure, axis, percent_table(one) if fraction else one, scale, name)
            axis.title.set_fontsize(11 if len(shown) == 1 else 9)
        if lines:
            figure.text(0.01, 0.01, "\n".join(lines), fontsize=7.5, color="#444", va="bottom")
            figure.tight_layout(rect=(0, 0.03 + 0.035 * len(lines), 1, 1))
        return _png(figure, laid_out=bool(lines))


@contextmanager
def plain_text_figure(**subplots: Any) -> Iterator[tuple[Any, Any]]:
    r"""A figure (``plt.subplots(**subplots)``) whose every text is drawn as written.

    Labels, model names, URIs and notes come from users, and matplotlib reads ``$...$``
    as math (and, with ``text.usetex``, hands text to TeX): ``x $\frac{a$`` raised
    ValueError and deep braces RecursionError on every try, so the run never got its
    report. Every Text takes its parse_math and usetex from rcParams when it is made,
    tick labels as late as the draw, so the figure is made, drawn and saved inside this
    context, and closed on leaving it: no text call can forget it.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        figure, axes = plt.subplots(**subplots)
        try:
            yield figure, axes
        finally:
            plt.close(figure)


def wrap_notes(notes: str, figure_inches: float) -> list[str]:
    """The notes in lines that fit the figure, broken between words only (URIs whole)."""
    width = int(figure_inches * 15)  # characters of the 7.5 pt notes per inch
    return textwrap.wrap(notes, width, break_long_words=False, break_on_hyphens=False)


def render_comparison_png(comparison: Comparison) -> bytes:
    """The compared runs' heatmaps side by side on one percent scale, then the difference."""
    panels = len(comparison.runs) + 1
    columns = len(comparison.difference.lengths)
    with plain_text_figure(
        nrows=1,
        ncols=panels,
        figsize=(panels * max(5.0, 0.75 * columns + 2.5), 5.0),
        squeeze=False,
    ) as (figure, axes):
        for axis, run in zip(axes[0], comparison.runs, strict=False):
            _draw_heatmap(figure, axis, run.table, PERCENT_SCALE, f"{run.name}\n{run.run_id}")
        first, second = comparison.runs[0].name, comparison.runs[1].name
        _draw_heatmap(
            figure,
            axes[0][-1],
            comparison.difference,
            DIFFERENCE_SCALE,
            f"{second}\nminus {first}",
        )
        return _png(figure)


def _draw_heatmap(figure: Any, axes: Any, table: ScoreTable, scale: Scale, title: str) -> None:
    """One heatmap on ``axes``: the scale's colours, grey where nothing was scored."""
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.patches import Patch

    data = np.array(
        [[np.nan if v is None else v for v in row] for row in table.scores], dtype=float
    )
    cmap = LinearSegmentedColormap.from_list("niah", list(scale.colours)).with_extremes(
        bad=ERROR_COLOUR
    )
    image = axes.imshow(
        np.ma.masked_invalid(data), cmap=cmap, vmin=scale.low, vmax=scale.high, aspect="auto"
    )
    axes.set_xticks(range(len(table.lengths)), [f"{n:,}" for n in table.lengths], rotation=45)
    axes.set_yticks(range(len(table.depths)), [f"{d:g}" for d in table.depths])
    axes.set_xlabel("Context length (tokens)")
    axes.set_ylabel("Depth percent")
    axes.set_title(title, fontsize=9)
    # White borders between cells, as the harness's seaborn heatmap draws them.
    axes.set_xticks([i - 0.5 for i in range(1, len(table.lengths))], minor=True)
    axes.set_yticks([i - 0.5 for i in range(1, len(table.depths))], minor=True)
    axes.grid(which="minor", color="white", linewidth=1.5)
    axes.tick_params(which="minor", length=0)
    if len(table.lengths) * len(table.depths) <= 200:
        for (row, col), value in np.ndenumerate(data):
            if not np.isnan(value):
                axes.text(col, row, f"{value:.3g}", ha="center", va="center", fontsize=8)
    figure.colorbar(image, ax=axes, label=scale.label)
    if np.isnan(data).any():
        axes.legend(
            handles=[Patch(color=ERROR_COLOUR, label="failed, unscored or truncated")],
            loc="upper left",
            bbox_to_anchor=(1.25, 1.0),
            frameon=False,
        )


def _png(figure: Any, *, laid_out: bool = False) -> bytes:
    """The figure as PNG bytes; drawn inside ``plain_text_figure``, which closes it."""
    if not laid_out:
        figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def heatmap_title(summary: dict[str, Any], run: RunRecord) -> str:
    """Two lines: the run's label (model · task); its mean, 95 % interval and its basis.

    The basis ("clustered by grid point, 15 points") makes one line too long for the
    picture's width, so the mean has a line of its own. A run with an axis: the label
    alone; each value's panel names its own mean.
    """
    if summary.get("variants"):
        return run.label
    measures = summary["measures"]
    mean = with_interval(
        measures["mean"], measures.get("mean_interval"), basis=basis_of(measures, "mean")
    )
    return f"{run.label}\nmean (%) {mean}"


def heatmap_notes(summary: dict[str, Any], run: RunRecord) -> str:
    """Under the plot: scorer, effective length, what was not scored, cost, and provenance.

    So a shared picture says where it came from (run, haystack, day).
    """
    notes = [
        f"{summary['scorer']} score",
        f"effective length {effective_length_text(summary['measures']['effective_length'])}",
        f"{summary['failed']} failed",
        f"{summary['outcomes']['unscored'] - summary['failed']} unscored",
        f"{summary['outcomes'].get('truncated', 0)} truncated",
        format_cost(summary),
    ]
    if summary.get("answered_by"):  # Google routed the asked model to another
        notes.append(summary["answered_by"])
    if summary.get("token_count_note"):  # the lengths are the model's count, fitted
        notes.append(summary["token_count_note"].split(" (")[0] + "; lengths fitted")
    if summary["task"] == "mrcr" and summary["mrcr"]["samples"] == GENERATED_MRCR_NOTE:
        notes.append("MRCR generated samples, not comparable to model cards")
    created = run.stamped("created_at")
    day = f"{created:%Y-%m-%d}" if isinstance(created, dt.datetime) else "date unknown"
    notes += [run.run_id, f"haystack {run.haystack_uri}", day]
    return " · ".join(notes)
