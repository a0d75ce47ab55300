"""Firestore: spend per window and the kill switch (``niah.core.interfaces.SpendLedger``).

- ``spend/{window}``: ``usd`` reserved and spent by the runs admitted in a window
  (``day-2026-11-27``, ``month-2026-11``, ``caller-2026-11-27-ada@example.com``).
- ``spend_runs/{run_id}``: a run's reservation: ``reserved`` (outstanding worst case),
  ``settled_usd`` (spend already counted), ``windows``, ``settled``, ``caller``.
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
from niah.errors import StoreUnavailableError
from niah.settings import get_settings

SPEND = "spend"
SPEND_RUNS = "spend_runs"
CONTROL = "control"
KILL_SWITCH = "kill_switch"
# A float sum's rounding must not refuse a run that fits to the cent.
SLACK_USD = 1e-9
T = TypeVar("T")


# Transactions that meet on a window document are retried after a random wait, growing
# with each try: the client's own retries come at once, and 20 identical POSTs at once
# all met the same lock again until the emulator timed them out (409 "Transaction lock
# timeout"), a 503 for most of them.
RESERVE_ATTEMPTS = 12
RESERVE_WAIT_SECONDS = 0.05


def _with_backoff(attempt: Callable[[], T]) -> T:
    """``attempt()``, tried again after a jittered, growing wait while it meets a lock."""
    from google.api_core.exceptions import Conflict

    for tries in range(1, RESERVE_ATTEMPTS + 1):
        try:
            return attempt()
        except (Conflict, ValueError) as error:
            # Aborted (a lock lost to another transaction) is a Conflict; the client says
            # "Failed to commit transaction in 1 attempts." as a ValueError.
            lost = isinstance(error, Conflict) or str(error).startswith("Failed to commit")
            if not lost or tries == RESERVE_ATTEMPTS:
                raise
            time.sleep(random.uniform(0.5, 1.5) * RESERVE_WAIT_SECONDS * tries)
    raise AssertionError("unreachable")


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
    ) -> Reservation:
        """Add ``usd`` to every window if none passes its ceiling; one transaction."""
        firestore = self._firestore
        run_ref = self._db.collection(SPEND_RUNS).document(run_id)
        refs = {window: self._db.collection(SPEND).document(window) for window in ceilings}

        @firestore.transactional
        def reserve(transaction: Any) -> Reservation:
            run = run_ref.get(transaction=transaction)
            snapshots = {w: ref.get(transaction=transaction) for w, ref in refs.items()}
            metering.reads(1 + len(refs))
            spent = {w: float((s.to_dict() or {}).get("usd", 0.0)) for w, s in snapshots.items()}
            held = run.to_dict() or {}
            if run.exists and not held.get("settled"):
                return Reservation(True, spent, held=True)
            for window, ceiling in ceilings.items():
                if ceiling is not None and spent[window] + usd > ceiling + SLACK_USD:
                    return Reservation(False, spent, refused=window)
            for ref in refs.values():
                transaction.set(
                    ref,
                    {"usd": firestore.Increment(usd), "updated_at": firestore.SERVER_TIMESTAMP},
                    merge=True,
                )
            transaction.set(
                run_ref,
                {
                    "reserved": usd,
                    "settled_usd": float(held.get("settled_usd", 0.0)),
                    "windows": list(ceilings),
                    "settled": False,
                    "caller": caller,
                    "reserved_at": firestore.SERVER_TIMESTAMP,
                },
            )
            metering.count(FIRESTORE_WRITES, 1 + len(refs))
            return Reservation(True, spent)

        held = run_ref.get()  # a repeated request: its run holds its reservation already
        metering.reads(1)
        if held.exists and not (held.to_dict() or {}).get("settled"):
            return Reservation(True, {}, held=True)
        return _with_backoff(lambda: reserve(self._db.transaction(max_attempts=1)))

    def settle(self, run_id: str, spent_usd: float) -> float | None:
        """Replace the run's outstanding reservation by what it spent beyond the settled."""
        firestore = self._firestore
        run_ref = self._db.collection(SPEND_RUNS).document(run_id)

        @firestore.transactional
        def settle(transaction: Any) -> float | None:
            snapshot = run_ref.get(transaction=transaction)
            metering.reads(1)
            run = snapshot.to_dict() or {}
            if not snapshot.exists or run.get("settled"):
                return None
            change = spent_usd - float(run.get("settled_usd", 0.0)) - float(run["reserved"])
            for window in run.get("windows", []):
                transaction.set(
                    self._db.collection(SPEND).document(window),
                    {"usd": firestore.Increment(change)},
                    merge=True,
                )
            transaction.update(
                run_ref, {"reserved": 0.0, "settled_usd": spent_usd, "settled": True}
            )
            metering.count(FIRESTORE_WRITES, 1 + len(run.get("windows", [])))
            return change

        result: float | None = settle(self._db.transaction())
        return result

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
