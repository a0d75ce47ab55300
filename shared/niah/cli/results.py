"""A run's results as a person or a script reads them, and the exit code they give."""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

from niah.cli.backend import result_store
from niah.cli.output import to_json
from niah.core.summary import (
    cost_summary,
    failure_reasons,
    format_cost,
    format_spend,
    format_table,
    score_table,
    spend_summary,
)

# Exit codes of `niah run --wait`, `niah wait` and `niah status` (also in the README).
EXIT_ALL_SCORED, EXIT_CELLS_FAILED, EXIT_CELLS_UNSCORED, EXIT_CELLS_TRUNCATED = 0, 3, 4, 5


def print_results(run_id: str, run: dict[str, Any]) -> int:
    """Print the run's results; the exit code (``exit_code``)."""
    cells = result_store().list_cells(run_id)
    print(
        f"\nrun {run_id}: {run.get('model')}, {run.get('done', 0)} answered, "
        f"{run.get('failed', 0)} failed, mean score {run.get('mean_score')}, "
        f"retrieved {run.get('retrieved_share')}"
    )
    totals = run.get("totals", {})
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
    calls = result_store().list_calls(run_id)
    if calls:
        print(format_spend(spend_summary(calls, str(run.get("model") or ""))))
    if run.get("prompt_token_deviation"):
        deviation = run["prompt_token_deviation"]
        print(
            f"prompt tokens vs requested length: mean {deviation.get('mean')}, "
            f"max |deviation| {deviation.get('max_abs')}"
        )
    if measures := measures_line(run):
        print(measures)
    task = (run.get("spec") or {}).get("task", "single")
    scale = "" if task == "single" else f", task {task}, fraction of 1"
    print(f"scores ({run.get('scorer', 'exact')}{scale}):")
    print(format_table(score_table(cells)))
    if run.get("report"):
        print(f"heatmap: {run['report']['heatmap_uri']}")
        if run["report"].get("html_url"):
            print(f"report: {run['report']['html_url']}")
    return report_failures(cells)


def report_failures(cells: list[dict[str, Any]]) -> int:
    """Failed and unscored cells, grouped by reason with counts; the exit code."""
    reasons = failure_reasons(cells)
    for reason, cell_ids in reasons.items():
        print(f"{len(cell_ids)} x {reason}", file=sys.stderr)
    return exit_code(cells, reasons)


def exit_code(cells: list[dict[str, Any]], reasons: dict[str, list[str]]) -> int:
    """Failed cells 3, else truncated answers 5, else other unscored ones 4, else 0."""
    if any(cell.get("error") for cell in cells):
        return EXIT_CELLS_FAILED
    if any(cell.get("outcome") == "truncated" for cell in cells):
        return EXIT_CELLS_TRUNCATED
    return EXIT_CELLS_UNSCORED if reasons else EXIT_ALL_SCORED


def measures_line(run: dict[str, Any]) -> str:
    """Outcomes and the run's measures, once the report has them."""
    outcomes = run.get("outcomes") or {}
    measures = run.get("measures") or {}
    if not measures:
        return ""
    effective = measures.get("effective_length") or {}
    mrcr = run.get("mrcr")
    mrcr_line = (
        f"\nMRCR v2 ({mrcr.get('samples')}): bins "
        f"{mrcr['bins']}; cumulative to 128K {mrcr['cumulative_128k']}; at 1M {mrcr['at_1m']}"
        if mrcr
        else ""
    )
    return (
        f"outcomes: {outcomes.get('correct', 0)} correct, {outcomes.get('wrong', 0)} wrong, "
        f"{outcomes.get('unscored', 0)} unscored, {outcomes.get('truncated', 0)} truncated; "
        f"mean {measures.get('mean')} %; effective "
        f"length {effective.get('length')} (threshold {effective.get('threshold')}, "
        f"{effective.get('rule')}); area under curve {measures.get('area_under_curve')}" + mrcr_line
    )


def print_status_json(run_id: str, run: dict[str, Any]) -> int:
    """The run's state and figures as one JSON document; the same exit code as the text."""
    store = result_store()
    cells = store.list_cells(run_id)
    reasons = failure_reasons(cells)
    document = run_line(run | {"run_id": run_id}) | {
        "scorer": run.get("scorer", "exact"),
        "mean_score": run.get("mean_score"),
        "retrieved_share": run.get("retrieved_share"),
        "outcomes": run.get("outcomes"),
        "measures": run.get("measures"),
        **({"mrcr": run["mrcr"]} if run.get("mrcr") else {}),
        **(cost_summary(run["totals"]) if run.get("totals") else {}),
        "totals": run.get("totals") or {},
        "spend": spend_summary(store.list_calls(run_id), str(run.get("model") or "")),
        "report": run.get("report"),
        "updated_at": run.get("updated_at"),
        "completed_at": run.get("completed_at"),
        "failures": {reason: len(ids) for reason, ids in reasons.items()},
        "exit_code": (code := exit_code(cells, reasons)),
    }
    print(to_json(document))
    return code


def run_line(run: dict[str, Any]) -> dict[str, Any]:
    """What ``niah list`` and ``niah status --json`` say of a run."""
    totals = run.get("totals") or {}
    created = run.get("created_at")
    return {
        "run_id": run.get("run_id"),
        "model": run.get("model"),
        "task": (run.get("spec") or {}).get("task", "single"),
        "status": run.get("status"),
        "total": int(run.get("total", 0)),
        "done": int(run.get("done", 0)),
        "failed": int(run.get("failed", 0)),
        "finished": int(run.get("done", 0)) + int(run.get("failed", 0)),
        "mean_percent": (run.get("measures") or {}).get("mean"),
        "cost_usd": cost_summary(totals)["cost_usd"] if totals else None,
        "created_at": created.isoformat() if isinstance(created, dt.datetime) else created,
    }
