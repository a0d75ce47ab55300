"""The Firestore store on the emulator: counts on shards, claims, the report's guard."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest

from niah.cloud import metering
from niah.cloud.store import FirestoreStore
from niah.cloud.store.paths import COUNTERS
from niah.core.interfaces import CLAIM_HELD, CLAIM_STORED
from niah.core.results.counters import shard_of
from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration


def fresh_run(store: FirestoreStore, total: int) -> str:
    run_id = f"store-test-{uuid.uuid4().hex[:8]}"
    assert store.create_run(run_id, {"total": total, "status": "running"})
    return run_id


# The run's counter shards, as the dispatcher would size them (niah.core.results.counters).
SHARDS = 8


def same_shard_cells(count: int) -> list[str]:
    """Cell IDs whose counts all land on one shard."""
    shards = SHARDS
    found: list[str] = []
    index = 0
    while len(found) < count:
        cell_id = f"L{index:08d}-D000000"
        if shard_of(cell_id, shards) == shard_of("L00000000-D000000", shards):
            found.append(cell_id)
        index += 1
    return found


def test_counts_live_on_shards_and_a_failed_cell_keeps_their_totals(stack: Stack) -> None:
    """Before: a failed cell's empty totals map, merged, wiped its shard's totals.

    Each store returns its shard's count after it, from the commit (no read): 1, 2, 3,
    the failed cell included, and nothing for a cell stored already.
    """
    store = FirestoreStore()
    run_id = fresh_run(store, 3)
    answered, failed, other = same_shard_cells(3)
    totals = {"cost_usd": 1.5, "prompt_tokens": 1000.0}
    recorded = [
        store.record_cell(
            run_id, answered, {"status": "answered"}, failed=False, shards=SHARDS, totals=totals
        ),
        store.record_cell(run_id, failed, {"status": "failed"}, failed=True, shards=SHARDS),
        store.record_cell(
            run_id, other, {"status": "answered"}, failed=False, shards=SHARDS, totals=totals
        ),
        store.record_cell(
            run_id, other, {"status": "answered"}, failed=False, shards=SHARDS, totals=totals
        ),
    ]
    assert [(r.stored, r.shard_counted) for r in recorded] == [
        (True, 1),
        (True, 2),
        (True, 3),
        (False, None),
    ]
    assert store.shard_count(run_id, other, shards=SHARDS) == 3
    run = store.get_run(run_id) or {}
    assert (run["done"], run["failed"]) == (2, 1)
    assert run["totals"] == {"cost_usd": 3.0, "prompt_tokens": 2000.0}
    document = store.get_run(run_id, counts=False) or {}
    assert "done" not in document and "totals" not in document  # the run document is spared
    shards = list(store._run(run_id).collection(COUNTERS).stream())
    assert len(shards) == 1
    assert store.count_cells(run_id) == 3


def test_a_claim_sees_the_stored_cell_and_a_live_lease(stack: Stack) -> None:
    store = FirestoreStore()
    run_id = fresh_run(store, 1)
    assert store.claim_cell(run_id, "c", 60) == 1
    assert store.claim_cell(run_id, "c", 60) == CLAIM_HELD
    store.release_cell(run_id, "c")
    assert store.claim_cell(run_id, "c", 60) == 2  # call IDs never repeat
    assert store.record_cell(run_id, "c", {"status": "answered"}, failed=False, shards=SHARDS)
    store.release_cell(run_id, "c")
    assert store.claim_cell(run_id, "c", 60) == CLAIM_STORED


def test_a_call_is_noted_only_by_the_claim_holding_the_lease(stack: Stack) -> None:
    """The note and the lease check are one transaction on the emulator."""
    store = FirestoreStore()
    run_id = fresh_run(store, 1)
    note = {"status": "started"}
    assert store.claim_cell(run_id, "c", 0.5) == 1
    time.sleep(0.6)  # claim 1's lease lapsed (a stall) and a redelivery claimed
    assert store.claim_cell(run_id, "c", 60) == 2
    assert not store.open_call(run_id, "c.C001", note, cell_id="c", claim=1, lease_seconds=60)
    store.release_cell(run_id, "c", 1)  # the old holder lets go of nothing
    assert store.claim_cell(run_id, "c", 60) == CLAIM_HELD
    assert store.open_call(run_id, "c.C002", note, cell_id="c", claim=2, lease_seconds=60)
    assert [call["call_id"] for call in store.list_calls(run_id)] == ["c.C002"]
    store.release_cell(run_id, "c", 2)
    assert store.claim_cell(run_id, "c", 60) == 3


def _reads_writes(block: Callable[[], object]) -> tuple[int, int]:
    """The Firestore reads and writes ``block`` made (it must not return False)."""
    with metering.metered() as operations:
        assert block() is not False
    counts = operations.counts()
    return counts[metering.FIRESTORE_READS], counts[metering.FIRESTORE_WRITES]


def test_a_first_claim_and_its_note_are_one_write_each_guarded_by_the_lease(
    stack: Stack,
) -> None:
    """A never-leased cell's claim is one create, its note one guarded write.

    The note's write is guarded by the lease's update time; any write to the lease
    since sends the note to the transaction.

    ``first`` and ``second`` are two worker processes (each remembers its own leases).
    """
    first, second = FirestoreStore(), FirestoreStore()
    run_id = fresh_run(first, 3)
    note = {"status": "started"}

    def claim(store: FirestoreStore, cell: str, lease: float = 60) -> Callable[[], bool]:
        return lambda: store.claim_cell(run_id, cell, lease) == 1

    def opened(store: FirestoreStore, cell: str, claim: int) -> Callable[[], bool]:
        return lambda: store.open_call(
            run_id, f"{cell}.C{claim:03d}", note, cell_id=cell, claim=claim, lease_seconds=60
        )

    # Plain: no read at all, one write for the claim and two for the note.
    assert _reads_writes(claim(first, "a")) == (0, 1)
    assert second.claim_cell(run_id, "a", 60) == CLAIM_HELD  # the create raced and lost
    assert _reads_writes(opened(first, "a", 1)) == (0, 2)
    # Renewed before the note: the guard fails, and the transaction notes it (one read).
    assert _reads_writes(claim(first, "b")) == (0, 1)
    assert first.renew_lease(run_id, "b", 1, 60)
    assert _reads_writes(opened(first, "b", 1)) == (1, 2)
    # Lapsed and claimed by another process: the guard fails and the transaction refuses.
    assert _reads_writes(claim(first, "c", lease=0.5)) == (0, 1)
    time.sleep(0.6)
    assert second.claim_cell(run_id, "c", 60) == 2
    assert not first.open_call(run_id, "c.C001", note, cell_id="c", claim=1, lease_seconds=60)
    assert second.open_call(run_id, "c.C002", note, cell_id="c", claim=2, lease_seconds=60)
    calls = sorted(call["call_id"] for call in first.list_calls(run_id))
    assert calls == ["a.C001", "b.C001", "c.C002"]
    lease = first._run(run_id).collection("leases").document("a").get().to_dict() or {}
    assert (lease["claims"], lease["released"], lease["lapses"]) == (1, False, 0)


def test_a_report_claim_dropped_by_a_reset_cannot_mark_the_run_complete(stack: Stack) -> None:
    store = FirestoreStore()
    run_id = fresh_run(store, 1)
    assert store.record_cell(run_id, "c", {"status": "failed"}, failed=True, shards=SHARDS)
    assert store.claim_report(run_id, 300, "first") == "claimed"
    assert store.claim_report(run_id, 300, "second") == "held"
    assert store.reset_failed_cells(run_id, shards=SHARDS) == 1  # a resume while rendering
    assert not store.finish_report(run_id, "first", 1, {"report": {"x": "stale"}})
    assert (store.get_run(run_id) or {})["status"] == "running"
    assert store.shard_count(run_id, "c", shards=SHARDS) == 0  # the reset uncounted it
    again = store.record_cell(run_id, "c", {"status": "answered"}, failed=False, shards=SHARDS)
    assert (again.stored, again.shard_counted) == (True, 1)
    assert store.claim_report(run_id, 300, "third") == "claimed"
    assert not store.finish_report(run_id, "third", 0, {"report": {"x": "short"}})
    assert store.finish_report(run_id, "third", 1, {"report": {"x": "fresh"}})
    run = store.get_run(run_id) or {}
    assert run["status"] == "complete" and run["report"] == {"x": "fresh"}
    assert (run["done"], run["failed"]) == (1, 0)


def test_a_failed_report_is_recorded_once_held_and_dropped_by_a_reopen(stack: Stack) -> None:
    """Issue 35: ``fail_report`` on Firestore, guarded by the claim, never over a report."""
    import datetime as dt

    store = FirestoreStore()
    run_id = fresh_run(store, 1)
    assert store.record_cell(run_id, "c", {"status": "answered"}, failed=False, shards=SHARDS)
    assert store.claim_report(run_id, 300, "first") == "claimed"
    error = {
        "kind": "report_render",
        "reason": "ValueError: x",
        "failed_at": dt.datetime.now(dt.UTC),
    }
    assert not store.fail_report(run_id, error, claim_id="another")  # not its claim
    assert store.fail_report(run_id, error, claim_id="first")
    run = store.get_run(run_id) or {}
    assert run["status"] == "report_failed" and run["report_error"]["reason"] == "ValueError: x"
    assert "report_claim" not in run and "report_claimed_at" not in run
    assert store.claim_report(run_id, 300, "second") == "failed"  # nothing renders it again
    assert run_id not in {r["run_id"] for r in store.running_runs()}  # nor does the sweep
    store.reopen_report(run_id)  # a resume, or the request sent again
    run = store.get_run(run_id) or {}
    assert run["status"] == "running" and "report_error" not in run
    assert store.claim_report(run_id, 300, "third") == "claimed"
    assert store.finish_report(run_id, "third", 1, {"report": {"x": "fresh"}})
    assert not store.fail_report(run_id, error, claim_id=None)  # never over a written report
    assert (store.get_run(run_id) or {})["status"] == "complete"
