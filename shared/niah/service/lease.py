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
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal

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


# What a delivery that found a cell leased saw of its holder (``watch_holder``).
HolderSeen = Literal["alive", "lapsed", "released"]


def watch_holder(
    store: ResultStore,
    run_id: str,
    cell_id: str,
    lease_seconds: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> HolderSeen:
    """Watch another holder's live lease until it shows life or ends.

    A delivery that finds a cell leased waits here instead of backing off at once: a
    live holder renews every third of the lease, so it shows life within about 10 s
    ("alive": the cell is its), and a dead one's lease lapses within one lease
    ("lapsed": take the cell over now). Backing off at once left a killed worker's
    cells to Pub/Sub's redelivery, whose backoff grows with each nack (on the emulator
    to minutes, and the deliveries may run out meanwhile), or to the sweep.
    "released": the holder stored the cell or gave it up; the next claim says which.
    """
    left = store.lease_seconds_left(run_id, cell_id)
    if left is None:
        return "released"
    poll = min(2.0, lease_seconds / 6)
    started = clock()
    deadline = started + min(left, lease_seconds) + poll
    while clock() < deadline:
        sleep(poll)
        now_left = store.lease_seconds_left(run_id, cell_id)
        if now_left is None:
            # Lapsed unreleased, or released: a renewal would have pushed it further.
            return "lapsed" if clock() - started >= left else "released"
        if now_left > left - (clock() - started) + poll:  # renewed: its holder lives
            return "alive"
    return "lapsed"
