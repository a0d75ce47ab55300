"""Self-contained HTML pages: a run's report, and a comparison of runs.

One file each, with inline CSS, inline SVG and a little inline script; a Content
Security Policy forbids every request, so a page opened from a bucket, a mail or a chat
loads nothing from anywhere and shows the same thing offline.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from niah.core.curves import Curve, curve_svg
from niah.core.pages import markup, render
from niah.core.sample_rows import COLUMN_NAMES, NUMERIC_COLUMNS, SAMPLE_COLUMNS, sample_row
from niah.core.served_models import model_shown, versions_text
from niah.core.spec import run_label
from niah.core.summary import (
    GENERATED_MRCR_NOTE,
    ScoreTable,
    failure_reasons,
    format_cost,
    format_spend,
    mrcr_bin_upper,
    score_table,
)
from niah.core.uncertainty import figure as _number
from niah.core.uncertainty import interval_range as _range
from niah.core.uncertainty import with_interval

# The harness's red-yellow-green scale; grey for a point with nothing scored.
# The page's file name under the run's report prefix (the CLI links it before it exists).
REPORT_PAGE_FILE = "report.html"

HARNESS_COLOURS = ("#F0496E", "#EBB839", "#0CD79F")
ERROR_COLOUR = "#BDBDBD"
# A difference: red where the second run scores lower, white where equal, green higher.
DIFFERENCE_COLOURS = ("#F0496E", "#FFFFFF", "#0CD79F")
# Longer texts are cut in the table (the export holds them whole): a page stays light.
TEXT_LIMIT = 600


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


def heatmap_svg(
    table: ScoreTable, scale: Scale, *, label: str, marked: frozenset[int] = frozenset()
) -> str:
    """The grid as an SVG heatmap: lengths across, depths down, with margin means.

    The right column holds each depth's mean over lengths, the bottom row each length's
    mean over depths, the corner their overall mean (of grid points, not samples). Each
    square's tooltip gives the mean, the standard deviation and the number of samples.
    Lengths in ``marked`` carry a star (a comparison's significant difference).
    """
    cell_h, left, top, gap = 26, 70, 28, 10
    columns, rows = len(table.lengths), len(table.depths)
    # Wide enough to read at any grid size: squares grow until the map is HEATMAP_MIN_PX.
    cell_w = max(64, math.ceil((HEATMAP_MIN_PX - left - gap - 150) / (columns + 1)))
    width = left + (columns + 1) * cell_w + gap + 150
    height = top + (rows + 1) * cell_h + gap + 46
    parts = [
        f'<svg class="heatmap" role="img" aria-label="{_e(label)}" '
        f'xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
    ]
    for col, length in enumerate(table.lengths):
        x = left + col * cell_w + cell_w / 2
        star = (
            ' <tspan class="significant" font-weight="bold">*</tspan>' if length in marked else ""
        )
        parts.append(f'<text x="{x}" y="{top - 8}" text-anchor="middle">{length:,}{star}</text>')
    mean_x = left + columns * cell_w + gap
    parts.append(
        f'<text x="{mean_x + cell_w / 2}" y="{top - 8}" text-anchor="middle" '
        'font-weight="bold">mean</text>'
    )
    for row, depth in enumerate(table.depths):
        y = top + row * cell_h + cell_h / 2 + 4
        parts.append(f'<text x="{left - 8}" y="{y}" text-anchor="end">{depth:g} %</text>')
        for col, length in enumerate(table.lengths):
            parts.append(
                _square(
                    left + col * cell_w,
                    top + row * cell_h,
                    (cell_w, cell_h),
                    table.scores[row][col],
                    scale,
                    f"{length:,} tokens, depth {depth:g} %: "
                    + _point_text(
                        table.scores[row][col], table.stds[row][col], table.counts[row][col]
                    )
                    + _interval_text(table.intervals[row][col] if table.intervals else None),
                    kind="point",
                )
            )
        depth_mean = _mean_of(table.scores[row])
        parts.append(
            _square(
                mean_x,
                top + row * cell_h,
                (cell_w, cell_h),
                depth_mean,
                scale,
                f"depth {depth:g} %, mean over lengths: {_number(depth_mean)}",
                kind="margin",
            )
        )
    mean_y = top + rows * cell_h + gap
    parts.append(
        f'<text x="{left - 8}" y="{mean_y + cell_h / 2 + 4}" text-anchor="end" '
        'font-weight="bold">mean</text>'
    )
    for col, length in enumerate(table.lengths):
        length_mean = _mean_of([table.scores[row][col] for row in range(rows)])
        parts.append(
            _square(
                left + col * cell_w,
                mean_y,
                (cell_w, cell_h),
                length_mean,
                scale,
                f"{length:,} tokens, mean over depths: {_number(length_mean)}",
                kind="margin",
            )
        )
    overall = table.mean()
    parts.append(
        _square(
            mean_x,
            mean_y,
            (cell_w, cell_h),
            overall,
            scale,
            f"mean of every grid point: {_number(overall)}",
            kind="margin",
        )
    )
    parts.append(_legend(scale, mean_x + cell_w + 20, top, rows * cell_h, key=label))
    axis_y = mean_y + cell_h + 30
    parts.append(
        f'<text x="4" y="{axis_y}">'
        "context length (tokens) across · depth (percent of the context) down</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


def _square(
    x: float,
    y: float,
    size: tuple[int, int],
    value: float | None,
    scale: Scale,
    tooltip: str,
    *,
    kind: str,
) -> str:
    fill = ERROR_COLOUR if value is None else scale.colour(value)
    text = "–" if value is None else _number(value)
    return (
        f'<g class="{kind}"><title>{_e(tooltip)}</title>'
        f'<rect x="{x}" y="{y}" width="{size[0] - 2}" height="{size[1] - 2}" '
        f'fill="{fill}" data-value="{"" if value is None else f"{value:.6g}"}"/>'
        f'<text x="{x + size[0] / 2 - 1}" y="{y + size[1] / 2 + 3}" '
        f'text-anchor="middle">{text}</text></g>'
    )


def _legend(scale: Scale, x: float, y: float, height: float, *, key: str) -> str:
    # Top to bottom: the high end's colour first (offsets must rise).
    stops = "".join(
        f'<stop offset="{offset}" stop-color="{colour}"/>'
        for offset, colour in zip((0, 0.5, 1), reversed(scale.colours), strict=True)
    )
    middle = (scale.low + scale.high) / 2
    # One ID per heatmap: a page of several (a comparison) keeps every ID unique.
    gradient = "scale-" + hashlib.sha256(key.encode()).hexdigest()[:12]
    return (
        f'<defs><linearGradient id="{gradient}" x1="0" y1="0" x2="0" y2="1">'
        f"{stops}</linearGradient></defs>"
        f'<rect x="{x}" y="{y}" width="14" height="{max(height, 60)}" '
        f'fill="url(#{gradient})"/>'
        f'<text x="{x + 18}" y="{y + 9}">{scale.high:g}</text>'
        f'<text x="{x + 18}" y="{y + max(height, 60) / 2 + 4}">{middle:g}</text>'
        f'<text x="{x + 18}" y="{y + max(height, 60)}">{scale.low:g}</text>'
        f'<rect x="{x}" y="{y + max(height, 60) + 8}" width="14" height="10" '
        f'fill="{ERROR_COLOUR}"/><text x="{x + 18}" y="{y + max(height, 60) + 17}">'
        "nothing scored</text>"
        f'<text x="{x}" y="{y - 8}">{_e(scale.label)}</text>'
    )


def _point_text(mean: float | None, std: float | None, count: int) -> str:
    if mean is None:
        return "failed, unscored or truncated"
    spread = f" ± {std:.3g}" if count > 1 and std is not None else ""
    return f"mean {mean:.3g}{spread} over {count} sample{'s' * (count != 1)}"


def _interval_text(bounds: list[float] | None) -> str:
    """A point's 95 % interval for its tooltip, or nothing when it has none."""
    return f"; 95 % interval {_range(bounds)} %" if bounds else ""


def effective_length_text(effective: dict[str, Any]) -> str:
    """The effective length, or why it is not determined, in words."""
    length = effective["length"]
    shown = f"{length:,}" if length is not None else "none"
    bounds = effective.get("interval")
    if bounds is None or effective.get("determined"):
        return shown
    low = f"{bounds['low']:,}" if bounds["low"] is not None else "none"
    high = f"{bounds['high']:,}" if bounds["high"] is not None else "none"
    return (
        f"not determined: {shown} by the means, but the 95 % intervals allow {low} to {high} "
        "(more samples per point narrow them)"
    )


def _mean_of(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def escape(value: Any) -> str:
    """Text (or None, as nothing) made safe for HTML text and attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


_e = escape


def _when(value: Any) -> str:
    """A Firestore timestamp as ISO 8601 in UTC, or "unknown"."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return "unknown" if value is None else str(value)


def run_scale(summary: dict[str, Any]) -> Scale:
    """The harness's 1-10 for ``single``; percent for every other task."""
    return HARNESS_SCALE if summary["score_scale"] == "1-10" else PERCENT_SCALE


def render_run_page(
    run: dict[str, Any], cells: list[dict[str, Any]], summary: dict[str, Any]
) -> str:
    """A run's whole report as one HTML page; ``summary`` is ``summarize``'s of the run."""
    table = score_table(heatmap_cells(cells, summary["task"]))
    scale = run_scale(summary)
    shown = table if scale is HARNESS_SCALE else percent_table(table)
    task = summary["task"]
    title = f"{summary['model']} · {task} · {summary['run_id']}"
    label = run_label(run)
    return render(
        "run_report.html",
        **page_shell(title),
        label=label,
        run_id=summary["run_id"],
        scorer=summary["scorer"],
        status=run.get("status"),
        headline=_headline(run, summary),
        picture=markup(_picture(summary, label, cells, shown, scale, table)),
        measure_facts=_measure_facts(summary),
        mrcr=_mrcr_bins(summary),
        cost_facts=_cost_facts(summary),
        failures=list(failure_reasons(cells).items()),
        samples=_samples_table(cells),
        run_facts=_run_facts(run, summary),
    )


def _picture(
    summary: dict[str, Any],
    label: str,
    cells: list[dict[str, Any]],
    shown: ScoreTable,
    scale: Scale,
    table: ScoreTable,
) -> str:
    """The heatmap and the score-against-length curve; for MRCR v2, its bins' curve.

    An MRCR sample has no depth: a heatmap of it is one row at "0 %", so MRCR is drawn
    as the model cards draw it, the mean per length bin with its 95 % interval.
    """
    if summary["task"] == "mrcr":
        bins = score_table(heatmap_cells(cells, "mrcr"), field="task_score")
        curve = Curve(
            label,
            {
                n: None if v is None else 100 * v
                for n, v in zip(bins.lengths, bins.scores[0], strict=True)
            },
            dict(zip(bins.lengths, (bins.intervals or [[]])[0], strict=False)),
        )
        return _section(
            "MRCR v2 bins",
            curve_svg([curve], label=f"MRCR v2 score per length bin of {summary['run_id']}")
            + "<p class=note>Each point is a bin, named by its upper end in tokens (MRCR "
            "v2's bins), with its 95 % interval.</p>",
        )
    measures = summary["measures"]
    curve = Curve(
        label,
        {int(n): v for n, v in measures["by_length"].items()},
        {int(n): b for n, b in (measures.get("by_length_interval") or {}).items()},
    )
    return _section(
        "Heatmap",
        heatmap_svg(shown, scale, label=f"heatmap of {summary['run_id']}")
        + f"<p class=note>{_e(_scale_note(summary, table))}</p>",
    ) + _section(
        "Score against length",
        curve_svg([curve], label=f"mean score against context length of {summary['run_id']}")
        + "<p class=note>The mean over every depth and sample at each length, with its "
        "95 % interval as the band.</p>",
    )


def _headline(run: dict[str, Any], summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The answer first: model, task, mean with its interval, effective length, outcomes."""
    measures, outcomes = summary["measures"], summary["outcomes"]
    served = summary.get("served_models") or {}
    facts = [
        ("model", model_shown(str(summary["model"] or ""), served)),
        ("task", summary["task"]),
        ("mean (%)", with_interval(measures["mean"], measures.get("mean_interval"))),
        ("effective length", effective_length_text(measures["effective_length"])),
        (
            "outcomes",
            f"{outcomes['correct']} correct · {outcomes['wrong']} wrong · "
            f"{outcomes['unscored']} unscored · {outcomes.get('truncated', 0)} truncated "
            f"of {summary['samples']}",
        ),
        ("cost", format_cost(summary).removeprefix("cost ")),
        ("status", str(run.get("status") or "")),
    ]
    return facts


def heatmap_cells(cells: list[dict[str, Any]], task: str) -> list[dict[str, Any]]:
    """The cells as the heatmap groups them: MRCR samples by their MRCR v2 length bin.

    Every MRCR sample has its own transcript length, so a column per length would be a
    column per sample; the model cards report by bin, and so does this heatmap (each
    column is named by its bin's upper end).
    """
    if task != "mrcr":
        return cells
    return [c | {"context_length": mrcr_bin_upper(int(c["context_length"]))} for c in cells]


def _run_facts(run: dict[str, Any], summary: dict[str, Any]) -> list[tuple[str, str]]:
    spec = run.get("spec") or {}
    settings = run.get("call_settings") or {}
    thinking = settings.get("thinking_level") or settings.get("thinking_budget")
    served = summary.get("served_models") or {}
    facts = [
        ("run ID", summary["run_id"]),
        ("model", summary["model"]),
        # Every reply's modelVersion, counted; the local model reports none.
        ("answered by", versions_text(served) if served else "not reported"),
        ("task", summary["task"]),
        ("scorer", summary["scorer"]),
        ("status", run.get("status")),
        (
            "execution",
            "batch (Vertex AI batch jobs, batch prices)"
            if spec.get("execution") == "batch"
            else "online",
        ),
        ("haystack", summary["haystack_uri"]),
        ("created", _when(run.get("created_at"))),
        ("last update", _when(run.get("updated_at"))),
        ("completed", _when(run.get("completed_at"))),
        (
            "temperature",
            "the model's default"
            if settings.get("temperature") is None
            else settings["temperature"],
        ),
        ("thinking", "the model's default" if thinking is None else thinking),
        ("output budget (tokens)", _budget_text(spec, settings)),
        ("samples per grid point", spec.get("samples_per_cell", 1)),
        ("seed", spec.get("seed")),
        ("results version", summary["version"]),
        ("samples", f"{summary['samples']} ({summary['answered']} answered)"),
    ]
    if summary.get("mrcr"):
        facts.append(("MRCR samples", summary["mrcr"].get("samples")))
    if run.get("model_notes"):
        # Google's word on the models when the run began (deprecated; retired and
        # called anyway): a score is read in its light.
        facts.append(("model lifecycle", "; ".join(run["model_notes"])))
    if summary.get("token_count_note"):
        # The lengths on the x axis are the model's count, not the local tokenizer's.
        facts.append(("token counts", summary["token_count_note"]))
    return [(name, "" if value is None else str(value)) for name, value in facts]


def _budget_text(spec: dict[str, Any], settings: dict[str, Any]) -> str:
    """The calls' output budget, and the answer and thinking rooms it was made of."""
    total = spec.get("max_output_tokens") or settings.get("max_output_tokens")
    if not total:
        return "the model's default"
    if settings.get("answer_tokens") is None:
        return f"{total:,}"
    return (
        f"{total:,} (answer {settings['answer_tokens']:,} + thinking "
        f"{settings.get('thinking_tokens', 0):,})"
    )


def _measure_facts(summary: dict[str, Any]) -> list[tuple[str, str]]:
    measures = summary["measures"]
    effective = measures["effective_length"]
    intervals = measures.get("by_length_interval", {})
    outcomes = summary["outcomes"]
    single = summary["task"] == "single"
    facts = [
        *([("mean score (1-10)", _number(summary["mean_score"]))] if single else []),
        ("mean (%)", with_interval(measures["mean"], measures.get("mean_interval"))),
        (
            "mean per length (%)",
            " · ".join(
                f"{int(length):,}: {with_interval(value, intervals.get(length))}"
                for length, value in sorted(
                    measures["by_length"].items(), key=lambda item: int(item[0])
                )
            ),
        ),
        ("effective length (tokens)", effective_length_text(effective)),
        ("effective length rule", f"{effective['rule']} (threshold {effective['threshold']})"),
        ("area under the curve (%)", _number(measures["area_under_curve"])),
        (
            "outcomes",
            f"{outcomes['correct']} correct, {outcomes['wrong']} wrong, "
            f"{outcomes['unscored']} unscored, {outcomes.get('truncated', 0)} truncated "
            "(cut off at the output budget)",
        ),
        # Exact retrieval is the single needle's own check; other tasks score themselves.
        *([("retrieved (exact)", _share(summary["retrieved_share"]))] if single else []),
    ]
    for rate in ("hallucination_rate", "distractor_hit_rate"):
        if rate in summary:
            facts.append((rate.replace("_", " "), _share(summary[rate])))
    return facts


def _mrcr_bins(summary: dict[str, Any]) -> dict[str, Any] | None:
    """MRCR v2's bins in their order, its two headline figures, and whether generated."""
    mrcr = summary.get("mrcr")
    if not mrcr:
        return None
    return {
        "generated": GENERATED_MRCR_NOTE if mrcr.get("samples") == GENERATED_MRCR_NOTE else "",
        "bins": [
            (name, _number(value), mrcr["samples_per_bin"].get(name, 0))
            for name, value in mrcr["bins"].items()
        ],
        "headline": [
            ("cumulative to 128K (%)", _number(mrcr["cumulative_128k"])),
            ("at 1M (%)", _number(mrcr["at_1m"])),
        ],
    }


def _cost_facts(summary: dict[str, Any]) -> list[tuple[str, str]]:
    totals = summary["totals"] or {}
    deviation = summary["prompt_token_deviation"]
    cached = summary["cached_share"]
    return [
        ("prompt tokens", f"{int(totals.get('prompt_tokens', 0)):,}"),
        ("cached share", "unknown" if cached is None else _share(cached)),
        ("output tokens", f"{int(totals.get('output_tokens', 0)):,}"),
        ("thinking tokens", f"{int(totals.get('thinking_tokens', 0)):,}"),
        ("cost of stored results", format_cost(summary).removeprefix("cost ")),
        ("cost without the cache (USD)", f"{summary['cost_without_cache_usd']:.4f}"),
        ("spend", format_spend(summary["spend"]).removeprefix("spend: ")),
        ("mean model latency (s)", _number(summary["mean_model_seconds"])),
        (
            "prompt tokens minus requested length",
            f"mean {_number(deviation['mean'])}, max |deviation| {_number(deviation['max_abs'])}",
        ),
    ]


def _share(value: float | None) -> str:
    return "unknown" if value is None else f"{100 * value:.1f} %"


def _scale_note(summary: dict[str, Any], table: ScoreTable) -> str:
    repeats = max((n for row in table.counts for n in row), default=0)
    scale = (
        "the harness's 1-10 score"
        if summary["score_scale"] == "1-10"
        else "the task's score, in percent"
    )
    spread = (
        f"; up to {repeats} samples per point: squares show their mean, the tooltip their "
        "standard deviation and 95 % interval"
        if repeats > 1
        else ""
    )
    binned = (
        "; columns are MRCR v2's length bins, named by their upper end"
        if summary["task"] == "mrcr"
        else ""
    )
    return (
        f"Colours: {scale}; grey, nothing scored (failed, unscored or truncated){spread}{binned}."
    )


def _samples_table(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The samples table: its columns, and every row as data the page's script shows.

    At 10,000 samples a table of markup is over 8 MB and slow to open; as one JSON array
    of rows (numbers to 6 significant digits, long texts cut at ``TEXT_LIMIT``) it is a
    few MB, and the script renders ``PAGE_ROWS`` at a time (all of them to print).
    """
    descriptions = dict(SAMPLE_COLUMNS)
    ordered = sorted(cells, key=lambda c: str(c.get("cell_id")))
    limit = text_limit(len(ordered))
    rows = [
        [_data_value(name, row[name], limit) for name in COLUMN_NAMES]
        for row in map(sample_row, ordered)
    ]
    extra = [name for name in COLUMN_NAMES if name not in KEY_COLUMNS]
    data = {
        "columns": COLUMN_NAMES,
        "numeric": sorted(NUMERIC_COLUMNS),
        "extra": extra,
        "rows": rows,
    }
    return {
        "count": len(cells),
        "page_rows": PAGE_ROWS,
        "columns": [
            {
                "name": name,
                "title": descriptions[name],
                "numeric": name in NUMERIC_COLUMNS,
                "extra": name not in KEY_COLUMNS,
            }
            for name in COLUMN_NAMES
        ],
        "data": markup(script_json(data)),
    }


# Rows the samples table shows at a time; the rest are a page away (or printed whole).
PAGE_ROWS = 100
# The samples table's columns shown at first, so they fit 1,280 px; the others are a
# click away ("all columns"), printed, and in every export.
KEY_COLUMNS = frozenset(
    {
        "cell_id",
        "context_length",
        "depth_percent",
        "sample",
        "expected_answer",
        "model_response",
        "score",
        "outcome",
        "error",
    }
)


def script_json(data: Any) -> str:
    """``data`` as JSON that cannot end its script element or start markup in it."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# The page's texts (needle, question, answer, error: the long ones) share this budget, so
# a run of any size stays a page that opens: each text gets TEXT_LIMIT characters, or
# its share of the budget where there are many samples (80 at 10,000), at least 80. A
# cut text ends "… [+N]", N the characters left out; the export has it whole.
TEXT_BUDGET = 2_400_000
LONG_TEXT_COLUMNS = 3


def text_limit(rows: int) -> int:
    """How many characters of each text a page of ``rows`` samples keeps."""
    return max(80, min(TEXT_LIMIT, TEXT_BUDGET // max(1, rows) // LONG_TEXT_COLUMNS))


def _data_value(name: str, value: Any, limit: int = TEXT_LIMIT) -> Any:
    """A table value as the page's data holds it: numbers short, long texts cut."""
    if value is None:
        return None
    if name in NUMERIC_COLUMNS:
        return float(f"{value:.6g}") if isinstance(value, float) else value
    text = str(value)
    if name != "cell_id" and len(text) > limit:
        more = len(text) - limit
        text = f"{text[:limit]} … [+{more:,}]"
    return text


def _definitions(facts: list[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{_e(name)}</dt><dd>{_e(value)}</dd>" for name, value in facts)
    return f"<dl>{items}</dl>"


def _section(title: str, content: str) -> str:
    anchor = "section-" + title.split(" (")[0].lower().replace(" ", "-")
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>{content}</section>'


def page_shell(title: str) -> dict[str, Any]:
    """What the page template's shell needs: title, policy, style, script, the time."""
    return {
        "title": title,
        "policy": markup(CONTENT_SECURITY_POLICY),
        "style": markup(_STYLE),
        "script": markup(_SCRIPT),
        "generated": f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M UTC}",
    }


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1280px;padding:0 16px;
color:#222}
h1{font-size:22px;margin:0}h1 small{font-weight:normal;color:#555}h2{font-size:17px;
border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}h3{font-size:15px}
.sub{color:#555;margin:4px 0 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 18px;margin:8px 0}
dt{color:#555}dd{margin:0;word-break:break-word}
.heatmap,.curves{max-width:100%;height:auto}.heatmap .margin rect{stroke:#555;stroke-width:.5}
.note{color:#555;font-size:13px}.warn{color:#a00;font-weight:bold}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ddd;padding:3px 6px;vertical-align:top;text-align:left}
th{background:#f4f4f4;cursor:pointer;position:sticky;top:0;white-space:nowrap}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}
td{max-width:360px;min-width:60px;word-break:break-word}
td.num,td.id{text-align:right;white-space:nowrap}td.text{min-width:160px}
td.none{color:#aaa}tr[data-outcome=wrong] td{background:#fff4f4}
tr[data-outcome=truncated] td{background:#fff8e6}
tr[data-failed] td{background:#f2f2f2}table.small{font-size:13px}
.controls{margin:8px 0}.controls input{width:280px}#shown{color:#555}
#samples:not(.all) .extra{display:none}
dl.headline{display:flex;flex-wrap:wrap;gap:10px 28px;margin:14px 0 0;padding:12px 16px;
background:#f6f8fa;border:1px solid #e1e4e8;border-radius:6px}
dl.headline div{min-width:120px}dl.headline dt{font-size:12px}
dl.headline dd{font-size:16px;font-weight:600}
details summary{cursor:pointer;color:#555}
.failures .ids{color:#777;font-size:12px}
.runs td,.runs th{font-size:13px}.runs td{max-width:300px}
.runs td:first-child{white-space:nowrap}
.side{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0}figcaption{font-weight:bold}
footer{color:#888;font-size:12px;margin-top:32px}
@page{size:A4 landscape;margin:10mm}
@media print{body{max-width:none;margin:0;font-size:11px}.controls{display:none}
#samples:not(.all) .extra{display:table-cell}
th{position:static;white-space:normal}.scroll{overflow:visible}
#samples{width:100%;font-size:7px}th,td,td.text,td.num,td.id{max-width:none;min-width:0;
white-space:normal;overflow-wrap:anywhere;padding:2px}section{break-inside:avoid-page}
#section-samples{break-before:page;break-inside:auto}}
"""

# The samples table from its data: a page of rows at a time, sorted by any column
# (numbers as numbers), filtered by text and outcome; every row when printed.
_SCRIPT = """
(function(){
const table=document.getElementById('samples');if(!table)return;
const data=JSON.parse(document.getElementById('sample-data').textContent);
const columns=data.columns,numeric=new Set(data.numeric),extra=new Set(data.extra),all=data.rows;
const size=parseInt(table.dataset.pageRows,10),body=table.tBodies[0];
const heads=table.tHead.rows[0].cells,at=function(name){return columns.indexOf(name);};
const outcomeAt=at('outcome'),errorAt=at('error_kind');
const texts=all.map(function(row){return row.map(function(v){return v===null?'':String(v);})
.join(' ').toLowerCase();});
const filter=document.getElementById('filter'),outcome=document.getElementById('outcome');
const shown=document.getElementById('shown'),label=document.getElementById('page');
const previous=document.getElementById('previous'),next=document.getElementById('next');
let order=all.map(function(_,i){return i;}),view=order,page=0,printing=false;
function td(name,value){const cell=document.createElement('td');
if(value===null){cell.className='none';cell.textContent='\u2013';}
else if(numeric.has(name)){cell.className='num';cell.dataset.sort=value;}
else cell.className=name==='cell_id'?'id':'text';
if(value!==null)cell.textContent=String(value);
if(extra.has(name))cell.classList.add('extra');return cell;}
const toggle=document.getElementById('columns'),few=toggle.textContent;
toggle.addEventListener('click',function(){const wide=table.classList.toggle('all');
toggle.textContent=wide?'key columns':few;});
function render(){const pages=Math.max(1,Math.ceil(view.length/size));
page=Math.min(page,pages-1);
const slice=printing?view:view.slice(page*size,(page+1)*size);
body.replaceChildren.apply(body,slice.map(function(i){const row=all[i];
const tr=document.createElement('tr');tr.dataset.outcome=row[outcomeAt]===null?'':row[outcomeAt];
if(row[errorAt]!==null)tr.dataset.failed='';
columns.forEach(function(name,c){tr.appendChild(td(name,row[c]));});return tr;}));
shown.textContent=view.length+' of '+all.length+' samples';
label.textContent='page '+(page+1)+' of '+pages;
previous.disabled=page===0;next.disabled=page>=pages-1;}
function apply(){const text=filter.value.toLowerCase(),want=outcome.value;
view=order.filter(function(i){return(!want||all[i][outcomeAt]===want)&&
(!text||texts[i].includes(text));});page=0;render();}
filter.addEventListener('input',apply);outcome.addEventListener('change',apply);
previous.addEventListener('click',function(){page--;render();});
next.addEventListener('click',function(){page++;render();});
window.addEventListener('beforeprint',function(){printing=true;render();});
window.addEventListener('afterprint',function(){printing=false;render();});
Array.from(heads).forEach(function(head,c){head.addEventListener('click',function(){
const isNumber=head.hasAttribute('data-numeric'),up=!head.classList.contains('asc');
for(const other of heads)other.classList.remove('asc','desc');
head.classList.add(up?'asc':'desc');
function key(i){const v=all[i][c];if(isNumber)return v===null?-Infinity:v;
return v===null?'':String(v);}
order=order.slice().sort(function(a,b){const x=key(a),y=key(b);
const d=isNumber?x-y:String(x).localeCompare(String(y));return up?d:-d;});apply();});});
apply();
})();
"""


# No request of any kind: a self-contained page needs none, and a shared one must not
# call out. Inline styles; only this page's own script (by its hash, so no injected
# script could run even if some text escaped its escaping); images only as data: URIs.
SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{SCRIPT_HASH}'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def runs_table(
    runs: Sequence[dict[str, Any]], columns: Sequence[tuple[str, Callable[[Any], Any]]]
) -> str:
    """A small table of runs, one row each, the columns given as (header, value of a run)."""
    return render(
        "runs_table.html",
        headers=[name for name, _ in columns],
        rows=[["" if (v := value(run)) is None else v for _, value in columns] for run in runs],
    )
