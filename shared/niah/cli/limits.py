"""``niah killswitch`` and ``niah limits``: the kill switch, the spend windows and holds.

``niah limits`` shows today's and this month's windows against their ceilings and every
open hold (which run, whose, how much, since when); ``niah limits release RUN_ID``
settles a run's open holds to what its calls cost (an operator's hand on a stuck one;
the sweep does the same for runs gone or ended).

An operator's command: it writes Firestore directly (the account needs
``roles/datastore.user`` on the project), not through the dispatcher, so the switch can
be lifted whatever the dispatcher's state. The same as setting ``on`` of the
``control/kill_switch`` document by hand. Dispatchers trust their last read for
``NIAH_KILL_SWITCH_CACHE_SECONDS`` (5 s), so a change takes that long to reach them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import json
import sys
from typing import Any

from niah.cli.backend import result_store


def cmd_killswitch(args: argparse.Namespace) -> None:
    """Print the switch's state; ``trip`` turns it on, ``lift`` off."""
    from niah.cloud.spend_ledger import FirestoreSpendLedger

    result_store()  # exits with a hint if the emulator does not answer
    ledger = FirestoreSpendLedger()
    if args.action == "trip":
        ledger.set_kill_switch(
            {
                "reason": args.reason or "tripped by hand",
                "set_by": getpass.getuser(),
                "set_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
        )
    elif args.action == "lift":
        ledger.set_kill_switch(None)
    state = ledger.kill_switch()
    if args.json:
        print(json.dumps({"on": state is not None, **(state or {})}, default=str))
    elif state is None:
        print("kill switch: off (runs are admitted within the spend ceilings)")
    else:
        print(
            f"kill switch: ON since {state.get('set_at', '?')} ({state.get('reason', '')}); "
            "no run is admitted. Lift it: niah killswitch lift"
        )


def cmd_limits(args: argparse.Namespace) -> None:
    """Print the windows and open holds; ``release RUN_ID`` settles that run's holds."""
    from niah.cloud.spend_ledger import FirestoreSpendLedger
    from niah.core.money.spend import day_window, month_window
    from niah.service.runs.spend_settlement import settle_spent
    from niah.settings import get_settings

    store = result_store()
    ledger = FirestoreSpendLedger()
    if args.action == "release":
        if not args.run_id:
            sys.exit("niah limits release: name the run (niah limits release RUN_ID)")
        before = ledger.entry(args.run_id)
        if before is None:
            sys.exit(f"niah limits release: {args.run_id} holds nothing and never did")
        settle_spent(args.run_id, store=store, ledger=ledger)
        after = ledger.entry(args.run_id) or {}
        print(
            f"{args.run_id}: held ${float(before.get('reserved', 0.0)):,.4f}; settled to "
            f"${float(after.get('settled_usd', 0.0)):,.4f} (what its calls cost)"
            if after.get("settled")
            else f"{args.run_id}: not settled (a call is unpriced); its hold stands"
        )
        return
    settings = get_settings()
    now = dt.datetime.now(dt.UTC)
    windows = [
        ("today (UTC)", day_window(now), settings.daily_spend_ceiling_usd),
        ("this month (UTC)", month_window(now), settings.monthly_spend_ceiling_usd),
    ]
    window_rows: list[dict[str, Any]] = [
        {"window": name, "usd": ledger.window_spend(name), "ceiling_usd": ceiling or None}
        for _, name, ceiling in windows
    ]
    hold_rows: list[dict[str, Any]] = [
        {
            "run_id": entry["run_id"],
            "caller": entry.get("caller"),
            "reserved_usd": float(entry.get("reserved", 0.0)),
            "holds": sorted(k for k, h in (entry.get("holds") or {}).items() if h.get("open")),
            "held_at": entry.get("held_at"),
        }
        for entry in ledger.open_entries()
    ]
    switch_on = ledger.kill_switch() is not None
    if args.json:
        report = {"windows": window_rows, "holds": hold_rows, "kill_switch": switch_on}
        print(json.dumps(report, default=str))
        return
    for (label, _, _), window in zip(windows, window_rows, strict=True):
        ceiling = window["ceiling_usd"]
        limit = f" of ${ceiling:,.2f}" if ceiling else " (no ceiling)"
        print(f"{label}: ${window['usd']:,.4f}{limit} (spent by finished runs + held by open)")
    if settings.caller_daily_spend_ceiling_usd:
        print(f"each caller's day: ${settings.caller_daily_spend_ceiling_usd:,.2f} at most")
    print(f"kill switch: {'ON' if switch_on else 'off'}")
    if not hold_rows:
        print("open holds: none")
    for hold in hold_rows:
        print(
            f"  {hold['run_id']}  ${hold['reserved_usd']:,.4f}  {hold['caller']}  "
            f"{', '.join(hold['holds'])}  since {hold['held_at']}"
        )
