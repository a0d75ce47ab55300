"""``niah run``, ``niah wait`` and ``niah cancel``: submit a run, follow it, stop it."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from typing import Any

from niah.cli.backend import dispatcher_url, result_store, submit, where_to_look
from niah.cli.estimate import (
    check_request,
    estimate_figures,
    format_estimate,
    margin_figures,
)
from niah.cli.output import count, to_json, usage_error
from niah.cli.results import print_results, print_status_json
from niah.cli.run_options import run_payload
from niah.core.interfaces import RUN_COMPLETE
from niah.core.request.request_options import BATCH_QUEUE_HOURS, BATCH_RUN_HOURS, BATCH_TURNAROUND
from niah.core.request.spec import RUN_ID_PATTERN
from niah.core.results.summary import cost_summary
from niah.core.runs import RunRecord, stored_run

# How long --wait follows a run by default: an online run ends in minutes; a batch job
# may queue for up to 72 h and then run for up to 24 h (Google's limits, see
# niah.core.request.request_options.BATCH_TURNAROUND), so a batch run is followed for
# that whole window.
ONLINE_WAIT_SECONDS = 3600.0
BATCH_WAIT_SECONDS = float((BATCH_QUEUE_HOURS + BATCH_RUN_HOURS) * 3600)
TIMEOUT_HELP = (
    "seconds to follow the run (default: 1 h online; for a batch run "
    f"{BATCH_QUEUE_HOURS + BATCH_RUN_HOURS} h, Google's {BATCH_QUEUE_HOURS} h queue "
    f"and {BATCH_RUN_HOURS} h run)"
)


def wait_timeout(timeout: float | None, spec: Mapping[str, Any]) -> float:
    """The seconds to follow a run: the one asked for, else its kind's default."""
    if timeout is not None:
        return timeout
    return BATCH_WAIT_SECONDS if spec.get("execution") == "batch" else ONLINE_WAIT_SECONDS


def _wait(run_id: str, timeout: float) -> RunRecord:
    from tqdm import tqdm

    store = result_store()
    deadline = time.monotonic() + timeout

    def now() -> RunRecord:  # a run not (or no longer) stored reads as an empty one
        return stored_run(store, run_id) or RunRecord.from_document({}, run_id)

    run = now()
    with tqdm(total=run.total, unit="cell", desc=run_id) as bar:
        while True:
            run = now()
            finished = run.done + run.failed
            bar.update(finished - bar.n)
            if run.status == RUN_COMPLETE and run.report:
                return run
            if run.cancelled:  # stopped: nothing more will come
                return run
            if time.monotonic() > deadline:
                sys.exit(
                    f"niah: run {run_id} not complete after {timeout:.0f} s "
                    f"({finished} of {count(run.total, 'cell')}); check "
                    f"`niah status {run_id}`"
                )
            time.sleep(1)


def cmd_run(args: argparse.Namespace) -> None:
    """Submit a run (and follow it with --wait), or only estimate it (--estimate)."""
    payload = run_payload(args)
    if args.suite:  # one run per task of the suite (niah.cli.suite)
        from niah.cli.suite import run_suite

        sys.exit(
            run_suite(
                args,
                payload,
                submit=lambda body: submit(dispatcher_url(args), body),
                wait=lambda run_id, timeout: _wait(run_id, wait_timeout(timeout, payload)),
                store=result_store,
            )
        )
    if (args.margin or args.expected_score) and not args.estimate:
        usage_error("--margin and --expected_score go with --estimate (they submit nothing)")
    if args.expected_score and not args.margin:
        usage_error("--expected_score goes with --margin: say the ± points, e.g. --margin 5")
    if args.estimate:
        figures = estimate_figures(payload)
        if args.margin:
            figures["margin"] = margin_figures(args.margin, args.expected_score, figures)
        print(to_json(figures) if args.json else format_estimate(figures))
        return
    if args.resume:
        # The same spec names the same run: answered cells are kept, failed and
        # missing ones are published again.
        previous = result_store().get_run(args.resume)
        if previous is None:
            sys.exit(f"niah: no run {args.resume}")
        # Not its label: that names the run now (it may have been relabelled since), and
        # the stored spec holds the one it was created with. The request as stored (the
        # document's spec is the record's, dumped the same way).
        stored = RunRecord.from_document(previous).spec_fields
        payload = {key: value for key, value in stored.items() if key != "label"}
    else:
        check_request(payload)  # here, before any network: a mistake exits 2 at once
    url = dispatcher_url(args)
    body = submit(url + ("?resume=true" if args.resume else ""), payload)
    run_id = body["run_id"]
    for warning in body.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    timeout = wait_timeout(args.timeout, payload)
    if args.json:
        if args.wait:
            follow(run_id, timeout, as_json=True)
        print(to_json(body))
        return
    print(
        f"run {run_id}: {count(int(body['cells']), 'cell')}"
        + (" (already complete)" if body.get("already_complete") else "")
        + (f", {body['reused']} already answered" if body.get("reused") else "")
        + (
            f", {count(int(body['retried']), 'failed cell')} retried" if body.get("retried") else ""
        ),
        flush=True,  # the run ID is out before any wait (a script or test reads it)
    )
    bucket = str(body.get("report_prefix", "")).removeprefix("gs://").partition("/")[0]
    for line in where_to_look(run_id, None, project=body.get("project"), bucket=bucket or None):
        print(line, flush=True)
    if args.wait:
        if payload.get("execution") == "batch" and args.timeout is None:
            print(
                f"following a batch run for up to {timeout / 3600:.0f} h ({BATCH_TURNAROUND}); "
                f"Ctrl-C stops following, not the run",
                flush=True,
            )
        follow(run_id, timeout)


def follow(run_id: str, timeout: float, *, as_json: bool = False) -> None:
    """Follow a run to its report; Ctrl-C stops following, not the run."""
    try:
        run = _wait(run_id, timeout)
    except KeyboardInterrupt:
        print(
            f"\nniah: stopped following {run_id}; the run goes on. Follow it again with: "
            f"niah wait {run_id}",
            file=sys.stderr,
        )
        sys.exit(130)
    sys.exit(print_status_json(run) if as_json else print_results(run))


def cmd_wait(args: argparse.Namespace) -> None:
    """Follow a run already submitted, publishing nothing."""
    run = stored_run(result_store(), args.run_id)
    if run is None:
        sys.exit(f"niah: no run {args.run_id}; `niah run` prints the run ID")
    follow(args.run_id, wait_timeout(args.timeout, run.spec_fields))


def cmd_cancel(args: argparse.Namespace) -> None:
    """Cancel a run through the dispatcher: nothing more is asked; say what it spent."""
    if not RUN_ID_PATTERN.fullmatch(args.run_id):
        usage_error(f"cancel: {args.run_id!r} is not a run ID (run- and 16 hex digits, or latest)")
    url = dispatcher_url(args)
    body = submit(url.rstrip("/") + "/cancel", {"run_id": args.run_id})
    if args.json:
        print(to_json(body))
        return
    if body.get("unreadable"):
        print(
            f"run {args.run_id} cancelled, but this version cannot read it "
            f"({body['unreadable']}): what it answered and spent is not known, and its "
            "spend hold stays open until the run is readable again"
        )
        return
    cost = cost_summary(body.get("totals") or {})["cost_usd"]
    spent = "cost unknown (a model without a known price)" if cost is None else f"${cost:.4f}"
    print(
        f"run {args.run_id} "
        + ("cancelled" if body.get("outcome") == "cancelled" else "was already cancelled")
        + f": {int(body.get('answered', 0))} answered + {int(body.get('failed', 0))} failed of "
        f"{count(int(body.get('total', 0)), 'cell')}, {spent} spent so far. Calls under way "
        "finish and are stored; no other cell is asked.\n"
        f"Resume it with: niah run --resume {args.run_id}"
    )
