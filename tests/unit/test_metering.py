"""Operations counted at the adapters, per request, in Google's billing units."""

from __future__ import annotations

import contextvars
import threading
from typing import Any, cast

import pytest

from niah.cloud import metering
from niah.cloud.metering import FIRESTORE_READS, FIRESTORE_WRITES, KINDS, metered
from niah.core.interfaces import BlobInfo, ResultStore
from tests.fakes import MemoryBlobs


def test_counts_go_to_the_request_around_them_and_nowhere_outside() -> None:
    metering.count(FIRESTORE_WRITES, 5)  # no request: kept nowhere
    with metered() as outer:
        metering.count(FIRESTORE_WRITES)
        metering.reads(0)  # an empty query still bills one read
        metering.reads(3)
        with metered() as inner:
            metering.count(FIRESTORE_WRITES, 2)
        metering.count(FIRESTORE_WRITES)
    assert outer.counts() == dict.fromkeys(KINDS, 0) | {FIRESTORE_READS: 4, FIRESTORE_WRITES: 2}
    assert inner.counts()[FIRESTORE_WRITES] == 2


def test_a_thread_started_in_the_requests_context_counts_into_it() -> None:
    with metered() as operations:
        context = contextvars.copy_context()
        threads = [
            threading.Thread(target=context.run, args=(lambda: metering.reads(1),))
            for _ in range(1)
        ] + [threading.Thread(target=lambda: metering.reads(1))]  # no context: not counted
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert operations.counts()[FIRESTORE_READS] == 1


def test_the_lease_keepers_renewals_count_with_the_cell() -> None:
    from niah.service.lease import LeaseKeeper

    class CountingStore:
        def renew_lease(self, *args: Any) -> bool:
            metering.reads(1)
            metering.count(FIRESTORE_WRITES)
            return True

    store = cast(ResultStore, CountingStore())  # only the lease's calls are used
    with metered() as operations, LeaseKeeper(store, "r", "c", 1, 0.15):
        threading.Event().wait(0.4)
    counts = operations.counts()
    assert counts[FIRESTORE_READS] == counts[FIRESTORE_WRITES] >= 2


def test_a_haystack_listed_on_the_run_is_not_listed_again_until_the_cache_is_cold(
    essay_blobs: MemoryBlobs,
) -> None:
    """Before: every cell listed the haystack's prefix in the bucket (a class A call)."""
    from niah.core.prompts.haystack_files import haystack_files
    from niah.core.prompts.haystack_tokens import load_haystack, loaded_haystacks
    from niah.models.tokenizer import get_tokenizer

    prefix = "haystacks/paul_graham_essays/"
    files = haystack_files(essay_blobs, prefix)
    tokenizer = get_tokenizer()
    loaded_haystacks.clear()
    lists: list[str] = []
    real_list = essay_blobs.list

    def counted(prefix: str) -> list[BlobInfo]:
        lists.append(prefix)
        return real_list(prefix)

    essay_blobs.list = counted  # type: ignore[method-assign]
    first = load_haystack(essay_blobs, prefix, tokenizer, files)  # cold: checked once
    for _ in range(5):
        assert load_haystack(essay_blobs, prefix, tokenizer, files) is first
    assert lists == [prefix]
    # The bucket's files changed after the run was made: refused, not cached as the run's.
    from niah.errors import HaystackError

    loaded_haystacks.clear()
    changed = [BlobInfo(f.name, f.size, "other") for f in files]
    with pytest.raises(HaystackError, match="changed after the run was created"):
        load_haystack(essay_blobs, prefix, tokenizer, changed)


def _run_of_120_cells(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch, *, most_shards: int
) -> dict[str, Any]:
    """A dispatched run of 120 cells, published in grid order, on at most ``most_shards``."""
    from niah.settings import get_settings
    from tests.unit.test_work import dispatch_task

    monkeypatch.setenv("NIAH_COUNTER_SHARDS", str(most_shards))
    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "naive")
    get_settings.cache_clear()
    return dispatch_task(
        essay_blobs,
        context_lengths=[300, 400, 500, 600],
        document_depth_percents=[0, 25, 50, 75, 100],
        samples_per_cell=6,
    )


def test_only_the_last_cell_of_each_shard_counts_the_run(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: every stored cell counted the run, reading n/1,000 each.

    That was 10.5 reads a sample at 10,000 against 6.1 at 1,000. Now a cell reads its
    own shard; the run is counted once per shard at most, and the report is still asked
    for exactly once, at the end.
    """
    from niah.core.results.counters import shard_of

    world = _run_of_120_cells(essay_blobs, monkeypatch, most_shards=4)
    store, tasks = world["store"], world["tasks"]
    assert len(tasks) == 120
    counted = _run_all_cells_counting_the_run(world)
    assert 1 <= len(counted) <= 4  # the last cell of each shard, at most
    assert world["publisher"].reports == [world["run_id"]]
    totals = store.runs[world["run_id"]]["shard_totals"]
    assert sum(totals.values()) == 120
    assert totals == {
        shard: sum(shard_of(t.cell_id, 4) == shard for t in tasks) for shard in totals
    }


def test_a_run_gets_one_counter_shard_per_32_cells_up_to_the_setting() -> None:
    from niah.core.results.counters import shards_for

    sizes = [1, 32, 33, 100, 1_000, 1_024, 1_025, 10_000]
    assert [shards_for(total, 32) for total in sizes] == [1, 1, 2, 4, 32, 32, 32, 32]
    assert shards_for(0, 32) == 1
    assert shards_for(10_000, 500) == 313


def _run_all_cells_counting_the_run(world: dict[str, Any]) -> list[str]:
    """Every cell of ``world`` answered; the run IDs the completion checks counted.

    Each shard read is noted in ``world["shard_reads"]``.
    """
    from tests.fakes import ScriptedProvider
    from tests.unit.test_work import echo_needle_number, run_cell

    store = world["store"]
    counted: list[str] = []
    real_count, real_shard_count = store.count_cells, store.shard_count
    world["shard_reads"] = 0

    def count_cells(run_id: str) -> int:
        counted.append(run_id)
        return int(real_count(run_id))

    def shard_count(run_id: str, cell_id: str, *, shards: int) -> int:
        world["shard_reads"] += 1
        return int(real_shard_count(run_id, cell_id, shards=shards))

    store.count_cells, store.shard_count = count_cells, shard_count
    provider = ScriptedProvider(echo_needle_number)
    for task in world["tasks"]:
        assert run_cell(world, task, provider) == "answered"
    return counted


def test_a_run_counts_on_its_own_shards_whatever_the_setting_says_later(
    essay_blobs: MemoryBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of 100 cells gets 4 shards, kept on it.

    A deployment changed meanwhile (``NIAH_COUNTER_SHARDS``) neither stalls it nor has
    every cell count the run.
    """
    from niah.core.results.counters import shard_of
    from niah.settings import get_settings
    from tests.unit.test_work import dispatch_task

    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "naive")
    get_settings.cache_clear()
    world = dispatch_task(
        essay_blobs,
        context_lengths=[300, 400, 500, 600, 700],
        document_depth_percents=[0, 25, 50, 75, 100],
        samples_per_cell=4,
    )
    run = world["store"].runs[world["run_id"]]
    assert (run["total"], run["counter_shards"]) == (100, 4)
    assert run["shard_totals"] == {
        shard: sum(shard_of(t.cell_id, 4) == shard for t in world["tasks"])
        for shard in ("000", "001", "002", "003")
    }
    monkeypatch.setenv("NIAH_COUNTER_SHARDS", "7")  # redeployed mid-run
    get_settings.cache_clear()
    counted = _run_all_cells_counting_the_run(world)
    assert 1 <= len(counted) <= 4  # the last cell of each of its 4 shards, at most
    assert world["publisher"].reports == [world["run_id"]]
    assert world["shard_reads"] == 0  # each store returned its shard's count


class _Clock:
    """A clock that moves only when a fake call says it waited."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(metering, "_clock", fake)
    return fake


def _adapter(clock: _Clock) -> Any:
    @metering.waits_on(metering.FIRESTORE)
    class Store:
        def get(self, seconds: float) -> str:
            clock.now += seconds
            return "got"

        def get_twice(self, seconds: float) -> None:
            self.get(seconds)  # a public method calling another: timed once, outermost
            self.get(seconds)

        def _private(self, seconds: float) -> None:
            clock.now += seconds

    @metering.waits_on(metering.PUBSUB)
    class Bus:
        def publish(self, seconds: float) -> None:
            clock.now += seconds
            raise TimeoutError("the publish timed out")

    return Store(), Bus()


def test_each_systems_calls_are_timed_into_the_request_once(clock: _Clock) -> None:
    store, bus = _adapter(clock)
    store.get(5.0)  # no request: kept nowhere
    with metered() as operations:
        assert store.get(0.25) == "got"
        store.get_twice(0.5)
        store._private(9.0)  # not a call to the system: not timed
        with pytest.raises(TimeoutError):
            bus.publish(0.125)  # a failed call waited too
        count = metering.waiting_on(metering.COUNT_TOKENS, lambda seconds: store.get(seconds))
        count(0.75)  # a function timed: the store call inside it is not counted again
    assert operations.waits() == {
        metering.FIRESTORE: 1.25,
        metering.PUBSUB: 0.125,
        metering.STORAGE: 0.0,
        metering.COUNT_TOKENS: 0.75,
        metering.BACKGROUND: 0.0,
    }


def test_a_thread_the_request_started_waits_apart_from_its_path(clock: _Clock) -> None:
    store, _ = _adapter(clock)
    with metered() as operations:
        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(store.get, 2.0))
        thread.start()
        thread.join()
        store.get(0.5)
    assert operations.waits()[metering.FIRESTORE] == 0.5
    assert operations.waits()[metering.BACKGROUND] == 2.0


def test_the_adapters_time_their_calls() -> None:
    """Every adapter class the worker uses is timed, under the system it calls."""
    from niah.cloud.blobs import GcsBlobStore
    from niah.cloud.bus import PubSubPublisher
    from niah.cloud.spend_ledger import FirestoreSpendLedger
    from niah.cloud.store import FirestoreStore

    timed = {
        GcsBlobStore.read: metering.STORAGE,
        PubSubPublisher.publish_cells: metering.PUBSUB,
        FirestoreStore.claim_cell: metering.FIRESTORE,
        FirestoreStore.record_cell: metering.FIRESTORE,
        FirestoreStore.get_run: metering.FIRESTORE,
        FirestoreSpendLedger.reserve: metering.FIRESTORE,
    }
    for method, system in timed.items():
        assert getattr(method, "waits_on", None) == system, method.__qualname__
