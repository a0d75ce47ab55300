"""A batch job's failed cells: handed on in messages that one module builds and parses."""

from __future__ import annotations

import pytest

from niah.core.request.spec import RunRequest
from niah.core.runs import RunRecord
from niah.errors import BatchJobError
from niah.service.batch.settle import fail_cells
from niah.service.messages import BATCH_FAIL, fail_request
from niah.settings import get_settings
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher


class CountingStore(MemoryStore):
    """Counts how often the run's stored cells are read."""

    def __init__(self) -> None:
        super().__init__()
        self.cell_id_reads = 0

    def cell_ids(self, run_id: str) -> set[str]:
        self.cell_id_reads += 1
        return super().cell_ids(run_id)


def test_a_large_failure_is_handed_on_in_steps_reading_the_stored_cells_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NIAH_BATCH_FAIL_CELLS", "2")
    get_settings.cache_clear()
    store, publisher = CountingStore(), RecordingPublisher()
    store.cells["run-0123456789abcdef"] = {"c0": {"status": "answered"}}
    run = RunRecord("run-0123456789abcdef", RunRequest(), batch_round=1, stamp="s")
    cells = ["c0", "c1", "c2", "c3", "c4"]
    fail_cells(
        run,
        cells,
        BatchJobError("job failed: quota"),
        store=store,
        blobs=MemoryBlobs(),
        publisher=publisher,
    )
    assert store.cell_id_reads == 1
    assert [m["batch_action"] for m in publisher.cells] == [BATCH_FAIL, BATCH_FAIL]
    assert [fail_request(m) for m in publisher.cells] == [
        (["c1", "c2"], "job failed: quota"),
        (["c3", "c4"], "job failed: quota"),
    ]
    assert {(m["run_stamp"], m["batch_round"]) for m in publisher.cells} == {("s", 1)}
