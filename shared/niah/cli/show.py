"""``niah status``, ``report``, ``export`` and ``list``: what a stored run holds."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from niah.cli.backend import blob_store, result_store
from niah.cli.output import count, to_json, usage_error, writable_file, write_file
from niah.cli.results import listed_line, print_results, print_status_json
from niah.core.pages.run_index import report_error_text
from niah.core.results.summary import (
    summarize,
)
from niah.core.runs import listed_runs, stored_run


def cmd_status(args: argparse.Namespace) -> None:
    """Show a run's progress and, when done, its score table."""
    run = stored_run(result_store(), args.run_id)
    if run is None:
        sys.exit(f"niah: no run {args.run_id}")
    if args.json:
        sys.exit(print_status_json(run))
    batch = run.spec.execution == "batch"
    print(
        f"run {args.run_id}: {run.status or 'status not recorded'}"
        + (" (batch: Vertex AI batch jobs at batch prices)" if batch else "")
        + ", "
        f"{run.done} answered + {run.failed} failed of {count(run.total, 'cell')}"
    )
    for job in run.batch_job_entries():
        print(f"batch job {job['name']}: {job.get('state')}" + _job_lines(job))
    for why in (run.batch_stopped, run.batch_error):  # why batch output was not used
        if why:
            print(f"batch: {why}")
    if run.cancelled:
        print(
            "cancelled: no further cell is asked (calls under way when it was cancelled are "
            f"stored). Resume it with: niah run --resume {args.run_id}"
        )
    if run.report_error:
        print(
            f"report failed: {report_error_text(run.report_error)}. The cells are kept; ask for "
            f"the report again with: niah run --resume {args.run_id}"
        )
    sys.exit(print_results(run))


def _job_lines(job: dict[str, Any]) -> str:
    """What came of a job's lines, once its output is read; its error."""
    said = []
    if "lines_read" in job:
        said.append(
            f"{job.get('lines_stored', 0)} of {job.get('cells', job['lines_read'])} lines "
            "stored from batch"
        )
        for key, what in (
            ("lines_failed", "failed"),
            ("lines_retried_online", "sent online"),
            ("lines_unmatched", "matched no cell"),
        ):
            if job.get(key):
                said.append(f"{job[key]} {what}")
    text = (", " + ", ".join(said)) if said else ""
    return text + (f" ({job['error']})" if job.get("error") else "")


def cmd_report(args: argparse.Namespace) -> None:
    """Download the run's heatmap PNG (``--out``), or render its HTML report (``--html``)."""
    if not args.out and not args.html:
        usage_error("report: give --out FILE.png (the heatmap) or --html FILE.html or both")
    for path, option in ((args.out, "--out"), (args.html, "--html")):
        if path:
            writable_file(path, option)
    store = result_store()
    run = stored_run(store, args.run_id)
    if run is None:
        sys.exit(f"niah: no run {args.run_id}; `niah list` shows recent runs")
    if args.html:
        from niah.core.pages.report_page import render_run_page

        cells = store.list_cells(args.run_id)
        if not cells:
            sys.exit(f"niah: run {args.run_id} has no stored cells yet")
        summary = summarize(run, cells, store.list_calls(args.run_id))
        page = render_run_page(run, cells, summary)
        write_file(args.html, page.encode())
    if args.out:
        if not run.report:
            sys.exit(
                f"niah: run {args.run_id} has no heatmap yet (it is drawn when the last cell "
                f"is in); see `niah status {args.run_id}`, or render --html now"
            )
        name = str(run.report["heatmap_uri"]).split("/", 3)[3]
        write_file(args.out, blob_store().read(name))


EXPORT_FORMATS = ("json", "csv", "jsonl")


def cmd_export(args: argparse.Namespace) -> None:
    """Write the run's samples and its summary.

    ``json`` (the default): a folder of one JSON file per cell, in the harness's result
    format. ``csv`` and ``jsonl``: one file, one row (or line) per sample. The run's
    summary goes beside the folder or file, as ``<name>.summary.json``.
    """
    from niah.core.results.sample_rows import cells_jsonl, rows_csv

    out: Path = args.out
    if args.format == "json" and out.exists() and not out.is_dir():
        usage_error(f"export --format json writes a folder; {out} is a file")
    if args.format != "json":
        writable_file(out, f"export --format {args.format} --out")
    store = result_store()
    run = stored_run(store, args.run_id)
    if run is None:
        sys.exit(f"niah: no run {args.run_id}; `niah list` shows recent runs")
    cells = store.list_cells(args.run_id)
    if not cells:
        sys.exit(f"niah: run {args.run_id} has no stored cells yet")
    summary = summarize(run, cells, store.list_calls(args.run_id))
    if args.format == "json":
        out.mkdir(parents=True, exist_ok=True)
        for cell in cells:
            name = f"{cell['cell_id']}_results.json"
            (out / name).write_text(json.dumps(cell, indent=2, default=str))
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        text = rows_csv(cells) if args.format == "csv" else cells_jsonl(cells)
        # UTF-8 with a byte-order mark for CSV, so a spreadsheet reads accents right;
        # bytes, so the CSV's own CRLF line ends are kept as they are on every system.
        out.write_bytes(text.encode("utf-8-sig" if args.format == "csv" else "utf-8"))
    # Beside the folder or file, not in it: tools that read every *.json of a results
    # folder as a cell (the harness's notebooks) never meet it.
    summary_path = out.with_name(out.name.removesuffix(out.suffix) + ".summary.json")
    summary_path.write_text(to_json(summary))
    print(f"{count(len(cells), 'sample')} written to {out}; summary in {summary_path}")


def cmd_list(args: argparse.Namespace) -> None:
    """Recent runs, newest first: ID, model, task, status, progress, mean, cost, created."""
    runs = [listed_line(doc) for doc in result_store().recent_runs(args.limit)]
    if args.json:
        print(to_json(runs))
        return
    if not runs:
        print("no runs yet; start one with `niah run`")
        return
    header = ("run", "model", "task", "status", "progress", "mean %", "cost", "created (UTC)")
    rows = [
        (
            r["run_id"],
            r["model"] or "-",
            r["task"],
            r["status"] or "-",
            f"{r['finished']}/{r['total']}",
            "-" if r["mean_percent"] is None else f"{r['mean_percent']:g}",
            "unknown" if r["cost_usd"] is None else f"${r['cost_usd']:.4f}",
            (r["created_at"] or "")[:19].replace("T", " "),
        )
        for r in runs
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(value).ljust(width) for value, width in zip(row, widths, strict=True)))


def cmd_index(args: argparse.Namespace) -> None:
    """Write the runs index (the page the report function keeps in the bucket) locally."""
    from niah.core.pages.run_index import INDEX_FIELDS, build_index, index_json, render_index_page

    writable_file(args.out, "--out")
    if args.json:
        writable_file(args.json, "--json")
    index = build_index(listed_runs(result_store().index_runs(INDEX_FIELDS)))
    write_file(args.out, render_index_page(index).encode())
    if args.json:
        write_file(args.json, index_json(index))
    runs = len(index["runs"])
    print(f"{count(runs, 'run')} listed")
