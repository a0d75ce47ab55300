"""A run's results as a person or a script reads them, and the exit code they give."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Mapping
from typing import Any

from niah.cli.backend import result_store, where_to_look
from niah.cli.failures import fix_for
from niah.cli.output import count, to_json
from niah.core.prompts.count_fit import fit_note
from niah.core.prompts.token_fit import token_count_note
from niah.core.results.chance import floor_text
from niah.core.results.effective import effective_length_short, effective_length_text
from niah.core.results.measures import basis_of
from niah.core.results.served_models import answered_by_text, served_versions
from niah.core.results.summary import (
    cost_summary,
    failure_reasons,
    format_cost,
    format_spend,
    format_table,
    score_table,
    spend_summary,
)
from niah.core.results.uncertainty import with_interval
from niah.core.results.variants import lookalikes_text
from niah.core.runs import ListedRun, ReportFigures, RunRecord
from niah.errors import StoredRunError

# Exit codes of `niah run --wait`, `niah wait` and `niah status` (also in the README).
EXIT_ALL_SCORED, EXIT_CELLS_FAILED, EXIT_CELLS_UNSCORED, EXIT_CELLS_TRUNCATED = 0, 3, 4, 5


def print_results(run: RunRecord) -> int:
    """Print the run's results; the exit code (``exit_code``)."""
    run_id = run.run_id
    store = result_store()
    cells = store.list_cells(run_id)
    task, figures = run.spec.task, run.figures
    print(
        f"\nrun {run_id} ({run.label}): {run.model or 'model not recorded'}, "
        f"task {task}, "
        f"{count(run.done, 'cell')} answered, {run.failed} "
        f"failed; {score_line(run, task)}"
    )
    answered_by = answered_by_text(run.model, served_versions(cells))
    if answered_by:
        print(f"{answered_by}: the scores are that model's (each reply names its model)")
    totals = dict(run.totals)
    if totals:
        cost = cost_summary(totals)
        cached = f" ({cost['cached_share']:.0%} cached)" if cost["cached_share"] else ""
        print(
            f"tokens: {int(totals.get('prompt_tokens', 0)):,} prompt{cached} + "
            f"{int(totals.get('output_tokens', 0)):,} output + "
            f"{int(totals.get('thinking_tokens', 0)):,} thinking; {format_cost(cost)}"
            + (
                f"; judge {int(totals.get('judge_prompt_tokens', 0)):,} tokens"
                if totals.get("judge_prompt_tokens")
                else ""
            )
        )
    calls = store.list_calls(run_id)
    if calls:
        print(format_spend(spend_summary(calls, run.model, run.tier)))
    deviation = figures.prompt_token_deviation or {}
    if deviation.get("mean") is not None:
        print(
            f"prompt tokens vs requested length: mean {deviation['mean']:g}, "
            f"max |deviation| {deviation['max_abs']:g}"
        )
    elif deviation:
        print("prompt tokens vs requested length: not measured (no answer gave its prompt count)")
    token_count = dict(run.token_count) if run.token_count else None
    for note in (token_count_note(token_count), fit_note(figures.count_fit)):
        if note:
            print(note)
    for line in measures_lines(run):
        print(line)
    scale = "" if task == "single" else f", task {task}, fraction of 1"
    print(f"scores ({run.scorer or 'exact'}{scale}):")
    for variant in figures.variants or []:  # a run with an axis: a table per value
        print(f"{variant['label']}:")
        print(
            format_table(score_table([c for c in cells if c.get("variant") == variant["variant"]]))
        )
    if not figures.variants:
        print(format_table(score_table(cells)))
    report = dict(run.report) if run.report else None
    for line in where_to_look(run_id, report, project=None, bucket=None):
        print(line)
    return report_failures(cells, run_id)


def score_line(run: RunRecord, task: str) -> str:
    """The run's headline score in the task's own measure, beside its chance floor."""
    line = _score_line(run, task)
    floor = floor_text(run.spec.task_options.chance_floor())
    return f"{line}; chance floor {floor}" if floor and run.figures.measures else line


def _score_line(run: RunRecord, task: str) -> str:
    """The run's headline score in the task's own measure, or why there is none yet."""
    figures = run.figures
    measures = figures.measures or {}
    if not measures and run.report_error:
        return "scores not determined: the report failed (its reason is above)"
    if not measures:
        return "scores not determined yet (they are computed when the last cell is in)"
    outcomes = figures.outcomes or {}
    scored = sum(int(outcomes.get(name, 0)) for name in ("correct", "wrong"))
    correct = int(outcomes.get("correct", 0))
    mean = measures.get("mean")
    if figures.variants:  # no mean pooled over the axis: each value's is below
        return f"{len(figures.variants)} values of the axis, each scored apart (below)"
    if mean is None:
        return "mean not determined (no sample was scored)"
    if task == "single":
        score, retrieved = figures.mean_score, figures.retrieved_share
        return (
            (f"mean score {score:g} (1-10), " if score is not None else "")
            + f"{correct} of {scored} retrieved"
            + (f" ({100 * retrieved:.1f} %)" if retrieved is not None else "")
        )
    if task == "mrcr":
        # MRCR v2's score is the similarity of the reply to the one asked for (the
        # report's "mean (%)"); "correct" is a reply reproduced whole.
        return (
            f"mean similarity {mean:g} % (MRCR v2's score), {correct} of {scored} reproduced whole"
        )
    return f"mean {mean:g} % (the task's score), {correct} of {scored} fully right"


def report_failures(cells: list[dict[str, Any]], run_id: str = "RUN_ID") -> int:
    """Failed and unscored cells, grouped by reason with counts and a fix; the exit code."""
    reasons = failure_reasons(cells)
    by_id = {str(cell.get("cell_id")): cell for cell in cells}
    for reason, cell_ids in reasons.items():
        print(f"{len(cell_ids)} x {reason}", file=sys.stderr)
        print(f"  fix: {fix_for(by_id[cell_ids[0]], run_id)}", file=sys.stderr)
    return exit_code(cells, reasons)


def exit_code(cells: list[dict[str, Any]], reasons: dict[str, list[str]]) -> int:
    """Failed cells 3, else truncated answers 5, else other unscored ones 4, else 0."""
    if any(cell.get("error") for cell in cells):
        return EXIT_CELLS_FAILED
    if any(cell.get("outcome") == "truncated" for cell in cells):
        return EXIT_CELLS_TRUNCATED
    return EXIT_CELLS_UNSCORED if reasons else EXIT_ALL_SCORED


def measures_lines(run: RunRecord) -> list[str]:
    """Outcomes and the run's measures, once the report has them; MRCR's bins as a table."""
    figures = run.figures
    outcomes = figures.outcomes or {}
    measures = figures.measures or {}
    if not measures:
        return []
    outcome_line = (
        f"outcomes: {outcomes.get('correct', 0)} correct, {outcomes.get('wrong', 0)} wrong, "
        f"{outcomes.get('unscored', 0)} unscored, {outcomes.get('truncated', 0)} truncated"
    )
    if figures.variants:  # a run with an axis: each value apart, nothing pooled
        return [outcome_line, *axis_lines(figures)]
    lines = [
        outcome_line,
        f"mean {_mean(measures)}; "
        f"effective length {effective_length_text(measures.get('effective_length') or {})}; "
        "area under the curve "
        + _percent(measures.get("area_under_curve"), "no length was scored"),
    ]
    intervals = measures.get("by_length_interval") or {}
    if by_length := measures.get("by_length"):
        lines.append(
            "mean per length: "
            + ", ".join(
                f"{int(length):,}: "
                + with_interval(
                    value,
                    intervals.get(length),
                    unit=" %",
                    basis=basis_of(measures, "by_length", length),
                )
                for length, value in sorted(by_length.items(), key=lambda item: int(item[0]))
            )
        )
    if mrcr := figures.mrcr:
        lines += mrcr_table(mrcr)
    return lines


def axis_lines(figures: ReportFigures) -> list[str]:
    """A run with an axis: each value's mean and effective length, and its difference.

    The difference is from the first value, sample by sample (``niah compare RUN`` has
    the per-length tests); the rule is stated once.
    """
    differences = {d["second"]: d["text"] for d in figures.variant_differences or []}
    effective = (figures.measures or {}).get("effective_length") or {}
    variants = figures.variants or []
    lines = [
        f"per value of the axis (effective length {effective.get('rule', 'rule not recorded')}; "
        f"differences from {variants[0]['label']}, paired by length, depth and sample):"
    ]
    for variant in variants:
        found = variant["measures"]
        difference = differences.get(variant["variant"])
        lines.append(
            f"  {variant['label']}: mean {_mean(found)}"
            f"; effective length {effective_length_short(found['effective_length'])}"
            + (f"; {difference}" if difference else "")
            + f"; {lookalikes_text(variant)} wrong answers gave a distractor's value"
        )
    return lines


def _percent(value: float | None, why_not: str) -> str:
    return f"{value:g} %" if value is not None else f"not determined ({why_not})"


def _mean(measures: dict[str, Any]) -> str:
    """The mean with its interval and basis, "66.7 % (95 %, ...: 52.1-79 %)", or why not."""
    value = measures.get("mean")
    if value is None:
        return _percent(value, "no sample was scored")
    return with_interval(
        value, measures.get("mean_interval"), unit=" %", basis=basis_of(measures, "mean")
    )


def mrcr_table(mrcr: dict[str, Any]) -> list[str]:
    """MRCR v2's bins in length order, their mean and samples; then its two headline figures."""
    bins = sorted(mrcr.get("bins") or {}, key=_bin_upper_tokens)
    samples = mrcr.get("samples_per_bin") or {}
    width = max([len("tokens"), *(len(name) for name in bins)])
    lines = [f"MRCR v2 bins ({mrcr.get('samples')}):"]
    lines.append(f"  {'tokens'.ljust(width)}  {'mean %':>7}  {'samples':>7}")
    for name in bins:
        value = mrcr["bins"][name]
        shown = "--" if value is None else f"{value:.1f}"
        lines.append(f"  {name.ljust(width)}  {shown:>7}  {samples.get(name, 0):>7}")
    lines.append(
        f"cumulative to 128K: {_percent(mrcr.get('cumulative_128k'), 'no sample up to 128K')}; "
        f"at 1M: {_percent(mrcr.get('at_1m'), 'no sample between 512K and 1M')}"
    )
    return lines


def _bin_upper_tokens(name: str) -> int:
    """4096 for "<=4K", 8192 for "4K-8K", 1,048,576 for "512K-1M": the bins' order."""
    upper = name.rpartition("-")[2].removeprefix("<=")
    scale = {"K": 1024, "M": 1_048_576}.get(upper[-1:], 1)
    digits = upper.rstrip("KM")
    return int(digits) * scale if digits.isdigit() else 0


def print_status_json(run: RunRecord) -> int:
    """The run's state and figures as one JSON document; the same exit code as the text."""
    run_id = run.run_id
    store = result_store()
    cells = store.list_cells(run_id)
    reasons = failure_reasons(cells)
    served = served_versions(cells)
    figures = run.figures
    # A run with an axis: each value's measures, and the later values' differences.
    axis = {"variants": figures.variants, "variant_differences": figures.variant_differences}
    document = run_line(run) | {
        "served_models": served,
        "answered_by": answered_by_text(run.model, served),
        "scorer": run.scorer or "exact",
        "mean_score": figures.mean_score,
        "retrieved_share": figures.retrieved_share,
        "outcomes": figures.outcomes,
        "measures": figures.measures,
        **{key: value for key, value in axis.items() if value},
        **({"mrcr": figures.mrcr} if figures.mrcr else {}),
        **(cost_summary(dict(run.totals)) if run.totals else {}),
        "totals": dict(run.totals),
        "spend": spend_summary(store.list_calls(run_id), run.model, run.tier),
        "report": dict(run.report) if run.report else None,
        "updated_at": run.stamped("updated_at"),
        "completed_at": run.stamped("completed_at"),
        "failures": {reason: len(ids) for reason, ids in reasons.items()},
        "exit_code": (code := exit_code(cells, reasons)),
    }
    print(to_json(document))
    return code


def run_line(run: RunRecord) -> dict[str, Any]:
    """What ``niah list`` and ``niah status --json`` say of a run."""
    created = run.stamped("created_at")
    return {
        "run_id": run.run_id,
        "label": run.label,
        "model": run.model or None,
        "task": run.spec.task,
        "status": run.status,
        "total": run.total,
        "done": run.done,
        "failed": run.failed,
        "finished": run.done + run.failed,
        "mean_percent": (run.figures.measures or {}).get("mean"),
        **({"report_error": dict(run.report_error)} if run.report_error else {}),
        "cost_usd": cost_summary(dict(run.totals))["cost_usd"] if run.totals else None,
        "created_at": created.isoformat() if isinstance(created, dt.datetime) else created,
    }


def listed_line(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``run_line`` of a stored run, or what a listing can still say of it.

    Where this version cannot read the run's request, its status is "unreadable" and
    ``unreadable`` says why: one such run never hides the others.
    """
    try:
        return run_line(RunRecord.from_document(doc))
    except StoredRunError as error:
        listed = ListedRun.from_document(doc)
        created = listed.created_at
        return {
            "run_id": listed.run_id,
            "label": listed.label,
            "model": listed.model or None,
            "task": listed.task,
            "status": "unreadable",
            "unreadable": error.problem,
            "total": listed.total,
            "done": None,
            "failed": None,
            "finished": "?",
            "mean_percent": None,
            "cost_usd": None,
            "created_at": created.isoformat() if isinstance(created, dt.datetime) else created,
        }
