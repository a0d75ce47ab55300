"""A run's report page: what it says of the run, handed to ``run_report.html``.

One self-contained file with inline CSS, inline SVG and a little inline script; a
Content Security Policy forbids every request, so a page opened from a bucket, a mail
or a chat loads nothing from anywhere and shows the same thing offline. Here are the
page's facts and figures as data; the markup is the templates' (``niah.core.pages.environment``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from niah.core.pages.axis_view import axis_headline, axis_pictures, axis_table
from niah.core.pages.certificate_view import certificate_view
from niah.core.pages.environment import page_shell, render
from niah.core.pages.heatmap import (
    HARNESS_SCALE,
    PERCENT_SCALE,
    Scale,
    heatmap_figure,
    percent_table,
)
from niah.core.pages.report_samples import samples_table
from niah.core.results.chance import floor_text
from niah.core.results.curves import Curve, curve_figure, measures_curve
from niah.core.results.effective import effective_length_text
from niah.core.results.measures import INDEPENDENT_NOTE, basis_of
from niah.core.results.served_models import model_shown, versions_text
from niah.core.results.summary import (
    GENERATED_MRCR_NOTE,
    ScoreTable,
    failure_reasons,
    format_cost,
    format_spend,
    mrcr_bin_upper,
    score_table,
)
from niah.core.results.uncertainty import figure as _number
from niah.core.results.uncertainty import with_interval
from niah.core.results.variants import lookalikes_text
from niah.core.runs import RunRecord

# The page's file name under the run's report prefix (the CLI links it before it exists).
REPORT_PAGE_FILE = "report.html"


def _when(value: Any) -> str:
    """A Firestore timestamp as ISO 8601 in UTC, or "unknown"."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return "unknown" if value is None else str(value)


def run_scale(summary: dict[str, Any]) -> Scale:
    """The harness's 1-10 for ``single``; percent for every other task."""
    return HARNESS_SCALE if summary["score_scale"] == "1-10" else PERCENT_SCALE


def render_run_page(run: RunRecord, cells: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    """A run's whole report as one HTML page; ``summary`` is ``summarize``'s of the run."""
    task = summary["task"]
    title = f"{summary['model']} · {task} · {summary['run_id']}"
    label = run.label
    return render(
        "run_report.html",
        **page_shell(title),
        label=label,
        run_id=summary["run_id"],
        scorer=summary["scorer"],
        status=run.status,
        headline=_headline(run, summary),
        axis_headline=axis_headline(summary) if summary.get("variants") else None,
        pictures=_pictures(summary, label, cells),
        measure_facts=_measure_facts(summary),
        axis=axis_table(summary) if summary.get("variants") else None,
        mrcr=_mrcr_bins(summary),
        certificate=certificate_view(summary),
        sentinel=run.sentinel_check,
        cost_facts=_cost_facts(summary),
        failures=list(failure_reasons(cells).items()),
        samples=samples_table(cells),
        run_facts=_run_facts(run, summary),
    )


def _pictures(summary: dict[str, Any], label: str, cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The heatmap and the score-against-length curve; for MRCR v2, its bins' curve.

    An MRCR sample has no depth: a heatmap of it is one row at "0 %", so MRCR is drawn
    as the model cards draw it, the mean per length bin with its 95 % interval.
    """
    run_id = summary["run_id"]
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
        return {
            "mrcr_bins": curve_figure([curve], label=f"MRCR v2 score per length bin of {run_id}")
        }
    table = score_table(heatmap_cells(cells, summary["task"]))
    scale = run_scale(summary)
    if summary.get("variants"):  # an axis beyond length and depth: small multiples
        return axis_pictures(summary, cells, scale) | {"scale_note": _scale_note(summary, table)}
    curve = measures_curve(label, summary["measures"])
    return {
        "heatmap": heatmap_figure(
            table if scale is HARNESS_SCALE else percent_table(table),
            scale,
            label=f"heatmap of {run_id}",
        ),
        "scale_note": _scale_note(summary, table),
        "curve": curve_figure([curve], label=f"mean score against context length of {run_id}"),
    }


def _headline(run: RunRecord, summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The answer first: model, task, mean with its interval, effective length, outcomes.

    A run with an axis has no one mean or length: its values' table (``axis_headline``)
    follows these facts instead.
    """
    measures, outcomes = summary["measures"], summary["outcomes"]
    served = summary.get("served_models") or {}
    answer = [
        (
            # A certify run's samples cluster where the answer was decided: their mean is
            # not the model's over a grid, and says so.
            "mean of the samples asked (%)" if summary.get("certificate") else "mean (%)",
            with_interval(
                measures["mean"], measures.get("mean_interval"), basis=basis_of(measures, "mean")
            ),
        ),
        ("effective length", effective_length_text(measures["effective_length"])),
    ]
    if summary.get("chance_floor"):  # beside the score: what guessing gets
        answer.insert(1, ("chance floor", floor_text(summary["chance_floor"])))
    facts = [
        ("model", model_shown(str(summary["model"] or ""), served)),
        ("task", summary["task"]),
        *([] if summary.get("variants") else answer),
        *(
            [("chance floor", floor_text(summary["chance_floor"]))]
            if summary.get("variants") and summary.get("chance_floor")
            else []
        ),
        (
            "outcomes",
            f"{outcomes['correct']} correct · {outcomes['wrong']} wrong · "
            f"{outcomes['unscored']} unscored · {outcomes.get('truncated', 0)} truncated "
            f"of {summary['samples']}",
        ),
        ("cost", format_cost(summary).removeprefix("cost ")),
        ("status", run.status),
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


def _run_facts(run: RunRecord, summary: dict[str, Any]) -> list[tuple[str, str]]:
    spec, settings = run.spec, run.call_settings
    thinking = settings.get("thinking_level") or settings.get("thinking_budget")
    served = summary.get("served_models") or {}
    facts = [
        ("run ID", summary["run_id"]),
        ("model", summary["model"]),
        # Every reply's modelVersion, counted; the local model reports none.
        ("answered by", versions_text(served) if served else "not reported"),
        ("task", summary["task"]),
        ("scorer", summary["scorer"]),
        ("status", run.status),
        (
            "execution",
            "batch (Vertex AI batch jobs, batch prices)" if spec.execution == "batch" else "online",
        ),
        ("haystack", summary["haystack_uri"]),
        ("created", _when(run.stamped("created_at"))),
        ("last update", _when(run.stamped("updated_at"))),
        ("completed", _when(run.stamped("completed_at"))),
        (
            "temperature",
            "the model's default"
            if settings.get("temperature") is None
            else settings["temperature"],
        ),
        ("thinking", "the model's default" if thinking is None else thinking),
        ("output budget (tokens)", _budget_text(spec.max_output_tokens, settings)),
        ("samples per grid point", spec.samples_per_cell),
        ("seed", spec.seed),
        ("results version", summary["version"]),
        ("samples", f"{summary['samples']} ({summary['answered']} answered)"),
    ]
    if summary.get("mrcr"):
        facts.append(("MRCR samples", summary["mrcr"].get("samples")))
    if run.model_notes:
        # Google's word on the models when the run began (deprecated; retired and
        # called anyway): a score is read in its light.
        facts.append(("model lifecycle", "; ".join(run.model_notes)))
    if summary.get("token_count_note"):
        # The lengths on the x axis are the model's count, not the local tokenizer's.
        facts.append(("token counts", summary["token_count_note"]))
    if summary.get("count_fit_note"):
        facts.append(("prompt lengths", summary["count_fit_note"]))
    return [(name, "" if value is None else str(value)) for name, value in facts]


def _budget_text(asked: int | None, settings: Mapping[str, Any]) -> str:
    """The calls' output budget (``asked``: the request's), and the rooms it was made of."""
    total = asked or settings.get("max_output_tokens")
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
    # A run with an axis: each value's figures are in its table, none pooled here.
    pooled = [
        *([("mean score (1-10)", _number(summary["mean_score"]))] if single else []),
        (
            "mean (%)",
            with_interval(
                measures["mean"], measures.get("mean_interval"), basis=basis_of(measures, "mean")
            ),
        ),
        (
            "mean per length (%)",
            " · ".join(
                f"{int(length):,}: "
                + with_interval(
                    value, intervals.get(length), basis=basis_of(measures, "by_length", length)
                )
                for length, value in sorted(
                    measures["by_length"].items(), key=lambda item: int(item[0])
                )
            ),
        ),
        ("intervals", measures.get("interval_basis", {}).get("clusters") or INDEPENDENT_NOTE),
        ("effective length (tokens)", effective_length_text(effective)),
    ]
    facts = [
        *([] if summary.get("variants") else pooled),
        ("effective length rule", _rule_text(effective)),
        *(
            []
            if summary.get("variants")
            else [("area under the curve (%)", _number(measures["area_under_curve"]))]
        ),
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
    if "distractor_answers" in summary:
        facts.append(
            (
                "wrong answers that gave a distractor's value",
                lookalikes_text(summary),
            )
        )
    return facts


def _rule_text(effective: dict[str, Any]) -> str:
    """The rule the run chose and the threshold it gave ("none" without NoLiMa's base).

    A run with an axis: under NoLiMa's rule each value has its own base and threshold.
    """
    values = effective.get("by_variant") or []
    if len({one.get("threshold") for one in values}) > 1:  # NoLiMa's: a base per value
        thresholds = " · ".join(
            f"{one['label']} {'none' if one.get('threshold') is None else one['threshold']}"
            for one in values
        )
        return f"{effective.get('rule')} (threshold per value: {thresholds})"
    if values:
        effective = values[0]
    threshold = effective.get("threshold")
    return f"{effective.get('rule')} (threshold {'none' if threshold is None else threshold})"


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
            *(
                [("chance floor", floor_text(summary["chance_floor"]))]
                if summary.get("chance_floor")
                else []
            ),
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
