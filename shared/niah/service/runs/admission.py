"""Admission: whether a run may spend, who may change it, and the kill switch.

- **Ceilings.** A new run (and a resume or retry that asks cells again) reserves its
  worst case (``niah.core.money.spend.worst_case``) in the ledger's windows: the UTC day, the
  UTC month and, where a per-caller ceiling is set, the caller's day. One transaction
  reads every window and adds to all or none, so two POSTs at once cannot both take the
  last room. When the run's report is written (or it is cancelled) its reservation is
  replaced by what its calls cost (``niah.service.runs.spend_settlement``): a window
  holds what finished runs spent plus the worst case of the runs still running. A run's
  spend counts in the day and month it was admitted, whenever its calls are billed.
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
from dataclasses import dataclass
from typing import Any

from niah.core.interfaces import (
    KILL_SWITCH_WINDOW,
    OPEN_RUNS_LIMIT,
    RUN_CANCELLED,
    RUN_COMPLETE,
    RUN_REPORT_FAILED,
    Reservation,
    SpendLedger,
)
from niah.core.money.certify_spend import run_worst_case
from niah.core.money.holds import ADMIT, reask_hold
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
from niah.core.results.certify_run import certify_cells
from niah.core.runs import RunRecord
from niah.errors import ForbiddenError, SpendRefusedError
from niah.logs import log
from niah.settings import get_settings

# The run document's count of re-asks taken (each a hold of its own, ``reask_hold``).
REASKS = "reasks"
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


def check_owner(run: RunRecord, spec: RunRequest, caller: str, *, resume: bool) -> None:
    """Refuse (403) a re-POST by another caller that would resume, relabel or retry the run.

    A repeat that changes nothing (the same request, its answer the run's state) is
    anyone's: identical requests name the same run.
    """
    operators = get_settings().operators
    owner, run_id = run.created_by, run.run_id
    if resume:
        check_may_change(owner, run_id, caller, operators, "resume")
    if spec.label is not None and spec.label != run.label:
        check_may_change(owner, run_id, caller, operators, "relabel")
    if cells_to_ask(run, resume=False):
        check_may_change(owner, run_id, caller, operators, "retry the failed cells of")


def cells_to_ask(run: RunRecord, *, resume: bool) -> int:
    """How many cells a re-POST of an existing run may have asked again (at most).

    As ``niah.service.runs.dispatch`` re-asks: a cancelled run's missing cells on resume; the
    failed cells of a finished run (its report written or failed), or of a running one
    on resume; never a certify run's failed samples (each was replaced by a new one).
    """
    if run.status == RUN_CANCELLED:
        return run.total - run.done if resume else 0
    if run.is_certify:
        return 0
    if run.failed and (run.status in (RUN_COMPLETE, RUN_REPORT_FAILED) or resume):
        return run.failed
    return 0


def admit(
    run_id: str,
    spec: RunRequest,
    worst: WorstCase,
    *,
    ledger: SpendLedger,
    caller: str,
    new_run: bool,
    now: dt.datetime | None = None,
    hold: str = ADMIT,
) -> bool:
    """Hold ``worst`` against the ceilings, or refuse (429) naming the room.

    ``new_run``: the caller's limit on runs holding spend applies (checked in the hold's
    transaction, so two POSTs at once cannot both take the caller's last run). Whether
    the hold was taken now (False: the run took it before, so this request holds
    nothing more).
    """
    settings = get_settings()
    check_kill_switch(ledger)
    usd = _held_usd(spec, worst)
    ceilings = _hold_ceilings(run_id, now or dt.datetime.now(dt.UTC), caller, ledger)
    reservation = ledger.reserve(
        run_id,
        usd,
        ceilings,
        caller=caller,
        hold=hold,
        max_open_runs=(settings.max_running_runs_per_caller or None) if new_run else None,
    )
    if not reservation.admitted and reservation.refused is not None:
        raise _refusal(reservation, usd, worst, ceilings, caller, ledger)
    log(
        "run admitted",
        run_id=run_id,
        caller=caller,
        hold=hold,
        worst_case_usd=round(usd, 6),
        held=reservation.held,
        spent=reservation.spent,
    )
    return not reservation.held


def _held_usd(spec: RunRequest, worst: WorstCase) -> float:
    """The dollars ``worst`` holds; an unpriced Gemini model is refused (400-free 429)."""
    if worst.usd is not None:
        return worst.usd
    if spec.provider() == "gemini":
        raise SpendRefusedError(
            "model_name",
            f"no price for {', '.join(worst.unpriced)}: its spend cannot be held "
            "against the ceilings; set its price in NIAH_PRICE_TABLE",
        )
    return 0.0  # a self-hosted endpoint: no per-token bill to bound


def hold_more(
    run_id: str,
    spec: RunRequest,
    worst: WorstCase,
    *,
    covered: float,
    hold: str,
    ledger: SpendLedger,
    caller: str,
) -> float:
    """Hold what ``worst`` adds beyond ``covered`` for a running run, or refuse (429).

    A certify round's hold: counted in the windows the run was admitted in, against
    their ceilings now, in one transaction with the kill switch (never this instance's
    cached read: a round after the switch tripped is refused, even one needing nothing
    more). What the run then holds in all.
    """
    usd = _held_usd(spec, worst)
    extra = max(0.0, usd - covered)
    ceilings = _hold_ceilings(run_id, dt.datetime.now(dt.UTC), caller, ledger)
    reservation = ledger.reserve(run_id, extra, ceilings, caller=caller, hold=hold)
    if not reservation.admitted and reservation.refused is not None:
        raise _refusal(reservation, extra, worst, ceilings, caller, ledger)
    log("spend held", run_id=run_id, hold=hold, usd=round(extra, 6), held=reservation.held)
    return max(covered, usd)


# Each window's ceiling setting, by the window's prefix.
_SETTING = {
    "day": "NIAH_DAILY_SPEND_CEILING_USD",
    "month": "NIAH_MONTHLY_SPEND_CEILING_USD",
    "caller": "NIAH_CALLER_DAILY_SPEND_CEILING_USD",
}


def _hold_ceilings(
    run_id: str, now: dt.datetime, caller: str, ledger: SpendLedger
) -> dict[str, float | None]:
    """The windows a hold of the run counts in, with their ceilings.

    A run's first hold counts in the day, month and caller's day it was admitted; every
    later hold (a re-ask, a round) in the same windows, whenever it is taken.
    """
    entry = ledger.entry(run_id) or {}
    windows = entry.get("windows") or list(_ceilings(now, caller))
    return {window: _ceiling_of(window) for window in windows}


def _ceilings(now: dt.datetime, caller: str) -> dict[str, float | None]:
    """Every window the run counts in, with its ceiling (None: counted, not limited).

    The caller's day is always counted (spend per caller), limited only when set.
    """
    windows = (day_window(now), month_window(now), caller_window(now, caller))
    return {window: _ceiling_of(window) for window in windows}


def _ceiling_of(window: str) -> float | None:
    """A window's ceiling by its kind (its name's prefix); None: counted, not limited."""
    settings = get_settings()
    return {
        "day": settings.daily_spend_ceiling_usd,
        "month": settings.monthly_spend_ceiling_usd,
        "caller": settings.caller_daily_spend_ceiling_usd,
    }[window.split("-", 1)[0]] or None


def _refusal(
    reservation: Reservation,
    usd: float,
    worst: WorstCase,
    ceilings: dict[str, float | None],
    caller: str,
    ledger: SpendLedger,
) -> SpendRefusedError:
    window, spent = str(reservation.refused), reservation.spent
    if window == KILL_SWITCH_WINDOW:  # tripped since this instance's cached read
        forget_kill_switch()
        check_kill_switch(ledger)
        return SpendRefusedError("kill_switch", "the service's kill switch is on")
    if window == OPEN_RUNS_LIMIT:
        most = get_settings().max_running_runs_per_caller
        return SpendRefusedError(
            OPEN_RUNS_LIMIT,
            f"{caller} has {reservation.open_runs} runs running, the most one caller may "
            f"(NIAH_MAX_RUNNING_RUNS_PER_CALLER={most}); wait for one to finish or cancel "
            "one (niah cancel RUN_ID)",
        )
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


@dataclass(frozen=True)
class Admitted:
    """What admission gave a request: who asked, the spend held, and the hold.

    ``worst_case``: what a new run's admission held (None: nothing asked, or no ledger);
    ``hold``: the ledger hold that covers what the request asks (None likewise).
    """

    created_by: str
    worst_case: dict[str, Any] | None = None
    hold: str | None = None


def admit_request(
    record: RunRecord,
    cells: list[Cell],
    budget: CallBudget,
    existing: RunRecord | None,
    *,
    ledger: SpendLedger | None,
    caller: str,
    resume: bool,
) -> Admitted:
    """Check a run request's caller and money, for the new run ``record`` or ``existing``.

    A new run holds all its cells (a certify run: its budget's worst case,
    ``certify_worst_case``); a re-POST that asks cells again (a resume, a retry of
    failed cells) holds its most expensive cells that many, under a hold of its own
    (``reask-N``, N the run's re-asks so far: a client's retry of the same request
    holds nothing more, the next re-ask does). Another caller's re-POST may not resume,
    relabel or retry (``check_owner``).
    """
    spec, run_id = record.spec, record.run_id
    if existing is not None:
        check_owner(existing, spec, caller, resume=resume)
    asked = (
        cells
        if existing is None
        else _longest(_asked_of(existing, cells), cells_to_ask(existing, resume=resume))
    )
    if ledger is None or not asked:
        return Admitted(caller)
    now = dt.datetime.now(dt.UTC)
    worst = (
        run_worst_case(spec, asked, budget, now=now)
        if existing is None
        else worst_case(
            spec, asked, budget, calls_per_cell=get_settings().max_cell_failures, when=now
        )
    )
    new_run = existing is None or existing.cancelled
    hold = ADMIT if existing is None else reask_hold(existing.reasks)
    admit(
        run_id,
        spec,
        worst,
        ledger=ledger,
        caller=caller,
        new_run=new_run,
        now=now,
        hold=hold,
    )
    return Admitted(caller, worst.as_json(), hold)


def _asked_of(run: RunRecord, cells: list[Cell]) -> list[Cell]:
    """The cells a re-ask of ``run`` picks from: a certify run's planned so far, else ``cells``.

    A certify run grows round by round past its request's grid.
    """
    return certify_cells(run.spec, run.certify_samples) if run.is_certify else cells


def _longest(cells: list[Cell], count: int) -> list[Cell]:
    """The ``count`` cells of the longest prompts: the most a re-ask of that many costs."""
    return sorted(cells, key=lambda cell: cell.context_length, reverse=True)[:count]
