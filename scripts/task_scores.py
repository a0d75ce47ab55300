"""Scores of every task on one model over a small grid, as a table (not a test).

Runs on a stack that is up (``scripts/local_up.sh; source .local/env``): submits one run
per task over the same lengths and depths, waits for each report, and prints the mean
per length, the effective length, the area under the curve, the outcomes and the
wall time. Then one ``samples_per_cell`` run, for its time and cost.

    .venv/bin/python scripts/task_scores.py [--lengths 1000 2000 3000 4000]
        [--depths 10 50 90] [--model gemma-3-270m-local] [--samples-task multi_key]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import requests

from niah.cloud.store import FirestoreStore
from niah.settings import get_settings
from niah.tasks import TASKS
from niah_devtools import local_identity


def submit(body: dict[str, Any]) -> str:
    """POST the run to the dispatcher; its run ID."""
    url = get_settings().dispatcher_url
    if not url:
        raise SystemExit("no dispatcher URL: run scripts/local_up.sh and source .local/env")
    response = requests.post(
        url,
        data=json.dumps(body),
        # The local stack's own key signs the caller's ID token (niah_devtools.local_identity).
        headers={"Content-Type": "application/json", **local_identity.headers(url=url)},
        timeout=60,
    )
    if response.status_code >= 400:
        raise SystemExit(f"{response.status_code}: {response.text}")
    return str(response.json()["run_id"])


def wait(store: FirestoreStore, run_id: str, timeout: float = 3600) -> dict[str, Any]:
    """The run once its report is written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = store.get_run(run_id) or {}
        if run.get("status") == "complete" and run.get("report"):
            return run
        time.sleep(2)
    raise SystemExit(f"run {run_id} did not finish in {timeout:.0f} s")


def main() -> None:
    """Run every task, then one repeated run, and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lengths", type=int, nargs="+", default=[1000, 2000, 3000, 4000])
    parser.add_argument("--depths", type=float, nargs="+", default=[10, 50, 90])
    parser.add_argument("--model", default="gemma-3-270m-local")
    parser.add_argument("--samples-task", default="multi_key")
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    store = FirestoreStore()
    grid = {
        "model_name": args.model,
        "context_lengths": args.lengths,
        "document_depth_percents": args.depths,
    }
    header = ["task", *(f"{n:,}" for n in args.lengths), "eff. len", "AUC", "c/w/u", "wall s"]
    print(" | ".join(header))
    for task in TASKS:
        started = time.monotonic()
        run = wait(store, submit({**grid, "task": task}))
        wall = time.monotonic() - started
        measures, outcomes = run["measures"], run["outcomes"]
        by_length = [str(measures["by_length"].get(str(n), "-")) for n in args.lengths]
        effective = measures["effective_length"]
        print(
            " | ".join(
                [
                    task,
                    *by_length,
                    f"{effective['length']} ({effective['rule'].split(':')[0]})",
                    str(measures["area_under_curve"]),
                    f"{outcomes['correct']}/{outcomes['wrong']}/{outcomes['unscored']}",
                    f"{wall:.0f}",
                ]
            ),
            flush=True,
        )
    started = time.monotonic()
    body = {**grid, "task": args.samples_task, "samples_per_cell": args.samples}
    run = wait(store, submit(body))
    totals = run.get("totals", {})
    print(
        f"\n{args.samples_task} x {args.samples} samples per cell: {run['total']} samples in "
        f"{time.monotonic() - started:.0f} s; {int(totals.get('prompt_tokens', 0)):,} prompt "
        f"tokens; cost ${totals.get('cost_usd', 0):.4f}; mean {run['measures']['mean']} %"
    )


if __name__ == "__main__":
    main()
