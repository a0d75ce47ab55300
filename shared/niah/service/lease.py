"""A cell's lease kept live while its holder works: only a dead holder's lease lapses.

The lease is short (``cell_lease_seconds``, 30 s by default) and renewed every third of
it from a background thread while the worker builds, calls and stores. A holder killed
mid-call stops renewing, so its lease lapses within one lease and the next delivery (or
the sweep, or the dead-letter handler) has the cell answered again; a live holder's
lease never lapses however long its call takes.
"""

from __future__ import annotations

import contextvars
import threading
from types import TracebackType

from niah.core.interfaces import ResultStore
from niah.logs import describe, log


class LeaseKeeper:
    """Renews claim ``claim`` of a cell every ``lease_seconds / 3`` until closed."""

    def __init__(
        self, store: ResultStore, run_id: str, cell_id: str, claim: int, lease_seconds: float
    ) -> None:
        self._store = store
        self._run_id = run_id
        self._cell_id = cell_id
        self._claim = claim
        self._lease_seconds = lease_seconds
        self._stop = threading.Event()
        # In the request's context: its renewals count with the cell's operations.
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._renew,), name=f"lease-{cell_id}", daemon=True
        )
        self.renewals = 0
        self.lost = False

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        # A renewal stuck on a frozen store must not hold the cell's answer back.
        self._thread.join(timeout=1.0)

    def _renew(self) -> None:
        interval = self._lease_seconds / 3
        while not self._stop.wait(interval):
            try:
                held = self._store.renew_lease(
                    self._run_id, self._cell_id, self._claim, self._lease_seconds
                )
            except Exception as error:  # the store is down: try again next beat
                log(
                    "lease renewal failed",
                    severity="WARNING",
                    run_id=self._run_id,
                    cell_id=self._cell_id,
                    error=describe(error),
                )
                continue
            if not held:
                # Released, or lapsed (the store was unreachable for a whole lease) and
                # claimed by another delivery: nothing left to keep.
                self.lost = True
                log(
                    "lease lost",
                    severity="WARNING",
                    run_id=self._run_id,
                    cell_id=self._cell_id,
                )
                return
            self.renewals += 1
            # Said, so a long call's kept lease shows (and its operations are accounted).
            log(
                "lease renewed",
                run_id=self._run_id,
                cell_id=self._cell_id,
                renewals=self.renewals,
            )
