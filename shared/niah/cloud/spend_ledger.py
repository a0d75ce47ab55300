"""Firestore: spend per window and the kill switch (``niah.core.interfaces.SpendLedger``).

- ``spend/{window}``: ``usd`` reserved and spent by the runs admitted in a window
  (``day-2026-11-27``, ``month-2026-11``, ``caller-2026-11-27-ada@example.com``).
- ``spend_runs/{run_id}``: a run's reservation: its named ``holds`` (``usd``, ``open``;
  ``niah.core.money.holds``), ``reserved`` (the open holds' sum), ``settled_usd``
  (spend already counted), ``windows``, ``settled``, ``caller``, ``held_at``.
- ``spend_callers/{caller}``: ``open_runs``, the caller's runs with a hold open (what
  ``NIAH_MAX_RUNNING_RUNS_PER_CALLER`` limits, checked in the reserve's transaction).
- ``control/kill_switch``: ``on``, and why, by whom, since when.

Why counters and not a query of the window's runs: a query would read every run of the
month on every dispatch and could not be made atomic with the admission; a window
document is one read, and a transaction over the run's three windows admits or refuses
all at once. Dispatches are rare (a person's command), so a transaction on a window
document is far below Firestore's one write a second per document.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import FIRESTORE_WRITES
from niah.core.interfaces import Reservation
from niah.core.money.holds import ADMIT, Step, reserve_step, settle_step
from niah.errors import StoreUnavailableError
from niah.settings import get_settings

SPEND = "spend"
SPEND_RUNS = "spend_runs"
SPEND_CALLERS = "spend_callers"
OPEN_RUNS = "open_runs"
CONTROL = "control"
KILL_SWITCH = "kill_switch"
T = TypeVar("T")


# Transactions that meet on a window document are retried after a random wait, growing
# with each try: the client's own retries come at once, and 20 identical POSTs at once
# all met the same lock again until the emulator timed them out (409 "Transaction lock
# timeout"), a 503 for most of them. Retried until a deadline, not a count: each round
# one contender commits, so 20 at once need up to 20 rounds, and on a loaded machine 12
# tries ran out for 16 of 20 POSTs (2026-12-06, "Failed to commit transaction").
RESERVE_SECONDS = 30.0
RESERVE_WAIT_SECONDS = 0.05
RESERVE_MAX_WAIT_SECONDS = 0.5


def _with_backoff(attempt: Callable[[], T]) -> T:
    """``attempt()``, tried again after a jittered, growing wait while it meets a lock.

    Until ``RESERVE_SECONDS`` have passed; the lock's last loss is raised then.
    """
    from google.api_core.exceptions import Conflict

    deadline = time.monotonic() + RESERVE_SECONDS
    tries = 0
    while True:
        tries += 1
        try:
            return attempt()
        except (Conflict, ValueError) as error:
            # Aborted (a lock lost to another transaction) is a Conflict; the client says
            # "Failed to commit transaction in 1 attempts." as a ValueError.
            lost = isinstance(error, Conflict) or str(error).startswith("Failed to commit")
            wait = min(RESERVE_MAX_WAIT_SECONDS, RESERVE_WAIT_SECONDS * tries)
            wait *= random.uniform(0.5, 1.5)
            if not lost or time.monotonic() + wait > deadline:
                raise
            time.sleep(wait)


@metering.waits_on(metering.FIRESTORE)
@raises_service_errors(unavailable=StoreUnavailableError)
class FirestoreSpendLedger:
    """Spend windows and the kill switch in Firestore."""

    def __init__(self, client: Any = None) -> None:
        from google.cloud import firestore

        self._firestore = firestore
        self._db = client or firestore.Client(project=get_settings().project)

    def reserve(
        self,
        run_id: str,
        usd: float,
        ceilings: dict[str, float | None],
        *,
        caller: str,
        hold: str = ADMIT,
        max_open_runs: int | None = None,
    ) -> Reservation:
        """Take the run's hold ``hold`` (``niah.core.money.holds``); one transaction.

        The transaction reads the run's entry, every window, the kill switch and the
        caller's runs holding spend, so a hold is never taken past a ceiling, past the
        caller's ``max_open_runs``, or while the switch is on.
        """
        firestore = self._firestore
        run_ref = self._db.collection(SPEND_RUNS).document(run_id)
        switch_ref = self._db.collection(CONTROL).document(KILL_SWITCH)
        refs = {window: self._db.collection(SPEND).document(window) for window in ceilings}

        @firestore.transactional
        def reserve(transaction: Any) -> Reservation:
            run = run_ref.get(transaction=transaction)
            switch = switch_ref.get(transaction=transaction).to_dict() or {}
            # The run's own caller's runs (its creator's, whoever takes a later hold).
            owner = (run.to_dict() or {}).get("caller") or caller
            owned = self._caller_ref(owner).get(transaction=transaction).to_dict() or {}
            open_runs = owned.get(OPEN_RUNS)
            snapshots = {w: ref.get(transaction=transaction) for w, ref in refs.items()}
            metering.reads(3 + len(refs))
            spent = {w: float((s.to_dict() or {}).get("usd", 0.0)) for w, s in snapshots.items()}
            step = reserve_step(
                run_id,
                run.to_dict() if run.exists else None,
                spent,
                switch if switch.get("on") else None,
                hold=hold,
                usd=usd,
                ceilings=ceilings,
                caller=caller,
                open_runs=open_runs or (),
                max_open_runs=max_open_runs,
            )
            self._write(transaction, run_ref, step, held_at=True)
            assert step.reservation is not None
            return step.reservation

        held = run_ref.get()  # a repeated request: its run took this hold already
        metering.reads(1)
        if held.exists and hold in ((held.to_dict() or {}).get("holds") or {}):
            return Reservation(True, {}, held=True)
        return _with_backoff(lambda: reserve(self._db.transaction(max_attempts=1)))

    def settle(self, run_id: str, spent_usd: float) -> float | None:
        """Replace the run's open holds by what it spent beyond the settled."""
        return self._apply(run_id, lambda entry: settle_step(entry, spent_usd))

    def entry(self, run_id: str) -> dict[str, Any] | None:
        """The run's entry as stored, or None."""
        metering.reads(1)
        snapshot = self._db.collection(SPEND_RUNS).document(run_id).get()
        return (snapshot.to_dict() or {}) | {"run_id": run_id} if snapshot.exists else None

    def open_entries(self) -> list[dict[str, Any]]:
        """Every entry with a hold open, oldest hold first (one query)."""
        query = self._db.collection(SPEND_RUNS).where(
            filter=self._firestore.FieldFilter("settled", "==", False)
        )
        entries = [(s.to_dict() or {}) | {"run_id": s.id} for s in query.stream()]
        metering.reads(max(1, len(entries)))
        return sorted(entries, key=lambda e: str(e.get("held_at") or ""))

    def _apply(self, run_id: str, step_of: Callable[[dict[str, Any] | None], Step]) -> float | None:
        """One settle of the run's entry, in a transaction; the windows' change."""
        firestore = self._firestore
        run_ref = self._db.collection(SPEND_RUNS).document(run_id)

        @firestore.transactional
        def apply(transaction: Any) -> float | None:
            snapshot = run_ref.get(transaction=transaction)
            metering.reads(1)
            step = step_of(snapshot.to_dict() if snapshot.exists else None)
            if step.entry is None:
                return None
            self._write(transaction, run_ref, step, held_at=False)
            return step.change

        result: float | None = _with_backoff(lambda: apply(self._db.transaction(max_attempts=1)))
        return result

    def _write(self, transaction: Any, run_ref: Any, step: Step, *, held_at: bool) -> None:
        """A step's writes: the windows' change and the run's entry."""
        if step.entry is None:
            return
        firestore = self._firestore
        for window in step.windows:
            transaction.set(
                self._db.collection(SPEND).document(window),
                {"usd": firestore.Increment(step.change), "updated_at": firestore.SERVER_TIMESTAMP},
                merge=True,
            )
        extra = {"held_at": firestore.SERVER_TIMESTAMP} if held_at else {}
        transaction.set(run_ref, step.entry | extra)
        if step.opens is not None and step.caller:
            change = firestore.ArrayUnion if step.opens else firestore.ArrayRemove
            transaction.set(
                self._caller_ref(step.caller), {OPEN_RUNS: change([run_ref.id])}, merge=True
            )
        metering.count(FIRESTORE_WRITES, 2 + len(step.windows))

    def _caller_ref(self, caller: str) -> Any:
        """The caller's document: its runs holding spend (``/`` cannot be in an ID)."""
        return self._db.collection(SPEND_CALLERS).document(caller.replace("/", "_"))

    def window_spend(self, window: str) -> float:
        """A window's USD as it stands."""
        metering.reads(1)
        snapshot = self._db.collection(SPEND).document(window).get()
        return float((snapshot.to_dict() or {}).get("usd", 0.0))

    def kill_switch(self) -> dict[str, Any] | None:
        """The kill switch document when it is on."""
        metering.reads(1)
        state = self._db.collection(CONTROL).document(KILL_SWITCH).get().to_dict() or {}
        return state if state.get("on") else None

    def set_kill_switch(self, fields: dict[str, Any] | None) -> None:
        """Turn the switch on with ``fields``, or off (None)."""
        metering.count(FIRESTORE_WRITES)
        document = self._db.collection(CONTROL).document(KILL_SWITCH)
        if fields is None:
            document.set({"on": False, "lifted_at": self._firestore.SERVER_TIMESTAMP})
        else:
            document.set({**fields, "on": True})
