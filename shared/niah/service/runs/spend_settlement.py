"""Every hold ends settled: at a run's end, by the sweep, or by an operator.

A run's holds (``niah.core.money.holds``) are settled to what its calls cost when its
report is written or fails and when it is cancelled, each path calling ``settle_spent``
(settling twice changes nothing; a later settle adds only spend that came since). What
a crash or a lost write leaves open the sweep settles (``settle_ended``): a hold whose
run is gone (a dispatcher that failed to store it: a retried POST finds its hold taken,
so it is never given back while a retry may still store the run) or ended. An
operator may settle any hold by hand (``niah limits release RUN_ID``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from niah.core.interfaces import (
    RUN_CANCELLED,
    RUN_COMPLETE,
    RUN_REPORT_FAILED,
    ResultStore,
    SpendLedger,
)
from niah.core.money.pricing import spend_summary
from niah.core.runs import RunRecord, stored_run
from niah.errors import StoredRunError
from niah.logs import log

# A run is ended, for its holds, in these states: nothing more is asked of the model
# until a re-ask, which takes a hold of its own.
ENDED = (RUN_COMPLETE, RUN_CANCELLED, RUN_REPORT_FAILED)


def settle_run_spend(run_id: str, spent_usd: float, *, ledger: SpendLedger) -> float | None:
    """Replace the run's holds by ``spent_usd``; the windows' change (None: nothing open)."""
    change = ledger.settle(run_id, spent_usd)
    if change is not None:
        log("run spend settled", run_id=run_id, spent_usd=spent_usd, change_usd=change)
    return change


def settled_usd(spend: Mapping[str, Any]) -> float:
    """What a run's spend summary (``spend_summary``) settles its holds to.

    Its ``usd``; where a call is unpriced (a self-hosted model, a price the catalog
    lacks), the priced part: answered calls' known cost and cut-off calls' estimate. A
    hold kept whole instead would never end, and would count the run against its
    caller's running runs for ever.
    """
    if spend.get("usd") is not None:
        return float(spend["usd"])
    return float(spend.get("answered_usd") or 0.0) + float(spend.get("estimated_usd") or 0.0)


def settle_spent(
    run_id: str, *, store: ResultStore, ledger: SpendLedger, run: RunRecord | None = None
) -> float | None:
    """Settle the run's holds to what its calls cost; the windows' change (None: none open).

    ``run``: as read (else read here). A run that is gone (never stored, or deleted)
    spent nothing the ledger can know of.
    """
    run = run if run is not None else stored_run(store, run_id, counts=False)
    if run is None:
        return settle_run_spend(run_id, 0.0, ledger=ledger)
    spend = spend_summary(store.list_calls(run_id), run.model, run.tier)
    return settle_run_spend(run_id, settled_usd(spend), ledger=ledger)


def settle_ended(
    *, store: ResultStore, ledger: SpendLedger, older_than_seconds: float
) -> dict[str, int]:
    """Settle every open hold whose run is gone or ended, held longer than the grace.

    The grace covers a dispatch under way (its hold is taken just before its run is
    stored, and a re-ask's just before its cells are reset). A run still running keeps
    its holds (its report settles them), and so does a run this version cannot read:
    what its calls cost needs its request. An ERROR line names it each sweep.
    """
    now = dt.datetime.now(dt.UTC)
    tally = {"holds_open": 0, "holds_settled": 0}
    for entry in ledger.open_entries():
        tally["holds_open"] += 1
        held_at = entry.get("held_at")
        if isinstance(held_at, dt.datetime) and (now - held_at).total_seconds() < (
            older_than_seconds
        ):
            continue
        run_id = str(entry["run_id"])
        try:
            run = stored_run(store, run_id, counts=False)
        except StoredRunError as error:  # what it spent cannot be read: its hold stands
            log("sweep kept the hold of a run this version cannot read", severity="ERROR",
                run_id=run_id, kind=error.kind, problem=error.problem)  # fmt: skip
            continue
        if run is not None and run.status not in ENDED:
            continue
        if settle_spent(run_id, store=store, ledger=ledger, run=run) is not None:
            tally["holds_settled"] += 1
            status = run.status if run is not None else None
            log("open hold settled by the sweep", run_id=run_id, status=status)
    return tally
