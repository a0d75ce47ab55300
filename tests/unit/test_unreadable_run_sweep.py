"""One running run this version cannot read never stops the sweep of the others (issue 53).

The sweep reads every running run; before, ``StoredRunError`` from one (its stored spec
refused by this version's checks) went up out of the sweep, so no run was swept: no
lost message published again, no report asked for, for as long as that run stayed
running. Now that run is left as stored, named in one ERROR line, and the others are
swept exactly as they are in a store without it.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest

from niah.service.runs.dispatch import dispatch_run
from niah.service.runs.sweep import sweep_stalled_runs
from niah.settings import get_settings
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher
from tests.unit.test_unreadable_run_push import PROBLEM, REFUSED

STALL = 7200.0  # the production stall window: the quiet rule and lapsed leases act first
SWEPT = "(written by the sweep)"


def running(store: MemoryStore, blobs: MemoryBlobs, seed: int) -> tuple[str, list[str]]:
    """A dispatched local-model run of four cells, quiet for longer than the quiet rule.

    Its ID and its cells' IDs.
    """
    published = RecordingPublisher()
    run_id = dispatch_run(
        {"context_lengths": [300, 600], "document_depth_percents": [0, 100], "seed": seed},
        store=store,
        publisher=published,
        blobs=blobs,
    ).run_id
    past = dt.datetime.now(dt.UTC) - dt.timedelta(
        seconds=get_settings().sweep_quiet_after_seconds + 1
    )
    store.runs[run_id]["created_at"] = store.runs[run_id]["updated_at"] = past
    return run_id, sorted(str(m["cell_id"]) for m in published.cells)


def owned(key: Any, run_id: str) -> bool:
    """Whether a key of one of the store's maps is the run's (its ID, or a pair with it)."""
    return key == run_id or (isinstance(key, tuple) and key[0] == run_id)


def without(store: MemoryStore, run_id: str) -> MemoryStore:
    """A copy of ``store`` that never held ``run_id``."""
    copied = copy.deepcopy(store)
    for held in vars(copied).values():
        for key in [key for key in held if owned(key, run_id)]:
            del held[key]
    return copied


def part(store: MemoryStore, run_id: str) -> dict[str, Any]:
    """What ``store`` holds of ``run_id``, map by map."""
    return copy.deepcopy(
        {
            name: {k: v for k, v in held.items() if owned(k, run_id)}
            for name, held in vars(store).items()
        }
    )


def settled(store: MemoryStore, since: dt.datetime) -> dict[str, Any]:
    """All ``store`` holds, each time the sweep wrote (at or after ``since``) one marker."""

    def mark(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: mark(item) for key, item in value.items()}
        if isinstance(value, list):
            return [mark(item) for item in value]
        if isinstance(value, dt.datetime) and value >= since:
            return SWEPT
        return value

    return {name: mark(held) for name, held in copy.deepcopy(vars(store)).items()}


def test_a_running_run_this_version_cannot_read_is_skipped_in_one_error_line(
    essay_blobs: MemoryBlobs, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the sweep raised ``StoredRunError`` and swept nothing.

    A run whose holder died (a lease lapsed) and a quiet run are swept on either side of
    the unreadable one: the tally, what is published and every stored document (the
    sweep's own timestamps aside) equal a sweep of the store without it; of the
    unreadable run nothing changes.
    """
    store = MemoryStore()
    (died, cells), (unreadable, _), (quiet, _) = (
        running(store, essay_blobs, seed) for seed in (1, 2, 3)
    )
    assert store.claim_cell(died, cells[0], 600) > 0
    store.lapse(died, cells[0])
    store.runs[unreadable]["spec"] |= REFUSED
    before = part(store, unreadable)
    alone, expected = without(store, unreadable), RecordingPublisher()
    started = dt.datetime.now(dt.UTC)
    tally_alone = sweep_stalled_runs(store=alone, publisher=expected, stalled_after_seconds=STALL)
    capsys.readouterr()

    published = RecordingPublisher()
    tally = sweep_stalled_runs(store=store, publisher=published, stalled_after_seconds=STALL)

    lines = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
    errors = [line for line in lines if line["severity"] == "ERROR"]
    assert [(line["run_id"], line["problem"]) for line in errors] == [(unreadable, PROBLEM)]
    assert tally == tally_alone
    assert (tally["runs_lost"], tally["cells_handed_on"]) == (2, 1)  # both were swept
    assert vars(published) == vars(expected)
    assert {m["run_id"] for m in published.cells} == {died, quiet}
    assert settled(without(store, unreadable), started) == settled(alone, started)
    assert part(store, unreadable) == before
