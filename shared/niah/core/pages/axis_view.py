"""A run with extra axes (distractors, haystack order) drawn as small multiples.

One heatmap per value of the axis, on the one colour scale, side by side; one curve of
score against length per value, with its band, on one plot; and a row per value in the
measures: so a reader sees whether a drop comes from length or from lookalikes.
"""

from __future__ import annotations

from typing import Any

from niah.core.pages.heatmap import HARNESS_SCALE, Scale, heatmap_figure, percent_table
from niah.core.results.curves import curve_figure, measures_curve
from niah.core.results.effective import effective_length_text
from niah.core.results.measures import basis_of
from niah.core.results.summary import score_table
from niah.core.results.uncertainty import with_interval
from niah.core.results.variants import lookalikes_text


def axis_pictures(
    summary: dict[str, Any], cells: list[dict[str, Any]], scale: Scale
) -> dict[str, Any]:
    """The small multiples and the curves of a run whose summary has ``variants``."""
    run_id = summary["run_id"]
    heatmaps = []
    curves = []
    for variant in summary["variants"]:
        group = [c for c in cells if str(c.get("variant") or "") == variant["variant"]]
        table = score_table(group)
        heatmaps.append(
            {
                "caption": variant["label"],
                "figure": heatmap_figure(
                    table if scale is HARNESS_SCALE else percent_table(table),
                    scale,
                    label=f"heatmap of {run_id}, {variant['label']}",
                ),
            }
        )
        curves.append(measures_curve(variant["label"], variant["measures"]))
    return {
        "heatmaps": heatmaps,
        "curve": curve_figure(curves, label=f"mean score against context length of {run_id}"),
    }


def axis_table(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """A row per value of the axes, a column per length: Context Rot's table, and more.

    Each value's mean score (percent) at each length, then its mean with its interval,
    its effective length, its wrong answers and how many of them gave a distractor's
    value.
    """
    found = summary.get("variants") or []
    lengths = sorted({int(n) for v in found for n in v["measures"]["by_length"]})
    headers = [
        "variant",
        "samples",
        *(f"{n:,}" for n in lengths),
        "mean (%)",
        "effective length",
        "wrong answers",
        "of them a distractor value",
    ]
    rows = []
    for variant in found:
        measures = variant["measures"]
        means = measures["by_length"]
        rows.append(
            [
                variant["label"],
                str(variant["samples"]),
                *(_figure(means.get(str(n))) for n in lengths),
                with_interval(
                    measures["mean"],
                    measures.get("mean_interval"),
                    basis=basis_of(measures, "mean"),
                ),
                effective_length_text(measures["effective_length"]),
                str(variant.get("wrong_answers", "")),
                lookalikes_text(variant).split(" of ")[0] + _kinds(variant),
            ]
        )
    return headers, rows


def _kinds(variant: dict[str, Any]) -> str:
    """The kinds a variant's distractors took: " (another key 2, a near miss 1)"."""
    text = lookalikes_text(variant)
    return text[text.index(" (") :] if " (" in text else ""


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
