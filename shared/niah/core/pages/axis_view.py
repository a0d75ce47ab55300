"""A run with extra axes (distractors, haystack order), read one value at a time.

Its headline is a row per value (the mean and the effective length under the run's rule)
and each later value against the first, sample by sample, with the interval of the
difference: never a mean or a length pooled over the values, which answers no one's
question. One heatmap per value, on the one colour scale, side by side; one small plot
of score against length per value, each with its own band and the first value's line
for reference (six bands on one plot are one grey block); and a row per value with its
mean per length in the measures: so a reader sees whether a drop comes from length or
from lookalikes.
"""

from __future__ import annotations

from typing import Any

from niah.core.pages.heatmap import HARNESS_SCALE, Scale, heatmap_figure, percent_table
from niah.core.results.curves import Curve, curve_figure, measures_curve
from niah.core.results.effective import effective_length_short
from niah.core.results.measures import basis_of
from niah.core.results.summary import score_table
from niah.core.results.uncertainty import with_interval
from niah.core.results.variants import lookalikes_text

# Each value's plot: two side by side in the report's 1,280 px (the page's margins aside).
PANEL_WIDTH = 420


def axis_pictures(
    summary: dict[str, Any], cells: list[dict[str, Any]], scale: Scale
) -> dict[str, Any]:
    """The small multiples of a run whose summary has ``variants``: heatmaps and curves."""
    run_id = summary["run_id"]
    heatmaps = []
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
    return {"heatmaps": heatmaps, "curves": axis_curves(summary)}


def axis_curves(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One plot per value: its curve and band, and the first value's line beside it."""
    found = [measures_curve(v["label"], v["measures"]) for v in summary["variants"]]
    first = found[0]
    reference = Curve(f"{first.name} (for reference)", first.means, {}, reference=True)
    return [
        {
            "caption": curve.name,
            "figure": curve_figure(
                [curve] if index == 0 else [curve, reference],
                label=f"mean score against context length of {summary['run_id']}, {curve.name}",
                width=PANEL_WIDTH,
            ),
        }
        for index, curve in enumerate(found)
    ]


def panel_title(variant: dict[str, Any]) -> str:
    """A value's heatmap in the PNG: the value, and its mean with the interval."""
    return f"{variant['label']} · mean (%) {_mean(variant['measures'])}"


def axis_headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The answer of a run with an axis: a row per value, and its difference from the first.

    Each value's samples, mean with its 95 % interval, effective length under the run's
    rule (stated once, in the note) and, after the first, the paired difference from
    the first in points with its interval and p-value.
    """
    differences = {d["second"]: d for d in summary.get("variant_differences") or []}
    variants = summary["variants"]
    headers = [
        "value",
        "samples",
        "mean (%)",
        "effective length",
        f"minus {variants[0]['label']} (points, paired)",
    ]
    rows = []
    for index, variant in enumerate(variants):
        measures = variant["measures"]
        difference = differences.get(variant["variant"])
        rows.append(
            [
                variant["label"],
                str(variant["samples"]),
                _mean(measures),
                effective_length_short(measures["effective_length"]),
                "the baseline" if index == 0 else difference["text"] if difference else "-",
            ]
        )
    effective = summary["measures"]["effective_length"]
    return {"headers": headers, "rows": rows, "note": axis_note(effective)}


def axis_note(effective: dict[str, Any]) -> str:
    """What the headline table's figures are: the rule, the intervals, the pairs."""
    return (
        f"Each value of the axis apart (no figure pools them). Effective length: the "
        f"longest length whose mean reaches the threshold, {effective.get('rule')} (the "
        'run\'s effective_length_rule); "not determined (a to b)" when the 95 % intervals '
        "allow lengths from a to b. The difference pairs each sample with the first "
        "value's at the same length, depth and sample index, with its 95 % interval and "
        "p-value (exact McNemar for right/wrong)."
    )


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
                _mean(measures),
                effective_length_short(measures["effective_length"]),
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


def _mean(measures: dict[str, Any]) -> str:
    """A value's mean with its 95 % interval and what the interval rests on."""
    return with_interval(
        measures["mean"], measures.get("mean_interval"), basis=basis_of(measures, "mean")
    )
