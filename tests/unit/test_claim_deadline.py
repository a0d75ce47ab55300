"""A holder whose renewals stall: one paid call per cell, and no answer stored unheld (issue 51).

Before: renewals ran one after another, every third of the lease, with no deadline of
their own, so one renewal stalled past the lease (a latency spike, a pause) let another
delivery take the cell over and call again while the first call ran; the holder, told
nothing, stored its answer whatever became of its lease.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from niah.errors import CellInFlightError, StoreUnavailableError
from niah.service.cells.records import kept_answer
from niah.service.lease import ClaimDeadline, ClaimKeeper
from tests.fakes import MemoryBlobs, ScriptedProvider
from tests.unit.test_work import dispatch_task, echo_needle_number, run_cell


class FakeClock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_claim_holds_a_lease_less_a_tenth_from_when_its_request_was_sent() -> None:
    deadline = ClaimDeadline(30.0, claimed_at=100.0)
    assert deadline.holds(126.9) and not deadline.holds(127.0)
    # A renewal sent at 110 and answered at 135: the store's read came after 110, so
    # the lease runs from then at least (137 less the margin), not from the answer.
    deadline.confirmed(110.0)
    assert deadline.holds(136.9) and not deadline.holds(137.0)
    deadline.confirmed(105.0)  # an older renewal answered late never shortens it
    assert deadline.holds(136.9)
    deadline.lost = True
    assert not deadline.holds(111.0)


def test_the_keeper_holds_until_its_deadline_and_a_confirmation_counts_from_its_start() -> None:
    clock = FakeClock()
    answers: list[bool] = []

    def renew() -> bool:
        clock.now += 20.0  # the store takes 20 s to answer
        return answers.pop(0)

    keeper = ClaimKeeper(renew, 30.0, what="lease", claimed_at=0.0, clock=clock)
    clock.now = 26.9
    assert keeper.holds() and keeper.confirm(timeout=5)  # held: nothing asked
    clock.now = 27.0
    assert not keeper.holds()
    answers.append(True)
    assert keeper.confirm(timeout=5)  # sent at 27, answered at 47: held until 54
    assert clock.now == 47.0 and keeper.renewals == 1
    clock.now = 53.9
    assert keeper.holds()
    clock.now = 54.0
    answers.append(False)  # taken over meanwhile
    assert not keeper.confirm(timeout=5) and keeper.lost
    clock.now = 0.0
    assert not keeper.holds()  # lost is lost, whatever the clock says


def test_a_confirmation_the_store_does_not_answer_in_time_is_not_taken_as_one() -> None:
    stalled = threading.Event()
    keeper = ClaimKeeper(lambda: stalled.wait(10), 0.3, what="lease", claimed_at=-1.0)
    started = time.monotonic()
    assert not keeper.confirm(timeout=0.2)
    assert 0.2 <= time.monotonic() - started < 1.0 and not keeper.lost
    stalled.set()


def test_a_stalled_renewal_does_not_hold_up_the_next() -> None:
    """Before: the first renewal's stall stopped every renewal after it."""
    first = threading.Event()
    calls: list[float] = []

    def renew() -> bool:
        calls.append(time.monotonic())
        if len(calls) == 1:
            first.wait(10)  # stalled until the test ends
        return True

    try:
        with ClaimKeeper(renew, 0.3, what="lease") as keeper:
            time.sleep(0.5)
            assert keeper.renewals >= 2 and keeper.holds()
    finally:
        first.set()


@pytest.fixture
def world(essay_blobs: MemoryBlobs) -> dict[str, Any]:
    return dispatch_task(essay_blobs, context_lengths=[300, 600], document_depth_percents=[0, 100])


@pytest.fixture
def stalled_renewals(world: dict[str, Any]) -> Iterator[Callable[[float | None], None]]:
    """Make the lease keeper's renewals stall: ``stall(seconds)``, ``None`` until ``stall(0)``.

    Only the keeper's (its threads are named for the lease): the spend note and the
    claims of other deliveries go through, as when one request meets a latency spike.
    """
    store = world["store"]
    real_renew = store.renew_lease
    released = threading.Event()
    stalls: list[float | None] = []

    def renew(*args: Any, **kwargs: Any) -> bool:
        if threading.current_thread().name.startswith("lease") and stalls:
            stall = stalls[0]
            if stall is not None:
                stalls.pop(0)  # one renewal stalls that long
            released.wait(stall)
        return bool(real_renew(*args, **kwargs))

    store.renew_lease = renew

    def stall(seconds: float | None) -> None:
        if seconds == 0:  # the stalled ones are answered now, and no more stall
            stalls.clear()
            released.set()
            return
        released.clear()
        stalls.append(seconds)

    try:
        yield stall
    finally:
        stalls.clear()
        released.set()


def test_a_renewal_stalled_past_the_lease_keeps_the_cell_and_one_call(
    world: dict[str, Any], short_leases: float, stalled_renewals: Callable[[float | None], None]
) -> None:
    """The issue's probe: the first renewal in a call stalls one and a half leases.

    Before: the lease lapsed behind the stalled renewal, the next delivery took the cell
    over and called again while the first call ran (two paid calls). Now the renewals
    after the stalled one keep the lease, and every other delivery is held off.
    """
    store, task = world["store"], world["tasks"][0]
    in_call = threading.Event()

    def slow(prompt: str) -> str:
        stalled_renewals(1.5 * short_leases)
        in_call.set()
        time.sleep(2.5 * short_leases)
        return echo_needle_number(prompt)

    provider = ScriptedProvider(slow)
    others = ScriptedProvider(echo_needle_number)
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(run_cell(world, task, provider)))
    worker.start()
    assert in_call.wait(10)
    held_off = 0
    while worker.is_alive():
        try:
            run_cell(world, task, others)
        except CellInFlightError:
            held_off += 1
    worker.join()
    assert len(provider.prompts) + len(others.prompts) == 1
    assert outcome == ["answered"] and held_off >= 2
    assert [call["status"] for call in store.list_calls(world["run_id"])] == ["answered"]


def test_a_holder_whose_renewals_all_stall_stores_nothing_and_keeps_its_answer(
    world: dict[str, Any], short_leases: float, stalled_renewals: Callable[[float | None], None]
) -> None:
    """No renewal confirmed for most of a lease: the answer goes to the bucket, not the store.

    Before: the holder stored it whatever became of its lease. Now the next delivery
    (once the lease lapses) stores the kept answer without calling the model again.
    """
    store, task, run_id = world["store"], world["tasks"][0], world["run_id"]

    def slow(prompt: str) -> str:
        stalled_renewals(None)  # from the call on, no renewal is answered
        time.sleep(1.5 * short_leases)
        return echo_needle_number(prompt)

    provider = ScriptedProvider(slow)
    with pytest.raises(StoreUnavailableError, match="not confirmed in time"):
        run_cell(world, task, provider)
    assert store.list_cells(run_id) == []
    assert kept_answer(task, world["blobs"]) is not None
    assert store.last_attempt(run_id, task.cell_id) is None  # not the cell's failure
    again = ScriptedProvider(echo_needle_number)
    assert run_cell(world, task, again) == "answered"
    assert len(provider.prompts) == 1 and again.prompts == []
    (cell,) = store.list_cells(run_id)
    assert cell["score"] == 10
    assert [call["status"] for call in store.list_calls(run_id)] == ["answered"]


def test_a_holder_taken_over_mid_call_stores_nothing_and_its_call_is_in_the_spend(
    world: dict[str, Any], short_leases: float, stalled_renewals: Callable[[float | None], None]
) -> None:
    """Renewals stalled past the lease, the cell taken over: the old holder's answer stays out.

    The new holder's answer is the cell's; the old call was paid, so it stays in the
    run's spend (closed with its usage, marked superseded).
    """
    store, task, run_id = world["store"], world["tasks"][0], world["run_id"]

    def taken_over(prompt: str) -> str:
        stalled_renewals(None)
        time.sleep(1.2 * short_leases)
        store.lapse(run_id, task.cell_id)
        assert store.claim_cell(run_id, task.cell_id, 60) == 2  # another delivery's
        stalled_renewals(0)  # the stalled renewals are answered now: the claim is gone
        return echo_needle_number(prompt)

    provider = ScriptedProvider(taken_over)
    with pytest.raises(CellInFlightError, match="taken over"):
        run_cell(world, task, provider)
    assert store.list_cells(run_id) == []
    (call,) = store.list_calls(run_id)
    assert call["status"] == "answered" and call["superseded"] is True
    assert call["call_id"].endswith(".C001")
    assert task.cell_id in store.leased_cells(run_id)  # the new holder's, left alone
