"""``niah killswitch``: see, trip or lift the kill switch that stops new runs.

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
