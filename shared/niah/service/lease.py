"""Claims kept live while their holder works: only a dead holder's claim lapses.

A cell's lease (``cell_lease_seconds``) and a run's report claim
(``report_lease_seconds``), 30 s by default, are renewed every third of it from a
background thread while the worker builds, calls and stores, or the renderer reads,
draws and writes. A holder killed mid-way stops renewing, so its claim lapses within
one lease and the next delivery (or the sweep, or the dead-letter handler) does the
work again; a live holder's claim never lapses however long it works.
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


class ClaimKeeper:
    """Calls ``renew`` every ``lease_seconds / 3`` until closed, or until the claim is gone.

    ``what`` names the claim in the log ("lease": "lease renewed", "lease lost");
    ``labels`` go on each line.
    """

    def __init__(
        self, renew: Callable[[], bool], lease_seconds: float, *, what: str, **labels: str
    ) -> None:
        self._renew_once = renew
        self._lease_seconds = lease_seconds
        self._what = what
        self._labels = labels
        self._stop = threading.Event()
        # In the request's context: its renewals count with the request's operations.
        context = contextvars.copy_context()
        name = "-".join([what.replace(" ", "-"), *labels.values()])
        self._thread = threading.Thread(
            target=context.run, args=(self._renew,), name=name, daemon=True
        )
        self.renewals = 0
        self.lost = False

    def __enter__(self) -> ClaimKeeper:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        # A renewal stuck on a frozen store must not hold the holder's answer back.
        self._thread.join(timeout=1.0)

    def _renew(self) -> None:
        interval = self._lease_seconds / 3
        while not self._stop.wait(interval):
            try:
                held = self._renew_once()
            except Exception as error:  # the store is down: try again next beat
                log(
                    f"{self._what} renewal failed",
                    severity="WARNING",
                    error=describe(error),
                    **self._labels,
                )
                continue
            if not held:
                # Released, dropped (a reset), or lapsed (the store was unreachable for a
                # whole lease) and claimed by another delivery: nothing left to keep.
                self.lost = True
                log(f"{self._what} lost", severity="WARNING", **self._labels)
                return
            self.renewals += 1
            # Said, so a long holder's kept claim shows (and its operations are accounted).
            log(f"{self._what} renewed", renewals=self.renewals, **self._labels)


class LeaseKeeper(ClaimKeeper):
    """Renews claim ``claim`` of a cell's lease every ``lease_seconds / 3`` until closed."""

    def __init__(
        self, store: ResultStore, run_id: str, cell_id: str, claim: int, lease_seconds: float
    ) -> None:
        super().__init__(
            lambda: store.renew_lease(run_id, cell_id, claim, lease_seconds),
            lease_seconds,
            what="lease",
            run_id=run_id,
            cell_id=cell_id,
        )


def keep_report_claim(
    store: ResultStore, run_id: str, claim_id: str, lease_seconds: float
) -> ClaimKeeper:
    """A keeper of the run's report claim ``claim_id`` while its renderer works."""
    return ClaimKeeper(
        lambda: store.renew_report_claim(run_id, claim_id),
        lease_seconds,
        what="report claim",
        run_id=run_id,
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
