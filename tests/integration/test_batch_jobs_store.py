"""Two batch jobs of one run settling at once, on the Firestore emulator (issue 52).

Before, a job's state lived in one ``batch_jobs`` array on the run document, written
whole: two settles that read the run before either wrote it each wrote back the other's
job unsettled, so one flag was dropped and that job was settled again. Each job's state
is now its own document (``runs/{run}/batch_jobs/{key}``), so each settle writes only
its own. The two settles are held in step (each read of the run waits for the other's)
so both read before either writes, every time.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from niah.cloud.store import FirestoreStore
from niah.settings import get_settings
from niah_devtools.standin import StandinState
from tests.fakes import MemoryBlobs
from tests.integration.conftest import Stack
from tests.unit.test_batch_runs import world
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)

pytestmark = pytest.mark.integration


class InStep:
    """The emulator-backed store, whose run reads wait for each other's while armed."""

    def __init__(self, store: FirestoreStore) -> None:
        self.store = store
        self.barrier: threading.Barrier | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def get_run(self, run_id: str, **kwargs: Any) -> dict[str, Any] | None:
        run = self.store.get_run(run_id, **kwargs)
        if self.barrier is not None:
            # Broken: the two paths parted (one read more than the other); run on freely.
            with contextlib.suppress(threading.BrokenBarrierError):
                self.barrier.wait(timeout=5)
        return run


@pytest.fixture
def two_jobs_a_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("NIAH_BATCH_MAX_LINES", "3")  # 6 cells: two jobs of 3 lines
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_two_jobs_settling_at_once_both_keep_their_settled_flag(
    stack: Stack,
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    two_jobs_a_run: None,
) -> None:
    store = InStep(FirestoreStore())
    w = world(standin, essay_blobs, store=store, batch_delay_seconds=0.1)  # type: ignore[arg-type]
    assert w["step"](w["publisher"].cells[0]) == "submitted"
    run_id = w["run_id"]
    for _ in range(200):  # until both jobs' output is being read: one piece each
        w["step"]({"run_id": run_id, "batch_action": "poll"})
        jobs = (store.get_run(run_id) or {})["batch_jobs"]
        if len(jobs) == 2 and all("ingest" in job for job in jobs):
            break
        threading.Event().wait(0.05)
    pieces = [m for m in w["publisher"].cells if m.get("batch_action") == "ingest"]
    assert len(pieces) == 2 and {p["job"] for p in pieces} == {j["name"] for j in jobs}

    store.barrier = threading.Barrier(2)
    outcomes: dict[str, str] = {}
    threads = [
        threading.Thread(target=lambda p=piece: outcomes.update({p["job"]: w["step"](p)}))
        for piece in pieces
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    store.barrier = None
    assert sorted(outcomes.values()) == ["settled", "settled"]  # each piece settled its job
    jobs = (store.get_run(run_id) or {})["batch_jobs"]
    assert [bool(job.get("ingested")) for job in jobs] == [True, True]
    assert [job["lines_stored"] for job in jobs] == [3, 3]
    cells = store.list_cells(run_id)
    assert len(cells) == 6 and {c["status"] for c in cells} == {"answered"}
