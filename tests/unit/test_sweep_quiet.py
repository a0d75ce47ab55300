"""Issue 39: a run whose messages were lost is found by what its leases say, not a window.

Before, a message lost with a dead worker (or a dispatcher killed before it published)
waited for the stall window: 2 hours deployed. A quiet run (no lease live anywhere, no
progress and no retryable failure for ``sweep_quiet_after_seconds``) is handed on by
the next sweep.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from niah.service.runs.dispatch import dispatch_run
from niah.service.runs.sweep import sweep_stalled_runs
from niah.settings import get_settings
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher

# A Gemini model: its runs are dispatched cache-aware, the primer first (the 2,500-token
# cell at depth 100 shares more than the 2,048 tokens the cache serves).
GRID = {
    "model_name": "gemini-3.8-flash",
    "context_lengths": [2500, 3000],
    "document_depth_percents": [0, 100],
}


@pytest.fixture(autouse=True)
def cache_aware(monkeypatch: pytest.MonkeyPatch) -> None:
    """As deployed: the primer first, the rest once it is answered."""
    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "cache_aware")
    get_settings.cache_clear()


# The production stall window: nothing here may rely on it.
STALL = 7200.0


def dispatched(
    essay_blobs: MemoryBlobs, seed: int = 0
) -> tuple[MemoryStore, RecordingPublisher, str]:
    store, publisher = MemoryStore(), RecordingPublisher()
    result = dispatch_run(
        {**GRID, "seed": seed}, store=store, publisher=publisher, blobs=essay_blobs
    )
    return store, publisher, result.run_id


def idle(store: MemoryStore, run_id: str, seconds: float) -> None:
    """The run's last progress (and creation) ``seconds`` ago."""
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)
    store.runs[run_id]["created_at"] = store.runs[run_id]["updated_at"] = past


def sweep(store: MemoryStore, publisher: RecordingPublisher) -> dict[str, int]:
    publisher.cells.clear()
    return sweep_stalled_runs(store=store, publisher=publisher, stalled_after_seconds=STALL)


def cells(publisher: RecordingPublisher) -> list[str]:
    return sorted(str(m["cell_id"]) for m in publisher.cells)


def test_a_primer_lost_before_delivery_is_published_again_alone(essay_blobs: MemoryBlobs) -> None:
    """The primer's push died with its worker, or the dispatcher before publishing it.

    The primer is published again alone, so the cache order is kept.
    """
    store, publisher, run_id = dispatched(essay_blobs)
    primer = store.runs[run_id]["primer_cell"]
    quiet = get_settings().sweep_quiet_after_seconds
    idle(store, run_id, quiet - 5)
    assert sweep(store, publisher)["runs_lost"] == 0 and publisher.cells == []
    idle(store, run_id, quiet + 1)
    result = sweep(store, publisher)
    assert result["runs_lost"] == 1 and result["runs_swept"] == 0
    assert cells(publisher) == [primer]
    assert publisher.cells[0]["primer"] is True
    # Its note is the run's progress: the next sweep waits another quiet spell.
    assert sweep(store, publisher)["runs_lost"] == 0 and publisher.cells == []


def test_a_release_lost_after_the_primer_was_stored_is_done(essay_blobs: MemoryBlobs) -> None:
    store, publisher, run_id = dispatched(essay_blobs)
    primer = store.runs[run_id]["primer_cell"]
    store.record_cell(run_id, primer, {"status": "answered"}, failed=False, shards=1)
    idle(store, run_id, 60)
    result = sweep(store, publisher)
    assert result["runs_lost"] == 1
    assert len(cells(publisher)) == 3 and primer not in cells(publisher)
    assert store.runs[run_id]["primer_released"] is True


def test_released_cells_lost_are_published_again_and_only_they(essay_blobs: MemoryBlobs) -> None:
    store, publisher, run_id = dispatched(essay_blobs)
    primer = store.runs[run_id]["primer_cell"]
    store.record_cell(run_id, primer, {"status": "answered"}, failed=False, shards=1)
    store.runs[run_id]["primer_released"] = True
    others = [c for c in cells_of(store, run_id) if c != primer]
    store.record_cell(run_id, others[0], {"status": "answered"}, failed=False, shards=1)
    idle(store, run_id, 60)
    assert sweep(store, publisher)["runs_lost"] == 1
    assert cells(publisher) == sorted(others[1:])


def cells_of(store: MemoryStore, run_id: str) -> list[str]:
    from niah.core.runs import RunRecord
    from niah.service.messages import cell_messages

    run = RunRecord.from_document(store.runs[run_id], run_id)
    return [str(m["cell_id"]) for m in cell_messages(run)]


def released_and_idle(essay_blobs: MemoryBlobs, seed: int = 0) -> tuple[Any, Any, str, list[str]]:
    store, publisher, run_id = dispatched(essay_blobs, seed)
    store.runs[run_id]["primer_released"] = True
    idle(store, run_id, 60)
    return store, publisher, run_id, cells_of(store, run_id)


def test_a_run_at_work_is_not_quiet(essay_blobs: MemoryBlobs) -> None:
    """A live lease of the run: its holder's delivery is the one that stores it."""
    store, publisher, run_id, ids = released_and_idle(essay_blobs)
    store.claim_cell(run_id, ids[0], 60)
    assert sweep(store, publisher)["runs_lost"] == 0 and publisher.cells == []


def test_a_run_behind_another_runs_work_is_not_quiet(essay_blobs: MemoryBlobs) -> None:
    """A live lease anywhere: the fleet is busy, and the run may be queued behind it."""
    store, publisher, _, _ = released_and_idle(essay_blobs)
    other = dispatch_run(
        {**GRID, "seed": 9}, store=store, publisher=publisher, blobs=essay_blobs
    ).run_id
    store.claim_cell(other, store.runs[other]["primer_cell"], 60)
    result = sweep(store, publisher)
    assert result["runs_lost"] == 0 and publisher.cells == []


def test_a_run_in_retry_backoff_is_not_quiet(essay_blobs: MemoryBlobs) -> None:
    """A retryable failure within Pub/Sub's maximum backoff: its redelivery is due."""
    store, publisher, run_id, ids = released_and_idle(essay_blobs)
    store.note_attempt(run_id, ids[1], "429 RESOURCE_EXHAUSTED")
    assert sweep(store, publisher)["runs_lost"] == 0 and publisher.cells == []
    store.attempts[(run_id, ids[1])]["at"] -= get_settings().sweep_retry_backoff_seconds + 1
    assert sweep(store, publisher)["runs_lost"] == 1
    assert cells(publisher) == sorted(ids)


def test_a_death_hands_on_the_run_s_lost_cells_in_the_same_pass(essay_blobs: MemoryBlobs) -> None:
    """A lapsed lease: its worker may have taken other pushes with it.

    The run is busy (another cell leased) and not idle, yet its unheld cells go at
    once, each once.
    """
    store, publisher, run_id, ids = released_and_idle(essay_blobs)
    store.claim_cell(run_id, ids[0], 60)
    store.lapse(run_id, ids[0])
    store.claim_cell(run_id, ids[1], 60)  # alive: left to its holder
    store.runs[run_id]["updated_at"] = dt.datetime.now(dt.UTC)
    result = sweep(store, publisher)
    assert (result["cells_handed_on"], result["runs_lost"]) == (1, 1)
    assert cells(publisher) == sorted([ids[0], *ids[2:]])
    # Nothing new died: the next pass publishes nothing.
    assert sweep(store, publisher)["cells_republished"] == 0 and publisher.cells == []


def test_a_delivery_that_took_a_dead_holders_cell_over_is_a_death_too(
    essay_blobs: MemoryBlobs,
) -> None:
    """The killed worker's cell, redelivered, is claimed before a sweep sees it lapse.

    The takeover is the sign, and the run's other unheld cells go.
    """
    store, publisher, run_id, ids = released_and_idle(essay_blobs)
    store.claim_cell(run_id, ids[0], 60)
    store.lapse(run_id, ids[0])
    store.claim_cell(run_id, ids[0], 60)  # the redelivery's takeover
    store.runs[run_id]["updated_at"] = dt.datetime.now(dt.UTC)
    assert sweep(store, publisher)["runs_lost"] == 1
    assert cells(publisher) == sorted(ids[1:])
    assert sweep(store, publisher)["runs_lost"] == 0


def test_a_run_nobody_died_on_is_left_while_busy(essay_blobs: MemoryBlobs) -> None:
    """A healthy run mid-way: some cells leased, others waiting their turn in Pub/Sub."""
    store, publisher, run_id, ids = released_and_idle(essay_blobs)
    store.claim_cell(run_id, ids[0], 60)
    store.record_cell(run_id, ids[1], {"status": "answered"}, failed=False, shards=1)
    result = sweep(store, publisher)
    assert result == {
        "runs_swept": 0,
        "runs_lost": 0,
        "cells_republished": 0,
        "cells_handed_on": 0,
    }


def test_a_running_document_with_no_request_is_left_alone() -> None:
    """Before: read with the default request, its 225 cells were published every sweep.

    A document nobody admitted (a test's, one made by hand) has no request to act on;
    the stack's side tier saw 1,801 such messages dropped as malformed by the worker.
    """
    store, publisher = MemoryStore(), RecordingPublisher()
    assert store.create_run("errors-test-1", {"total": 1, "status": "running"})
    idle(store, "errors-test-1", STALL * 2)
    tally = sweep(store, publisher)
    assert publisher.cells == [] and publisher.reports == []
    assert tally == {"runs_swept": 0, "runs_lost": 0, "cells_republished": 0, "cells_handed_on": 0}
    assert store.runs["errors-test-1"] == {**store.runs["errors-test-1"], "status": "running"}
