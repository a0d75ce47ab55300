"""``niah compare``: runs side by side on their shared grid."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from niah.cli.backend import result_store
from niah.cli.output import count, to_json, usage_error, writable_file, write_file
from niah.core.results.paired_text import comparison_lines
from niah.core.runs import RunRecord

if TYPE_CHECKING:
    from niah.core.results.comparison import Comparison


def cmd_compare(args: argparse.Namespace) -> None:
    """Compare runs on their shared grid: an HTML page, and a PNG beside it."""
    from niah.core.results.comparison import compare_runs, render_comparison_page
    from niah.core.results.variants import split_by_variant
    from niah.errors import ComparisonError, DifferentModelsError
    from niah.service.reports.png import render_comparison_png
    from niah.tasks.ruler_suite import RULER_RUNS

    if len(set(args.run_ids)) != len(args.run_ids):
        usage_error("compare: a run is named twice; name each run once")
    if args.out.suffix.lower() == ".png":
        usage_error("compare --out names the HTML page (the PNG goes beside it): use .html")
    writable_file(args.out, "compare --out")
    store = result_store()
    pairs = []
    for run_id in args.run_ids:
        run = store.get_run(run_id)
        if run is None:
            sys.exit(f"niah: no run {run_id}; `niah list` shows recent runs")
        pairs.append((RunRecord.from_document(run, run_id), store.list_cells(run_id)))
    if len(pairs) == 1:  # one run with an axis (distractors 0 1 4): its values, paired
        pairs = split_by_variant(*pairs[0])
    if len(pairs) < 2:
        usage_error(
            "compare: name two runs or more, or one run with an axis (several distractors "
            "or haystack orders)"
        )
    try:
        comparison = compare_runs(
            pairs, allow_different_models=args.allow_different_models, suite=RULER_RUNS
        )
    except DifferentModelsError as error:
        sys.exit(f"niah: compare: {error}. Pass --allow-different-models to compare anyway")
    except ComparisonError as error:
        sys.exit(f"niah: compare: {error}")
    out: Path = args.out
    write_file(out, render_comparison_page(comparison).encode(), quiet=args.json)
    write_file(out.with_suffix(".png"), render_comparison_png(comparison), quiet=args.json)
    if args.json:
        print(to_json(comparison_document(comparison, out)))
        return
    disagreeing = len(comparison.disagreements)
    print(
        f"{count(disagreeing, 'sample')} {'disagrees' if disagreeing == 1 else 'disagree'} "
        f"between {comparison.runs[0].run_id} and {comparison.runs[1].run_id}"
    )
    for paired in comparison.paired:
        for line in comparison_lines(paired):
            print(line)


def comparison_document(comparison: Comparison, out: Path) -> dict[str, Any]:
    """What ``niah compare --json`` prints: the runs, the tests, the disagreements, files."""
    return {
        "runs": [{"run_id": c.run_id, "label": c.name} for c in comparison.runs],
        "paired": [paired.as_dict() for paired in comparison.paired],
        "difference": {
            "lengths": comparison.difference.lengths,
            "depths": comparison.difference.depths,
            "points": comparison.difference.scores,
        },
        "disagreements": comparison.disagreements,
        "unpaired_samples": comparison.unpaired_samples,
        "dropped_points": comparison.dropped_points,
        "html": str(out),
        "png": str(out.with_suffix(".png")),
    }
