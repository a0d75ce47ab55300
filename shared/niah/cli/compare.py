"""``niah compare``: runs side by side on their shared grid."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from niah.cli.backend import result_store
from niah.cli.output import count, usage_error, writable_file, write_file


def cmd_compare(args: argparse.Namespace) -> None:
    """Compare runs on their shared grid: an HTML page, and a PNG beside it."""
    from niah.core.comparison import compare_runs, render_comparison_page
    from niah.errors import ComparisonError
    from niah.service.report import render_comparison_png

    if len(set(args.run_ids)) != len(args.run_ids):
        usage_error("compare: a run is named twice; name each run once")
    if len(args.run_ids) < 2:
        usage_error("compare: name two runs or more")
    if args.out.suffix.lower() == ".png":
        usage_error("compare --out names the HTML page (the PNG goes beside it): use .html")
    writable_file(args.out, "compare --out")
    store = result_store()
    pairs = []
    for run_id in args.run_ids:
        run = store.get_run(run_id)
        if run is None:
            sys.exit(f"niah: no run {run_id}; `niah list` shows recent runs")
        pairs.append((run | {"run_id": run_id}, store.list_cells(run_id)))
    try:
        comparison = compare_runs(pairs)
    except ComparisonError as error:
        sys.exit(f"niah: compare: {error}")
    out: Path = args.out
    write_file(out, render_comparison_page(comparison).encode())
    write_file(out.with_suffix(".png"), render_comparison_png(comparison))
    disagreeing = len(comparison.disagreements)
    print(
        f"{count(disagreeing, 'sample')} {'disagrees' if disagreeing == 1 else 'disagree'} "
        f"between {args.run_ids[0]} and {args.run_ids[1]}"
    )
