"""``niah sentinel``: list the sentinels, fire one now, and read one's trend.

A sentinel is defined where it is deployed (infra's ``sentinels`` variable; the local
stack's sentinels file) and fired by Cloud Scheduler; ``niah sentinel run NAME`` fires
it now, through the same route (``niah.service.sentinel.firing``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from niah.cli.backend import dispatcher_url, result_store, submit
from niah.cli.output import to_json
from niah.cli.run import follow, wait_timeout
from niah.core.results.measures import basis_of
from niah.core.results.uncertainty import with_interval
from niah.core.runs import listed_runs, stored_run

# What the listing and the trend read of a sentinel's runs (a projection).
TREND_FIELDS = (
    "status",
    "spec.scheduled_at",
    "measures.mean",
    "measures.mean_interval",
    "measures.interval_basis",
)
CHECK_FIELDS = (
    "sentinel_check.flagged",
    "sentinel_check.text",
    "sentinel_check.reasons",
    "sentinel_check.watch",
)


def cmd_sentinel(args: argparse.Namespace) -> None:
    """``niah sentinel list | run NAME | show NAME``."""
    {"list": _list, "run": _run, "show": _show}[args.action](args)


def _name(args: argparse.Namespace) -> str:
    if not args.name:
        sys.exit(f"niah: sentinel {args.action} needs the sentinel's name (niah sentinel list)")
    return str(args.name)


def _run(args: argparse.Namespace) -> None:
    """Fire the sentinel now: its stored request, named by this second."""
    name = _name(args)
    # Sent with the request: a retry of this command's POST names the same run.
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    url = dispatcher_url(args).rstrip("/") + "/sentinel"
    body = submit(url, {"sentinel": name, "scheduled_at": now})
    run_id = str(body["run_id"])
    if args.json and not args.wait:
        print(to_json(body))
        return
    if not args.json:
        print(f"sentinel {name}: run {run_id} for {now}", flush=True)
    if args.wait:
        run = stored_run(result_store(), run_id)
        spec = run.spec_fields if run is not None else {}
        follow(run_id, wait_timeout(args.timeout, spec), as_json=args.json)


def trend_rows(name: str) -> list[dict[str, Any]]:
    """The sentinel's runs, oldest first: when, status, mean, and what its check found."""
    runs = listed_runs(result_store().sentinel_runs(name, (*TREND_FIELDS, *CHECK_FIELDS)))
    rows = []
    for run in sorted(runs, key=lambda r: r.scheduled_at or ""):
        measures = run.figures.measures or {}
        check, watch = run.sentinel_check or {}, run.watch
        rows.append(
            {
                "run_id": run.run_id,
                "scheduled_at": run.scheduled_at,
                "status": run.status or None,
                "mean": measures.get("mean"),
                "mean_interval": measures.get("mean_interval"),
                "mean_basis": basis_of(measures, "mean"),
                # What the sentinel's test weighed: the share of every sample asked.
                "share": watch.get("share"),
                "samples": watch.get("samples"),
                "baseline": (watch.get("compared_with") or {}).get("share"),
                "flagged": bool(check.get("flagged")),
                "check": check.get("text") or "",
            }
        )
    return rows


def _show(args: argparse.Namespace) -> None:
    """The sentinel's trend: each run's mean with its interval, and its check."""
    name = _name(args)
    if result_store().get_sentinel(name) is None:
        sys.exit(f"niah: no sentinel named {name!r}; `niah sentinel list` shows those defined")
    rows = trend_rows(name)
    if args.json:
        print(to_json({"sentinel": name, "runs": rows}))
        return
    print(f"sentinel {name}: {len(rows)} run{'s' * (len(rows) != 1)}, oldest first")
    for row in rows:
        mean = (
            with_interval(row["mean"], row["mean_interval"], basis=row["mean_basis"])
            if row["mean"] is not None
            else "no score yet"
        )
        flag = "FLAGGED " if row["flagged"] else ""
        if row["share"] is not None:
            baseline = f", baseline {row['baseline']:g} %" if row["baseline"] is not None else ""
            mean = f"score {row['share']:g} % of {row['samples']:,} asked{baseline}; mean {mean}"
        print(f"  {row['scheduled_at']}  {row['run_id']}  {row['status']}  {mean}")
        if row["check"]:
            print(f"    {flag}{row['check']}")


def _list(args: argparse.Namespace) -> None:
    """Every sentinel: its schedule, its runs, and its latest check."""
    listed = []
    for sentinel in result_store().list_sentinels():
        rows = trend_rows(str(sentinel["name"]))
        checked = [row for row in rows if row["check"]]
        listed.append(
            {
                "name": sentinel["name"],
                "schedule": sentinel.get("schedule"),
                "time_zone": sentinel.get("time_zone"),
                "runs": len(rows),
                "flagged": sum(row["flagged"] for row in rows),
                "latest": checked[-1] if checked else None,
            }
        )
    if args.json:
        print(to_json({"sentinels": listed}))
        return
    if not listed:
        print(
            "no sentinels: define them in infra's `sentinels` variable "
            "(or the local stack's sentinels file, docs/sentinels.md)"
        )
        return
    for item in listed:
        print(
            f"{item['name']}: {item['schedule']} ({item['time_zone']}), "
            f"{item['runs']} run{'s' * (item['runs'] != 1)}, {item['flagged']} flagged"
        )
        if item["latest"]:
            latest = item["latest"]
            flag = "FLAGGED " if latest["flagged"] else ""
            print(f"  latest {latest['scheduled_at']}: {flag}{latest['check']}")
