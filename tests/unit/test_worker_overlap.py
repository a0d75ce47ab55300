"""A delivery's three waits at once: the run's liveness, the claim, the call readied.

Once an instance has read a run, a cell of it reads the run's liveness while it claims
the cell and readies its call (``niah.service.cells.prepared``), where the three were in
a row (issue 53's scale bench: Firestore's round trips were most of a cell's overhead).
What a user relies on stays: a cell of a run deleted or cancelled meanwhile is not
answered, and its lease is freed at once, not left to lapse.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from niah.catalog.models import ProviderName
from niah.core.interfaces import Provider
from niah.errors import PromptOverLimitError, StoreUnavailableError
from niah.service.cells import prepared
from niah.service.messages import CellTask
from niah.settings import CONTEXTS_PREFIX
from tests.fake_store import MemoryStore
from tests.fakes import ScriptedProvider
from tests.unit.test_work import dispatch_task, echo_needle_number, run_cell

pytestmark = pytest.mark.unit

# Long enough for a loaded machine; a delivery that waits in a row waits this long, then
# breaks the barrier and the test fails.
BARRIER_SECONDS = 10.0


class GatedStore(MemoryStore):
    """A store whose liveness read and claim can be made to wait for each other."""

    def __init__(self) -> None:
        super().__init__()
        self.gate: threading.Barrier | None = None
        self.liveness_error: Exception | None = None

    def get_run(
        self, run_id: str, *, counts: bool = True, fields: Sequence[str] | None = None
    ) -> dict[str, Any] | None:
        if fields:  # the projected read of the run's stamp and status: its liveness
            if self.liveness_error is not None:
                raise self.liveness_error
            if self.gate is not None:
                self.gate.wait()
        return super().get_run(run_id, counts=counts, fields=fields)

    def claim_cell(
        self, run_id: str, cell_id: str, lease_seconds: float, *, max_lapses: int = 0
    ) -> int:
        if self.gate is not None:
            self.gate.wait()
        return super().claim_cell(run_id, cell_id, lease_seconds, max_lapses=max_lapses)


@pytest.fixture
def world(essay_blobs: Any) -> dict[str, Any]:
    """A run of four cells on a gated store, its first cell answered (the run now known)."""
    made = dispatch_task(essay_blobs, context_lengths=[300, 600], document_depth_percents=[0, 100])
    store = GatedStore()
    store.__dict__.update(made["store"].__dict__ | {"gate": None, "liveness_error": None})
    made["store"] = store
    made["provider"] = ScriptedProvider(echo_needle_number)
    made["readied"] = []  # the cells whose call was readied (their provider looked up)
    assert deliver(made, made["tasks"][0]) == "answered"
    made["readied"].clear()
    return made


def deliver(world: dict[str, Any], task: CellTask) -> str:
    def provider_for(kind: ProviderName, name: str) -> Provider:
        world["readied"].append(task.cell_id)
        if world["store"].gate is not None:
            world["store"].gate.wait()
        return world["provider"]

    return run_cell(world, task, world["provider"], provider_for=provider_for)


def test_the_liveness_read_the_claim_and_the_call_readied_wait_at_once(
    world: dict[str, Any],
) -> None:
    """Each of the three waits for the other two: done in a row, the barrier breaks."""
    world["store"].gate = threading.Barrier(3, timeout=BARRIER_SECONDS)
    assert deliver(world, world["tasks"][1]) == "answered"
    assert not world["store"].gate.broken
    assert len(world["provider"].prompts) == 2


def test_a_cell_of_a_run_deleted_meanwhile_is_not_answered_and_frees_its_lease(
    world: dict[str, Any],
) -> None:
    store, run_id, task = world["store"], world["run_id"], world["tasks"][1]
    del store.runs[run_id]
    assert deliver(world, task) == "orphan"
    assert len(world["provider"].prompts) == 1  # the first cell's call only
    assert store.leases[(run_id, task.cell_id)]["released"] is True
    assert task.cell_id not in store.cells.get(run_id, {})


def test_a_cancelled_run_s_cells_are_dropped_and_only_the_first_readies_a_call(
    world: dict[str, Any],
) -> None:
    """The first delivery after the cancel learns it; the instance's next read first."""
    store, run_id = world["store"], world["run_id"]
    assert store.cancel_run(run_id) == "cancelled"
    outcomes = [deliver(world, task) for task in world["tasks"][1:]]
    assert outcomes == ["cancelled"] * 3
    assert len(world["provider"].prompts) == 1
    assert world["readied"] == [world["tasks"][1].cell_id]
    assert all(store.leases[(run_id, t.cell_id)]["released"] for t in world["tasks"][1:2])
    assert not store.leased_cells(run_id)
    assert set(store.cells.get(run_id, {})) == {world["tasks"][0].cell_id}


def test_a_liveness_read_that_fails_frees_the_claim_and_is_redelivered(
    world: dict[str, Any],
) -> None:
    store, run_id, task = world["store"], world["run_id"], world["tasks"][1]
    store.liveness_error = StoreUnavailableError("Firestore is unreachable")
    with pytest.raises(StoreUnavailableError):
        deliver(world, task)
    assert store.leases[(run_id, task.cell_id)]["released"] is True
    assert len(world["provider"].prompts) == 1
    store.liveness_error = None
    assert deliver(world, task) == "answered"  # claimed at once, not after the lease
    assert store.leases[(run_id, task.cell_id)]["claims"] == 2


def test_a_prompt_refused_over_the_limit_is_saved_and_never_sent(
    essay_blobs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readied early, a refused prompt is still kept for ``save_contexts``, as before."""

    def over_the_limit(*args: Any, **kwargs: Any) -> int:
        raise PromptOverLimitError("context_lengths: the prompt is above the input limit")

    monkeypatch.setattr(prepared, "count_before_call", over_the_limit)
    made = dispatch_task(essay_blobs, save_contexts=True)
    provider = ScriptedProvider(echo_needle_number)
    (task,) = made["tasks"]
    assert run_cell(made, task, provider) == "failed"
    assert provider.prompts == []
    (cell,) = made["store"].list_cells(made["run_id"])
    assert cell["error"]["kind"] == PromptOverLimitError.kind
    saved = f"{CONTEXTS_PREFIX}{made['run_id']}/{task.cell_id}.txt"
    assert [info.name for info in essay_blobs.list(saved)] == [saved]
    assert "special magic" in essay_blobs.read(saved).decode()
