"""Leases that know their holder is alive, runs that are gone, and no duplicate storms.

Issue 27: a killed worker's cells stalled their run for the whole (600 s) lease; a
store error between the claim and the call leaked the lease; duplicates asked for the
report again and again; a deleted run was answered from a process cache.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from typing import Any

import pytest

from niah.core.interfaces import CLAIM_ABANDONED, CLAIM_HELD
from niah.errors import CellInFlightError, CloudUnavailableError
from niah.service.lease import LeaseKeeper
from niah.service.messages import CellTask
from niah.service.runs.dispatch import dispatch_run
from niah.settings import get_settings
from tests.fakes import MemoryBlobs, ScriptedProvider
from tests.unit.test_work import dispatch_task, echo_needle_number, run_cell


@pytest.fixture
def world(essay_blobs: MemoryBlobs) -> dict[str, Any]:
    return dispatch_task(essay_blobs, context_lengths=[300, 600], document_depth_percents=[0, 100])


def test_a_live_holders_lease_never_lapses_however_long_its_call(
    world: dict[str, Any], short_leases: float
) -> None:
    """A call three leases long: every other delivery meanwhile is held off; one call.

    Each of them watches the lease until its holder renews it (within a third of a
    lease), then backs off.
    """
    store, task = world["store"], world["tasks"][0]
    in_call = threading.Event()
    held_off: list[str] = []

    def slow(prompt: str) -> str:
        in_call.set()
        time.sleep(3 * short_leases)
        return echo_needle_number(prompt)

    provider = ScriptedProvider(slow)
    worker = threading.Thread(target=run_cell, args=(world, task, provider))
    worker.start()
    assert in_call.wait(10)
    deadline = time.monotonic() + 2.5 * short_leases
    while time.monotonic() < deadline:
        with pytest.raises(CellInFlightError):
            run_cell(world, task, ScriptedProvider(echo_needle_number))
        held_off.append("held")
        time.sleep(0.1)
    worker.join(10)
    assert len(provider.prompts) == 1 and len(held_off) >= 3
    (cell,) = store.list_cells(world["run_id"])
    assert cell["score"] == 10
    assert run_cell(world, task, ScriptedProvider(echo_needle_number)) == "duplicate"


def test_a_dead_holders_lease_lapses_within_one_lease_and_the_cell_is_asked_again(
    world: dict[str, Any], short_leases: float
) -> None:
    """A holder killed mid-call renews nothing: the next delivery claims after one lease.

    Before: that delivery backed off at once, and the cell waited on Pub/Sub's growing
    redelivery backoff or the sweep (issue 39: 120 s after a kill on the local stack).
    Now it watches the lease, and takes the cell over the moment it lapses.
    """
    store, task = world["store"], world["tasks"][0]
    assert store.claim_cell(world["run_id"], task.cell_id, short_leases) == 1  # then killed
    world["publisher"].cells.clear()
    started = time.monotonic()
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, task, provider) == "answered"
    waited = time.monotonic() - started
    assert short_leases * 0.9 <= waited <= short_leases + 1.0
    # The dead worker may have held other pushes of the run: the run's cells that
    # nothing holds are published again by the delivery that found the death.
    others = sorted(t.cell_id for t in world["tasks"][1:])
    assert sorted(m["cell_id"] for m in world["publisher"].cells) == others
    assert len(provider.prompts) == 1
    (call,) = store.list_calls(world["run_id"])
    assert call["call_id"] == f"{task.cell_id}.C002"  # the killed claim's number stays used


def test_the_keeper_renews_until_closed_and_stops_when_the_lease_is_taken(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    store, task, run_id = world["store"], world["tasks"][0], world["run_id"]
    claim = store.claim_cell(run_id, task.cell_id, 0.3)
    capsys.readouterr()
    with LeaseKeeper(store, run_id, task.cell_id, claim, 0.3) as keeper:
        time.sleep(1.0)
        assert task.cell_id in store.leased_cells(run_id)
    assert keeper.renewals >= 2 and not keeper.lost
    # Each renewal is said once (the operations test counts them in a cell's cost).
    said = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    renewed = [line for line in said if line["message"] == "lease renewed"]
    assert [line["renewals"] for line in renewed] == list(range(1, keeper.renewals + 1))
    assert {line["cell_id"] for line in renewed} == {task.cell_id}
    time.sleep(0.4)
    assert task.cell_id not in store.leased_cells(run_id)  # closed: no more renewals
    # Lapsed and claimed by another delivery: the old holder's keeper lets go at once.
    assert store.claim_cell(run_id, task.cell_id, 0.3) == claim + 1
    with LeaseKeeper(store, run_id, task.cell_id, claim, 0.3) as stale:
        time.sleep(0.5)
    assert stale.lost and stale.renewals == 0


def test_a_cell_that_kills_every_holder_is_stored_failed_without_another_call(
    world: dict[str, Any],
) -> None:
    """Before: each delivery claimed, died and paid again, for as long as Pub/Sub tried."""
    store, task, run_id = world["store"], world["tasks"][0], world["run_id"]
    limit = get_settings().max_cell_failures
    for claim in range(1, limit + 1):
        assert store.claim_cell(run_id, task.cell_id, 60, max_lapses=limit) == claim
        store.lapse(run_id, task.cell_id)  # the holder died; its lease ran out
    assert store.claim_cell(run_id, task.cell_id, 60, max_lapses=limit) == CLAIM_ABANDONED
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, task, provider) == "failed"
    assert provider.prompts == []
    (cell,) = store.list_cells(run_id)
    assert cell["error"]["kind"] == "worker_died"
    assert f"died {limit} times in a row" in cell["error"]["message"]
    # A holder that ended well (released) resets the count: retries are not deaths.
    other = world["tasks"][1]
    for _ in range(limit + 2):
        assert store.claim_cell(run_id, other.cell_id, 60, max_lapses=limit) >= 1
        store.release_cell(run_id, other.cell_id)


@pytest.mark.parametrize("error", [ValueError("a bug"), CloudUnavailableError("frozen")])
def test_any_exception_after_the_claim_releases_it(world: dict[str, Any], error: Exception) -> None:
    """Before: only a model's retryable error freed the lease; a store stall leaked it.

    A store error is not the cell's failure: it is not counted towards giving it up.
    """
    store, task, run_id = world["store"], world["tasks"][0], world["run_id"]

    def fails(*args: Any, **kwargs: Any) -> None:
        raise error

    real_open = store.open_call
    store.open_call = fails
    with pytest.raises(type(error)):
        run_cell(world, task, ScriptedProvider(echo_needle_number))
    store.open_call = real_open
    assert task.cell_id not in store.leased_cells(run_id)
    assert store.last_attempt(run_id, task.cell_id) is None
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, task, provider) == "answered" and len(provider.prompts) == 1


def test_a_holder_that_lost_its_lease_in_a_stall_makes_no_call(world: dict[str, Any]) -> None:
    """Before (CI, Firestore frozen 60 s at the spend note): 4 calls for 3 cells.

    The holder's lease lapsed while the store was frozen; at the thaw a redelivery
    claimed the cell and the old holder's note went through too, so both called. Now the
    note checks the claim in the same transaction: the old holder makes no call, and
    leaves the new holder's lease alone.
    """
    store, task, run_id = world["store"], world["tasks"][0], world["run_id"]
    real_open = store.open_call

    def stalled(*args: Any, **kwargs: Any) -> bool:
        store.lapse(run_id, task.cell_id)  # no renewal got through the stall
        assert store.claim_cell(run_id, task.cell_id, 60) == 2  # the redelivery's
        return bool(real_open(*args, **kwargs))

    store.open_call = stalled
    provider = ScriptedProvider(echo_needle_number)
    with pytest.raises(CellInFlightError):
        run_cell(world, task, provider)
    store.open_call = real_open
    assert provider.prompts == [] and store.list_calls(run_id) == []
    assert task.cell_id in store.leased_cells(run_id)  # the new holder's, kept
    assert store.last_attempt(run_id, task.cell_id) is None  # not the cell's failure
    assert store.claim_cell(run_id, task.cell_id, 60) == CLAIM_HELD


def test_a_deleted_run_is_not_answered_from_the_process_cache(world: dict[str, Any]) -> None:
    """Before: workers wrote cells of a run Firestore had lost, from their cached spec."""
    store, run_id = world["store"], world["run_id"]
    first, second = world["tasks"][:2]
    assert run_cell(world, first, ScriptedProvider(echo_needle_number)) == "answered"
    del store.runs[run_id]  # lost (an emulator restart, a delete)
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, second, provider) == "orphan"
    assert provider.prompts == [] and second.cell_id not in store.cells[run_id]


def test_a_replaced_run_drops_the_old_runs_messages(essay_blobs: MemoryBlobs) -> None:
    """The same request after a delete: a new run under the same ID, with a new stamp."""
    world = dispatch_task(essay_blobs, context_lengths=[300], document_depth_percents=[0, 100])
    store, run_id, (old, _) = world["store"], world["run_id"], world["tasks"]
    assert old.run_stamp == store.runs[run_id]["stamp"]
    del store.runs[run_id]
    world["publisher"].cells.clear()
    again = dispatch_run(
        {"context_lengths": [300], "document_depth_percents": [0, 100]},
        store=store,
        publisher=world["publisher"],
        blobs=essay_blobs,
    )
    assert again.run_id == run_id and again.created
    new = [CellTask.from_message(m) for m in world["publisher"].cells]
    assert {task.run_stamp for task in new} == {store.runs[run_id]["stamp"]} != {old.run_stamp}
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, old, provider) == "orphan" and provider.prompts == []
    assert run_cell(world, new[0], provider) == "answered" and len(provider.prompts) == 1
    # A message from before stamps (none) is checked for the run's existence only.
    assert run_cell(world, replace(new[1], run_stamp=None), provider) == "answered"


def test_duplicates_of_stored_cells_ask_for_the_report_once(world: dict[str, Any]) -> None:
    """Before: 113 duplicate deliveries asked for the report 113 times."""
    provider = ScriptedProvider(echo_needle_number)
    for task in world["tasks"]:
        run_cell(world, task, provider)
    for _ in range(20):
        for task in world["tasks"]:
            assert run_cell(world, task, provider) == "duplicate"
    assert world["publisher"].reports == [world["run_id"]]
    # A reset (resume) reopens the report: the next completion asks again.
    world["store"].reopen_report(world["run_id"])
    assert run_cell(world, world["tasks"][0], provider) == "duplicate"
    assert world["publisher"].reports == [world["run_id"]] * 2


def test_repeated_requests_publish_nothing_while_the_dispatch_is_in_progress(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 20 identical POSTs of a 6-cell run published 115 cell messages."""
    from tests.fake_store import MemoryStore
    from tests.fakes import RecordingPublisher

    body = {"context_lengths": [300, 600], "document_depth_percents": [0, 50, 100]}
    for order, first_published in (("cache_aware", 1), ("naive", 6)):
        monkeypatch.setenv("NIAH_DISPATCH_ORDER", order)
        get_settings.cache_clear()
        store, publisher = MemoryStore(), RecordingPublisher()
        results = [
            dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
            for _ in range(20)
        ]
        assert [r.published for r in results] == [first_published] + [0] * 19, order
        assert all("nothing was published again" in r.warnings[-1] for r in results[1:])


def test_a_repeated_request_after_the_dispatch_settled_publishes_what_is_lost(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose cells were published long ago and not stored: a re-POST nudges it."""
    from tests.fake_store import MemoryStore
    from tests.fakes import RecordingPublisher

    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "naive")
    get_settings.cache_clear()
    store, publisher = MemoryStore(), RecordingPublisher()
    body = {"context_lengths": [300], "document_depth_percents": [0, 100]}
    first = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    store.settle(first.run_id)
    store.claim_cell(first.run_id, publisher.cells[0]["cell_id"], 60)  # in flight: kept out
    again = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    assert again.published == 1 and publisher.cells[-1] == publisher.cells[1]
    assert dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs).published == 0


def test_the_sweep_hands_on_a_dead_holders_cell_once(world: dict[str, Any]) -> None:
    from niah.service.runs.sweep import sweep_stalled_runs

    store, publisher, run_id = world["store"], world["publisher"], world["run_id"]
    dead, live = world["tasks"][:2]
    store.claim_cell(run_id, dead.cell_id, 60)
    store.lapse(run_id, dead.cell_id)
    store.claim_cell(run_id, live.cell_id, 60)
    publisher.cells.clear()
    result = sweep_stalled_runs(store=store, publisher=publisher, stalled_after_seconds=3600)
    assert result["cells_handed_on"] == 1
    # The death's other losses go with it (issue 39): every cell nothing holds, once.
    unheld = [t.cell_id for t in world["tasks"][2:]]
    assert [m["cell_id"] for m in publisher.cells] == [dead.cell_id, *unheld]
    assert publisher.cells[0]["run_stamp"] == store.runs[run_id]["stamp"]
    again = sweep_stalled_runs(store=store, publisher=publisher, stalled_after_seconds=3600)
    assert again["cells_handed_on"] == 0 and len(publisher.cells) == 1 + len(unheld)
    # The handed-on cell is claimed and answered by the message the sweep published.
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, CellTask.from_message(publisher.cells[0]), provider) == "answered"
    assert store.claim_cell(run_id, live.cell_id, 60) == CLAIM_HELD


def test_a_result_the_store_refuses_is_stored_failed_with_its_call_closed(
    world: dict[str, Any],
) -> None:
    """Before: InvalidArgument (a document over 1 MiB) was "unavailable": kept, redelivered."""
    from niah.errors import CloudRefusedError

    store, task, run_id = world["store"], world["tasks"][0], world["run_id"]
    real_record = store.record_cell

    def refuses_answers(run: str, cell: str, doc: dict[str, Any], **kwargs: Any) -> bool:
        if doc["status"] == "answered":
            raise CloudRefusedError("InvalidArgument: 400 document too large")
        return real_record(run, cell, doc, **kwargs)

    store.record_cell = refuses_answers
    provider = ScriptedProvider(echo_needle_number)
    assert run_cell(world, task, provider) == "failed"
    (cell,) = store.list_cells(run_id)
    assert cell["error"]["kind"] == "cloud_refused"
    assert (cell["context_length"], cell["depth_percent"]) == (task.context_length, 0.0)
    (call,) = store.list_calls(run_id)
    assert call["status"] == "answered" and len(provider.prompts) == 1
    assert world["blobs"].list("kept-answers/") == []
