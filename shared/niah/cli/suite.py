"""``niah run --suite ruler``: one run per task of a suite, then the suite's table.

Kept apart from the command line's parser: the CLI hands over its parsed options and its
own ways to submit a run, wait for one and reach the store; this module knows what a
suite is (``niah.tasks.ruler_suite``) and what to print. It sits in the CLI's floor
because it prints with ``niah.cli.output``: below it, that import would point up.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

from niah.cli.output import count
from niah.core.results.context_rot import (
    CONTEXT_ROT_AXES,
    CONTEXT_ROT_DEPTHS,
    CONTEXT_ROT_LENGTHS,
    context_rot_table,
    format_context_rot,
)
from niah.core.results.ruler_table import format_ruler_table
from niah.core.runs.record import RunRecord
from niah.tasks import DISTRACTOR_TASKS
from niah.tasks.ruler_suite import LEFT_OUT, ruler_table, suite_requests

CONTEXT_ROT = "context-rot"

Submit = Callable[[dict[str, Any]], dict[str, Any]]
Wait = Callable[[str, float], RunRecord]


def run_suite(
    args: argparse.Namespace,
    payload: dict[str, Any],
    *,
    submit: Submit,
    wait: Wait,
    store: Callable[[], Any],
) -> int | str:
    """Submit the suite's runs; with ``--wait`` follow them and print RULER's table.

    Returns the exit status, or the error message to exit with.
    """
    if args.estimate or args.resume:
        return "niah: --suite submits its runs; --estimate and --resume take one run"
    if args.suite == CONTEXT_ROT:
        return _context_rot(args, payload, submit=submit, wait=wait, store=store)
    try:
        requests = suite_requests(args.suite, payload)
    except ValueError as error:
        return f"niah: --suite: {error}"
    submitted: dict[str, str] = {}
    for name, body in requests:
        reply = submit(body)
        submitted[name] = str(reply["run_id"])
        if not args.json:
            cells = count(int(reply["cells"]), "cell")
            print(f"{name}: run {reply['run_id']}, {cells}", flush=True)
    if not args.json:
        for name, reason in LEFT_OUT.items():
            print(f"{name}: left out, {reason}")
    if not args.wait:
        if args.json:
            print(json.dumps({"suite": args.suite, "runs": submitted}, indent=2))
        else:
            print(
                "follow each with `niah wait RUN_ID`; `niah compare` of the runs shows "
                "RULER's table"
            )
        return 0
    pairs = []
    for run_id in submitted.values():
        pairs.append((wait(run_id, args.timeout), store().list_cells(run_id)))
    table = ruler_table(pairs)
    if args.json:
        document = {"suite": args.suite, "runs": submitted}
        document["table"] = dataclasses.asdict(table) if table else None
        print(json.dumps(document, indent=2))
    elif table is not None:
        print(format_ruler_table(table))
    else:
        print("niah: the suite's runs hold too few RULER tasks for a table", file=sys.stderr)
    return 0


def _context_rot(
    args: argparse.Namespace,
    payload: dict[str, Any],
    *,
    submit: Submit,
    wait: Wait,
    store: Callable[[], Any],
) -> int | str:
    """One run with Context Rot's two axes; with ``--wait``, its table."""
    clashing = sorted(set(payload) & set(CONTEXT_ROT_AXES))
    if clashing:
        return (
            f"niah: --suite context-rot sets {' and '.join(clashing)} itself (0, 1 and 4 "
            "distractors, coherent and shuffled); leave it out"
        )
    task = payload.get("task", "single")
    if task not in DISTRACTOR_TASKS:
        return (
            f"niah: --suite context-rot puts distractors beside a retrieval task's needle "
            f"({', '.join(DISTRACTOR_TASKS)}); task {task} has none: choose one of those"
        )
    reply = submit(context_rot_grid(payload) | CONTEXT_ROT_AXES)
    run_id = str(reply["run_id"])
    if not args.wait:
        if args.json:
            print(json.dumps({"suite": args.suite, "runs": {CONTEXT_ROT: run_id}}, indent=2))
        else:
            print(f"{CONTEXT_ROT}: run {run_id}, {count(int(reply['cells']), 'cell')}")
            print(f"follow it with `niah wait {run_id}`; its report has the table's curves")
        return 0
    if not args.json:
        print(f"{CONTEXT_ROT}: run {run_id}, {count(int(reply['cells']), 'cell')}", flush=True)
    rule = wait(run_id, args.timeout).effective_length_rule
    rows = context_rot_table(store().list_cells(run_id), rule=rule)
    if args.json:
        document = {"suite": args.suite, "runs": {CONTEXT_ROT: run_id}}
        print(json.dumps(document | {"table": [dataclasses.asdict(r) for r in rows]}, indent=2))
    else:
        print(format_context_rot(rows, rule))
    return 0


def context_rot_grid(payload: dict[str, Any]) -> dict[str, Any]:
    """The user's lengths and depths, else a few of each (six conditions fill a grid fast).

    The default grid is 15 x 15; times six it would be 1,350 cells, past the cap.
    """
    given = set(payload)
    if not given & {"context_lengths", "context_lengths_min", "context_lengths_max",
                    "context_lengths_num_intervals"}:  # fmt: skip
        payload = payload | {"context_lengths": CONTEXT_ROT_LENGTHS}
    if not given & {"document_depth_percents", "document_depth_percent_min",
                    "document_depth_percent_max", "document_depth_percent_intervals"}:  # fmt: skip
        payload = payload | {"document_depth_percents": CONTEXT_ROT_DEPTHS}
    return payload
