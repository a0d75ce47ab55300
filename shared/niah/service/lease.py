"""Claims kept live while their holder works: only a dead holder's claim lapses.

A cell's lease (``cell_lease_seconds``) and a run's report claim
(``report_lease_seconds``), 30 s by default, are renewed every tenth of it while the
worker builds, calls and stores, or the renderer reads, draws and writes. A holder
killed mid-way stops renewing, so its claim lapses within one lease and the next
delivery (or the sweep, or the dead-letter handler) does the work again.

Each renewal is its own attempt: one that stalls (a slow request, a latency spike)
does not hold up the next, so a live holder loses its claim only if every renewal
fails for most of a lease (``RENEWALS_PER_LEASE``). And the holder knows, on its own
monotonic clock, until when its claim is sure to hold (``ClaimDeadline``): past that,
unconfirmed, it stores nothing (docs/reliability.md, "One paid call per cell").
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

# Renewals a lease: one every tenth of it, so every renewal may fail for nine tenths of
# a lease (27 s of 30) before a live holder's claim lapses. The same tenth is the
# holder's margin (``ClaimDeadline``).
RENEWALS_PER_LEASE = 10


class ClaimDeadline:
    """Until when a claim is sure to hold, on its holder's monotonic clock.

    The store sets a claim's expiry from its own clock when it reads the claim (the
    transaction's read time) plus the lease, and that read comes after the request was
    sent: so a confirmation whose request was sent at ``started`` holds the claim until
    at least ``started + lease`` on any clock that runs at the store's rate. The
    holder counts a tenth less (``margin``): for the first claim's expiry, written from
    the worker's wall clock (a create, no read), and the time between a check and the
    write it allows. No two clocks are ever compared.
    """

    def __init__(self, lease_seconds: float, claimed_at: float) -> None:
        self.lease_seconds = lease_seconds
        self.margin = lease_seconds / RENEWALS_PER_LEASE
        self.until = claimed_at + lease_seconds - self.margin
        self.lost = False

    def confirmed(self, started: float) -> None:
        """A renewal sent at ``started`` was confirmed (a later one may land first)."""
        self.until = max(self.until, started + self.lease_seconds - self.margin)

    def holds(self, now: float) -> bool:
        """Whether the claim is sure to be this holder's at ``now``."""
        return not self.lost and now < self.until


class ClaimKeeper:
    """Renews a claim every ``lease_seconds / 10`` until closed, or until the claim is gone.

    ``what`` names the claim in the log ("lease": "lease renewed", "lease lost");
    ``labels`` go on each line. ``claimed_at``: when the claim's request was sent
    (``clock``, monotonic), so ``holds`` counts from it.
    """

    def __init__(
        self,
        renew: Callable[[], bool],
        lease_seconds: float,
        *,
        what: str,
        claimed_at: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        **labels: str,
    ) -> None:
        self._renew_once = renew
        self._lease_seconds = lease_seconds
        self._what = what
        self._labels = labels
        self._clock = clock
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._attempts: list[threading.Thread] = []
        self.deadline = ClaimDeadline(lease_seconds, clock() if claimed_at is None else claimed_at)
        # In the request's context: its renewals count with the request's operations.
        context = contextvars.copy_context()
        self._name = "-".join([what.replace(" ", "-"), *labels.values()])
        self._thread = threading.Thread(
            target=context.run, args=(self._renew,), name=self._name, daemon=True
        )
        self.renewals = 0

    @property
    def lost(self) -> bool:
        """Whether a renewal found the claim gone (released, or another's)."""
        return self.deadline.lost

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
        until = time.monotonic() + 1.0
        for thread in [self._thread, *self._attempts]:
            thread.join(timeout=max(0.0, until - time.monotonic()))

    def holds(self) -> bool:
        """Whether the claim is sure to be this holder's now (``ClaimDeadline``)."""
        with self._lock:
            return self.deadline.holds(self._clock())

    def confirmed(self, started: float) -> None:
        """Another write that checked the claim (the spend note) was sent at ``started``."""
        with self._lock:
            self.deadline.confirmed(started)

    def confirm(self, timeout: float) -> bool:
        """Renew now, waiting at most ``timeout``: whether the claim then holds."""
        if self.holds():
            return True
        self._attempt().join(timeout)
        return self.holds()

    def _renew(self) -> None:
        interval = self._lease_seconds / RENEWALS_PER_LEASE
        while not self._stop.wait(interval) and not self.lost:
            with self._lock:
                self._attempts = [thread for thread in self._attempts if thread.is_alive()]
                stalled = len(self._attempts)
            if stalled < RENEWALS_PER_LEASE:  # more would only queue behind them
                self._attempt()

    def _attempt(self) -> threading.Thread:
        """Start one renewal, apart from any still waiting on the store."""
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(self._renew_one,), name=self._name, daemon=True
        )
        with self._lock:
            self._attempts.append(thread)
        thread.start()
        return thread

    def _renew_one(self) -> None:
        started = self._clock()
        try:
            held = self._renew_once()
        except Exception as error:  # the store is down: the next attempt tries again
            log(
                f"{self._what} renewal failed",
                severity="WARNING",
                error=describe(error),
                **self._labels,
            )
            return
        with self._lock:
            if not held:
                # Released, dropped (a reset), or lapsed (no renewal got through for a
                # whole lease) and claimed by another delivery: nothing left to keep.
                if not self.deadline.lost and not self._stop.is_set():
                    log(f"{self._what} lost", severity="WARNING", **self._labels)
                self.deadline.lost = True
                return
            self.deadline.confirmed(started)
            self.renewals += 1
            # Said, so a long holder's kept claim shows (and its operations are accounted).
            log(f"{self._what} renewed", renewals=self.renewals, **self._labels)


class LeaseKeeper(ClaimKeeper):
    """Renews claim ``claim`` of a cell's lease every ``lease_seconds / 10`` until closed.

    ``claimed_at``: when the claim's request was sent (monotonic), so ``holds`` counts
    the first lease from there; now if not given.
    """

    def __init__(
        self,
        store: ResultStore,
        run_id: str,
        cell_id: str,
        claim: int,
        lease_seconds: float,
        *,
        claimed_at: float | None = None,
    ) -> None:
        super().__init__(
            lambda: store.renew_lease(run_id, cell_id, claim, lease_seconds),
            lease_seconds,
            what="lease",
            claimed_at=claimed_at,
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
    live holder renews every tenth of the lease, so it shows life within a few seconds
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
