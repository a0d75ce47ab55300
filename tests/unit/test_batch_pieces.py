"""A batch ingest piece whose worker dies is asked again within a lease and a sweep (issue 39).

Before, only a poll that found coverage not grown for twice ``batch_ingest_seconds``
(8 minutes deployed) asked a dead piece again. A piece now holds a lease while it
reads (``niah.service.batch.pieces``): the sweep asks again a piece whose lease lapsed
unreleased, and never one that is reading, queued or done.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from niah.core.interfaces import Recorded
from niah.errors import CellInFlightError
from niah.service.runs.sweep import sweep_stalled_runs
from niah.settings import get_settings
from niah_devtools.standin import StandinState
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs
from tests.unit.test_batch_runs import BODY, ingest_started, ingests, world
from tests.unit.test_vertex_standin import standin  # noqa: F401 (the fixture)

# Each line scored exact and by the judge: a judge call per line the stand-in counts.
JUDGED = BODY | {"scorer": "both", "evaluator_model_name": "gemini-3.8-flash"}


class Killed(BaseException):
    """The worker's process dies here: nothing after it runs."""


class KilledMidPiece(MemoryStore):
    """A store whose worker is killed as it stores its ``at``-th cell.

    From then on the dead process writes nothing: the leases it held are neither
    renewed (its keeper threads) nor released (its ``finally`` blocks), so they lapse
    as a SIGKILL leaves them.
    """

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.recorded = at, 0
        self.dead: set[tuple[str, str, int | None]] = set()

    def record_cell(self, run_id: str, cell_id: str, doc: dict[str, Any], **kw: Any) -> Recorded:
        self.recorded += 1
        if self.recorded == self.at:
            self.dead = {
                (run, lease_id, lease.get("claims"))
                for (run, lease_id), lease in self.leases.items()
                if not lease.get("released")
            }
            raise Killed
        return super().record_cell(run_id, cell_id, doc, **kw)

    def renew_lease(self, run_id: str, cell_id: str, claim: int, lease_seconds: float) -> bool:
        if (run_id, cell_id, claim) in self.dead:
            return True  # as the keeper of a dead process sees it: nothing written
        return super().renew_lease(run_id, cell_id, claim, lease_seconds)

    def release_cell(self, run_id: str, cell_id: str, claim: int | None = None) -> None:
        if (run_id, cell_id, claim) not in self.dead:
            super().release_cell(run_id, cell_id, claim)


def sweep(w: dict[str, Any]) -> list[dict[str, Any]]:
    """One pass of the sweep: the ingest pieces it published."""
    before = len(w["publisher"].cells)
    sweep_stalled_runs(store=w["store"], publisher=w["publisher"], stalled_after_seconds=3600)
    return ingests(w["publisher"].cells[before:])


def calls(w: dict[str, Any], kind: str) -> int:
    """The stand-in's calls of ``kind``: ``generate`` (the judge's here), ``batch_line``."""
    return sum(r["kind"] == kind for r in w["state"].requests)


def test_a_piece_whose_worker_died_is_asked_again_by_the_sweep_once_its_lease_lapses(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    short_leases: float,
) -> None:
    store = KilledMidPiece(at=3)  # killed storing the third line: two stored, three judged
    w = world(standin, essay_blobs, JUDGED, store=store, batch_delay_seconds=0.1)
    piece = ingest_started(w)
    run_id = w["run_id"]
    with pytest.raises(Killed):
        w["step"](piece)
    assert (len(store.cell_ids(run_id)), calls(w, "generate")) == (2, 3)  # mid-piece
    assert sweep(w) == []  # its lease still runs: the holder may be alive
    time.sleep(short_leases + 0.1)
    (again,) = sweep(w)  # lapsed unreleased: its holder died; asked again at once
    assert [again[k] for k in ("job", "file", "start", "end")] == [
        piece[k] for k in ("job", "file", "start", "end")
    ]
    assert sweep(w) == []  # once
    assert w["step"](again) == "settled"
    run = store.get_run(run_id) or {}
    (job,) = run["batch_jobs"]
    assert job["ingested"] and (job["lines_stored"], job["lines_duplicate"]) == (6, 2)
    assert len(store.list_cells(run_id)) == 6 and run["done"] == 6
    # The two stored lines were skipped before scoring; only the one cut off is judged
    # again. Each line was answered once, in the job.
    assert (calls(w, "generate"), calls(w, "batch_line")) == (6 + 1, 6)


def test_a_reading_or_queued_piece_is_never_asked_again_and_a_second_delivery_backs_off(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    short_leases: float,
) -> None:
    # Each judge call takes 0.6 s: the piece reads for about 3.6 leases.
    w = world(standin, essay_blobs, JUDGED, batch_delay_seconds=0.1, latency_seconds=0.6)
    piece = ingest_started(w)
    time.sleep(short_leases + 0.1)
    assert sweep(w) == []  # published, not delivered: no lease, yet nothing lapsed
    outcome: list[str] = []
    reading = threading.Thread(target=lambda: outcome.append(w["step"](piece)))
    started = time.monotonic()
    reading.start()
    while calls(w, "generate") < 1:
        time.sleep(0.02)
    with pytest.raises(CellInFlightError):
        w["step"](piece)  # the same piece delivered again while it reads
    asked_again = []
    while reading.is_alive():
        asked_again += sweep(w)
        time.sleep(0.2)
    assert time.monotonic() - started > 3 * short_leases  # it read past three leases
    assert asked_again == [] and outcome == ["settled"]  # renewed: never taken for dead
    assert calls(w, "generate") == 6  # each line judged once
    (job,) = w["store"].get_run(w["run_id"])["batch_jobs"]
    assert (job["lines_stored"], job["lines_duplicate"]) == (6, 0)


def test_a_piece_that_handed_on_is_not_asked_again_while_its_rest_waits(
    standin: tuple[str, StandinState],  # noqa: F811
    essay_blobs: MemoryBlobs,
    short_leases: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NIAH_BATCH_INGEST_SECONDS", "0.000001")  # one line, then hand on
    get_settings.cache_clear()
    w = world(standin, essay_blobs, batch_delay_seconds=0.1)
    piece = ingest_started(w)
    assert w["step"](piece) == "handed on"
    time.sleep(short_leases + 0.1)
    # Its lease released, the rest's not yet taken (queued): neither is a dead piece.
    assert sweep(w) == []
    assert len(ingests(w["publisher"].cells)) == 2  # the piece and its hand-on, no more
