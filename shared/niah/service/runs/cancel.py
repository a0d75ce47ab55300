"""Cancel: stop a run from spending; what it spent and answered until then.

The run is marked cancelled in one guarded transition (``ResultStore.cancel_run``).
From then on nothing publishes its cells: the dispatcher answers a repeated request
without publishing, the sweep lists only running runs, a primer's release and the
dead-letter handler check the status. A worker reads the run document on every
delivery already; it acknowledges a cancelled run's cell without calling the model.
Calls already under way finish and are stored (they are paid for). ``niah run
--resume`` sets the run running again and publishes its missing cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from niah.core.interfaces import (
    RUN_CANCELLED,
    CancelOutcome,
    Publisher,
    ResultStore,
    SpendLedger,
)
from niah.core.request.callers import LOCAL_CALLER, check_may_change
from niah.core.request.spec import RUN_ID_PATTERN
from niah.core.runs import run_owner, stored_run
from niah.errors import RequestError, StoredRunError
from niah.logs import log
from niah.service.messages import BATCH_POLL, batch_message
from niah.service.runs.spend_settlement import settle_spent
from niah.settings import get_settings


@dataclass(frozen=True)
class Cancelled:
    """The outcome of a cancel and the run's figures at that moment."""

    run_id: str
    outcome: CancelOutcome
    status: str | None
    total: int
    answered: int
    failed: int
    # The run's token and cost totals as counted (``niah.core.results.summary.cost_summary``
    # reads them; not here, so the dispatcher does not load the pricing tables).
    totals: dict[str, float]
    # Why this version cannot read the run (``StoredRunError``): cancelled all the same,
    # but its figures are not known and its spend hold is not settled.
    unreadable: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The HTTP answer's body."""
        body = {
            "run_id": self.run_id,
            "outcome": self.outcome,
            "status": self.status,
            "total": self.total,
            "answered": self.answered,
            "failed": self.failed,
            "totals": self.totals,
        }
        return body | ({"unreadable": self.unreadable} if self.unreadable else {})


def parse_cancel(payload: Any) -> str:
    """The run ID of a cancel request ``{"run_id": "run-..."}``; ``RequestError`` if none."""
    if not isinstance(payload, dict) or "run_id" not in payload:
        raise RequestError("run_id", 'send {"run_id": "run-..."}: the run to cancel')
    run_id = payload["run_id"]
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
        raise RequestError(
            "run_id", f"{run_id!r} is not a run ID (run- and 16 hex digits, as niah run prints)"
        )
    return run_id


def cancel_run(
    run_id: str,
    *,
    store: ResultStore,
    publisher: Publisher | None = None,
    ledger: SpendLedger | None = None,
    caller: str = LOCAL_CALLER,
) -> Cancelled:
    """Mark the run cancelled (if it is running); its counts and spend as they stand.

    Only its creator or an operator may (``ForbiddenError`` otherwise). A batch run's
    jobs are cancelled through Vertex's API by the worker, asked at once with a poll
    message (``publisher``); the sweep asks again until they are. Its spend reservation
    is settled to what its calls cost so far (``ledger``); calls under way finish
    unreserved (a resume reserves its missing cells again).
    """
    exists, owner = run_owner(store, run_id)
    if exists:
        check_may_change(owner, run_id, caller, get_settings().operators, "cancel")
    outcome = store.cancel_run(run_id)
    try:
        run = stored_run(store, run_id) if outcome != "missing" else None
    except StoredRunError as error:
        # The cancel is written (nothing more is published or answered): said, not a
        # 503 asking to retry what took effect.
        log("run cancel of a run this version cannot read", severity="ERROR", run_id=run_id,
            outcome=outcome, caller=caller, kind=error.kind, problem=error.problem)  # fmt: skip
        return Cancelled(run_id, outcome, RUN_CANCELLED, 0, 0, 0, {}, unreadable=str(error))
    log("run cancel", run_id=run_id, outcome=outcome, caller=caller)
    if run is not None and ledger is not None and outcome in ("cancelled", "already_cancelled"):
        # Also when already cancelled: a cancel whose settle failed is settled by its retry.
        settle_spent(run_id, store=store, ledger=ledger, run=run)
        if run.is_certify:  # its resume's rounds hold on
            from niah.service.runs.certify_rounds import note_settled_cover

            note_settled_cover(run, store=store)
    if run is not None and publisher is not None and run.batch_jobs:
        publisher.publish_cells([batch_message(run, BATCH_POLL)])
    if run is None:
        return Cancelled(run_id, outcome, None, 0, 0, 0, {})
    return Cancelled(run_id, outcome, run.status, run.total, run.done, run.failed, dict(run.totals))
