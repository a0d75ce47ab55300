"""Admission: whether a run may spend, who may change it, and the kill switch.

- **Ceilings.** A new run (and a resume or retry that asks cells again) reserves its
  worst case (``niah.core.money.spend.worst_case``) in the ledger's windows: the UTC day, the
  UTC month and, where a per-caller ceiling is set, the caller's day. One transaction
  reads every window and adds to all or none, so two POSTs at once cannot both take the
  last room. When the run's report is written (or it is cancelled) its reservation is
  replaced by what its calls cost (``settle_run_spend``): a window holds what finished
  runs spent plus the worst case of the runs still running. A run's spend counts in the
  day and month it was admitted, whenever its calls are billed.
- **Callers.** A run records who started it (``created_by``); only they or an operator
  may cancel, resume or relabel it (``niah.core.request.callers``).
- **Kill switch.** A Firestore document, set by a Cloud Billing budget alert
  (``handle_budget_alert``) or by hand, lifted by an operator (``niah killswitch
  lift``). While it is on, nothing is admitted. Each dispatcher instance reads it at
  most once every ``NIAH_KILL_SWITCH_CACHE_SECONDS``.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from typing import Any

from niah.core.interfaces import RUN_CANCELLED, RUN_COMPLETE, SpendLedger
from niah.core.money.spend import (
    WorstCase,
    caller_window,
    day_window,
    month_window,
    read_budget_alert,
    worst_case,
)
from niah.core.prompts.answer_budget import CallBudget
from niah.core.request.callers import check_may_change
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import ForbiddenError, SpendRefusedError
from niah.logs import log
from niah.settings import get_settings

_switch_lock = threading.Lock()
# The last read of the kill switch: (monotonic time, document or None).
_switch_read: tuple[float, dict[str, Any] | None] | None = None


def kill_switch_state(ledger: SpendLedger) -> dict[str, Any] | None:
    """The kill switch if on, read at most once per ``kill_switch_cache_seconds``."""
    global _switch_read
    ttl = get_settings().kill_switch_cache_seconds
    with _switch_lock:
        if _switch_read is not None and time.monotonic() - _switch_read[0] < ttl:
            return _switch_read[1]
    state = ledger.kill_switch()
    with _switch_lock:
        _switch_read = (time.monotonic(), state)
    return state


def forget_kill_switch() -> None:
    """Drop this process's cached read (after setting or lifting the switch here)."""
    global _switch_read
    with _switch_lock:
        _switch_read = None


def check_kill_switch(ledger: SpendLedger) -> None:
    """Refuse (429) while the kill switch is on, saying why and how it is lifted."""
    state = kill_switch_state(ledger)
    if state is None:
        return
    raise SpendRefusedError(
        "kill_switch",
        f"the service's kill switch is on ({state.get('reason', 'no reason recorded')}, "
        f"since {state.get('set_at', '?')}): no run is admitted until an operator lifts "
        "it with `niah killswitch lift` (docs/limits.md)",
    )


def check_owner(
    run: dict[str, Any], run_id: str, spec: RunRequest, caller: str, *, resume: bool
) -> None:
    """Refuse (403) a re-POST by another caller that would resume, relabel or retry the run.

    A repeat that changes nothing (the same request, its answer the run's state) is
    anyone's: identical requests name the same run.
    """
    operators = get_settings().operators
    if resume:
        check_may_change(run, run_id, caller, operators, "resume")
    if spec.label is not None and spec.label != run.get("label"):
        check_may_change(run, run_id, caller, operators, "relabel")
    if run.get("status") == RUN_COMPLETE and int(run.get("failed", 0)) > 0:
        check_may_change(run, run_id, caller, operators, "retry the failed cells of")


def cells_to_ask(run: dict[str, Any], *, resume: bool) -> int:
    """How many cells a re-POST of an existing run may have asked again (at most)."""
    status, failed = run.get("status"), int(run.get("failed", 0))
    if status == RUN_CANCELLED:
        return int(run.get("total", 0)) - int(run.get("done", 0)) if resume else 0
    if failed and (status == RUN_COMPLETE or resume):
        return failed
    return 0


def admit(
    run_id: str,
    spec: RunRequest,
    cells: list[Cell],
    budget: CallBudget,
    *,
    ledger: SpendLedger,
    caller: str,
    new_run: bool,
    running: list[dict[str, Any]] | None = None,
    now: dt.datetime | None = None,
) -> WorstCase:
    """Reserve ``cells``' worst case against the ceilings, or refuse (429) naming the room.

    ``new_run``: the caller's limit on running runs applies (``running``: the service's
    running runs, read only when that limit is set).
    """
    settings = get_settings()
    check_kill_switch(ledger)
    if new_run and settings.max_running_runs_per_caller:
        mine = [r for r in running or [] if r.get("created_by") == caller]
        if len(mine) >= settings.max_running_runs_per_caller:
            raise SpendRefusedError(
                "max_running_runs_per_caller",
                f"{caller} has {len(mine)} runs running, the most one caller may "
                f"(NIAH_MAX_RUNNING_RUNS_PER_CALLER={settings.max_running_runs_per_caller}); "
                "wait for one to finish or cancel one (niah cancel RUN_ID)",
            )
    now = now or dt.datetime.now(dt.UTC)
    worst = worst_case(spec, cells, budget, calls_per_cell=settings.max_cell_failures, when=now)
    if worst.usd is None:
        if spec.provider() == "gemini":
            raise SpendRefusedError(
                "model_name",
                f"no price for {', '.join(worst.unpriced)}: its spend cannot be held "
                "against the ceilings; set its price in NIAH_PRICE_TABLE",
            )
        usd = 0.0  # a self-hosted endpoint: no per-token bill to bound
    else:
        usd = worst.usd
    ceilings = _ceilings(now, caller)
    reservation = ledger.reserve(run_id, usd, ceilings, caller=caller)
    if not reservation.admitted and reservation.refused is not None:
        raise _refusal(reservation.refused, usd, worst, ceilings, reservation.spent)
    log(
        "run admitted",
        run_id=run_id,
        caller=caller,
        worst_case_usd=round(usd, 6),
        held=reservation.held,
        spent=reservation.spent,
    )
    return worst


# Each window's ceiling setting, by the window's prefix.
_SETTING = {
    "day": "NIAH_DAILY_SPEND_CEILING_USD",
    "month": "NIAH_MONTHLY_SPEND_CEILING_USD",
    "caller": "NIAH_CALLER_DAILY_SPEND_CEILING_USD",
}


def _ceilings(now: dt.datetime, caller: str) -> dict[str, float | None]:
    """Every window the run counts in, with its ceiling (None: counted, not limited).

    The caller's day is always counted (spend per caller), limited only when set.
    """
    settings = get_settings()
    return {
        day_window(now): settings.daily_spend_ceiling_usd or None,
        month_window(now): settings.monthly_spend_ceiling_usd or None,
        caller_window(now, caller): settings.caller_daily_spend_ceiling_usd or None,
    }


def _refusal(
    window: str,
    usd: float,
    worst: WorstCase,
    ceilings: dict[str, float | None],
    spent: dict[str, float],
) -> SpendRefusedError:
    kind = window.split("-", 1)[0]
    ceiling = float(ceilings[window] or 0.0)
    room = max(0.0, ceiling - spent.get(window, 0.0))
    period = {"day": "today (UTC)", "month": "this month (UTC)", "caller": "your share today"}
    resets = {"day": "tomorrow 00:00 UTC", "month": "the 1st, 00:00 UTC", "caller": "tomorrow"}
    return SpendRefusedError(
        "context_lengths",
        f"the run may cost up to ${usd:,.2f} ({worst.cells} cells x {worst.calls_per_cell} "
        f"calls at most, full prompts and output budgets, judge included) but "
        f"${room:,.2f} is left of the ${ceiling:,.2f} ceiling for {period[kind]}; ask for "
        f"fewer or shorter cells, wait until {resets[kind]}, or raise {_SETTING[kind]}",
    )


def settle_run_spend(run_id: str, spent_usd: float | None, *, ledger: SpendLedger) -> None:
    """Replace the run's reservation by ``spent_usd``; kept whole when it is unknown."""
    if spent_usd is None:
        log("spend not settled: a call is unpriced", severity="WARNING", run_id=run_id)
        return
    change = ledger.settle(run_id, spent_usd)
    if change is not None:
        log("run spend settled", run_id=run_id, spent_usd=spent_usd, change_usd=change)


def handle_budget_alert(data: Any, *, ledger: SpendLedger, caller: str) -> bool:
    """Trip the kill switch if a budget notification says the budget is spent.

    Only the push subscription's account (``NIAH_BUDGET_ALERT_PUSHER``) or an operator
    may send one. Returns whether it tripped; a notification under the threshold, or
    with no amounts, leaves the switch as it is (it is never lifted from here).
    """
    settings = get_settings()
    senders = {name.lower() for name in (settings.budget_alert_pusher, *settings.operators) if name}
    if caller not in senders:
        raise ForbiddenError("Authorization", f"{caller} may not send budget alerts")
    alert = read_budget_alert(data, trip_share=settings.budget_trip_share)
    if alert is None or not alert.trips:
        return False
    ledger.set_kill_switch(
        {
            "reason": (
                f"budget {alert.budget_name!r} at {alert.cost_usd:g} of "
                f"{alert.budget_usd:g} {alert.currency}"
            ).strip(),
            "set_by": caller,
            "set_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "cost_amount": alert.cost_usd,
            "budget_amount": alert.budget_usd,
        }
    )
    forget_kill_switch()
    log("kill switch tripped by a budget alert", severity="WARNING", caller=caller)
    return True


def admit_request(
    run_id: str,
    spec: RunRequest,
    cells: list[Cell],
    budget: CallBudget,
    existing: dict[str, Any] | None,
    *,
    running: Callable[[], list[dict[str, Any]]],
    ledger: SpendLedger | None,
    caller: str,
    resume: bool,
) -> dict[str, Any]:
    """Check a run request's caller and money; the fields a new run's record adds.

    A new run reserves all its cells; a re-POST that asks cells again (a resume, a retry
    of failed cells) reserves its most expensive cells that many, and only when the
    run's reservation was settled (a reservation still held covers them). Another
    caller's re-POST may not resume, relabel or retry (``check_owner``).
    """
    if existing is not None:
        check_owner(existing, run_id, spec, caller, resume=resume)
    fields: dict[str, Any] = {"created_by": caller}
    asked = cells if existing is None else _longest(cells, cells_to_ask(existing, resume=resume))
    if ledger is None or not asked:
        return fields
    new_run = existing is None or existing.get("status") == RUN_CANCELLED
    limited = get_settings().max_running_runs_per_caller and new_run
    worst = admit(
        run_id,
        spec,
        asked,
        budget,
        ledger=ledger,
        caller=caller,
        new_run=new_run,
        running=running() if limited else None,
    )
    return fields | {"worst_case": worst.as_json()}


def _longest(cells: list[Cell], count: int) -> list[Cell]:
    """The ``count`` cells of the longest prompts: the most a re-ask of that many costs."""
    return sorted(cells, key=lambda cell: cell.context_length, reverse=True)[:count]
