"""Issue 35: a report that cannot be made is recorded on its run, not retried forever."""

from __future__ import annotations

import json
from typing import Any

import pytest

from niah.core.pages.run_index import build_index
from niah.core.runs import RunRecord, listed_runs
from niah.errors import CloudUnavailableError
from niah.service.reports import render as report
from niah.service.reports.render import render_report
from niah.service.runs.completion import record_report_dead_letter, request_report_if_complete
from niah.service.runs.sweep import sweep_stalled_runs
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher
from tests.unit.test_report import CELLS


def finished_run(store: MemoryStore, run_id: str = "r") -> None:
    spec = {"context_lengths": [1000, 2000], "document_depth_percents": [0, 50]}
    store.create_run(
        run_id, {"run_id": run_id, "total": 4, "model": "m", "status": "running", "spec": spec}
    )
    for cell in CELLS:
        store.record_cell(run_id, cell["cell_id"], cell, failed=cell["score"] is None, shards=1)


def broken_heatmap(*args: Any, **kwargs: Any) -> bytes:
    raise ValueError("bad data: cannot draw this")


def test_a_report_that_cannot_be_drawn_is_recorded_on_the_run_and_acknowledged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: the error escaped, Pub/Sub redelivered, and the run stayed "running"."""
    store, blobs, publisher = MemoryStore(), MemoryBlobs(), RecordingPublisher()
    finished_run(store)
    monkeypatch.setattr(report, "render_heatmap", broken_heatmap)
    assert render_report("r", store=store, blobs=blobs) is None  # acknowledged, no raise
    run = store.runs["r"]
    assert run["status"] == "report_failed" and "report_claim" not in run
    assert run["report_error"]["kind"] == "report_render"
    assert run["report_error"]["reason"] == "ValueError: bad data: cannot draw this"
    assert store.cell_ids("r") == {c["cell_id"] for c in CELLS}  # the cells are kept
    # The index says so, and why.
    index = json.loads(blobs.objects["reports/index.json"])
    (entry,) = index["runs"]
    assert entry["status"] == "report_failed"
    reason = "report_render: ValueError: bad data: cannot draw this"
    assert entry["mean_text"] == f"none (report failed: {reason})"
    # Nothing asks for it again on its own: not a duplicate request, the sweep, a worker.
    calls: list[str] = []

    def counted(*args: Any, **kwargs: Any) -> bytes:
        calls.append("drawn")
        return b""

    monkeypatch.setattr(report, "render_heatmap", counted)
    assert render_report("r", store=store, blobs=blobs) is None and calls == []
    assert not request_report_if_complete("r", store=store, publisher=publisher)
    sweep_stalled_runs(store=store, publisher=publisher, stalled_after_seconds=0)
    assert publisher.reports == [] and store.runs["r"]["status"] == "report_failed"


def test_a_failed_report_is_tried_again_when_the_run_is_reopened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, blobs = MemoryStore(), MemoryBlobs()
    finished_run(store)
    real = report.render_heatmap
    monkeypatch.setattr(report, "render_heatmap", broken_heatmap)
    render_report("r", store=store, blobs=blobs)
    monkeypatch.setattr(report, "render_heatmap", real)
    store.reset_failed_cells("r", shards=1)  # a resume: the failure is dropped
    assert "report_error" not in store.runs["r"] and store.runs["r"]["status"] == "running"
    store.record_cell(
        "r", "c", CELLS[0] | {"cell_id": "c", "depth_percent": 50.0}, failed=False, shards=1
    )
    assert render_report("r", store=store, blobs=blobs) is not None
    assert store.runs["r"]["status"] == "complete" and "report_error" not in store.runs["r"]


def test_the_run_request_sent_again_asks_for_a_failed_report_again(
    monkeypatch: pytest.MonkeyPatch, essay_blobs: MemoryBlobs
) -> None:
    from niah.service.runs.dispatch import dispatch_run

    store, publisher = MemoryStore(), RecordingPublisher()
    body = {"context_lengths": [300], "document_depth_percents": [50]}
    run_id = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs).run_id
    (message,) = publisher.cells
    store.record_cell(run_id, message["cell_id"], dict(CELLS[0]), failed=False, shards=1)
    monkeypatch.setattr(report, "render_heatmap", broken_heatmap)
    render_report(run_id, store=store, blobs=essay_blobs)
    assert store.runs[run_id]["status"] == "report_failed"
    store.runs[run_id].pop("published_at", None)  # long after its dispatch
    store.runs[run_id]["created_at"] = store.runs[run_id]["created_at"].replace(year=2000)
    again = dispatch_run(body, store=store, publisher=publisher, blobs=essay_blobs)
    assert not again.already_complete and again.published == 0
    assert publisher.reports == [run_id] and store.runs[run_id]["status"] == "running"
    assert "report_error" not in store.runs[run_id]


def test_a_report_that_cannot_be_stored_is_retried_with_its_claim_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Transient (the bucket out of reach): raised, so Pub/Sub delivers it again.

    The next delivery renders, rather than find the claim held and drop the request.
    """
    store, blobs = MemoryStore(), MemoryBlobs()
    finished_run(store)
    real_write = blobs.write

    def unavailable(*args: Any, **kwargs: Any) -> bool:
        raise CloudUnavailableError("ServiceUnavailable: 503")

    monkeypatch.setattr(blobs, "write", unavailable)
    with pytest.raises(CloudUnavailableError):
        render_report("r", store=store, blobs=blobs)
    run = store.runs["r"]
    assert run["status"] == "running" and "report_claim" not in run
    assert "report_error" not in run
    monkeypatch.setattr(blobs, "write", real_write)
    assert render_report("r", store=store, blobs=blobs) is not None
    assert store.runs["r"]["status"] == "complete"


def test_a_dead_lettered_report_request_is_recorded_on_its_run() -> None:
    store = MemoryStore()
    finished_run(store)
    assert record_report_dead_letter("r", store=store, deliveries=5) == "recorded"
    error = store.runs["r"]["report_error"]
    assert store.runs["r"]["status"] == "report_failed" and error["kind"] == "dead_letter"
    assert "failed 5 deliveries" in error["reason"]
    # Left alone: a run reported since, one reset since (cells missing), an unknown one.
    assert record_report_dead_letter("r", store=store) == "report_failed"
    store.runs["r"].update(status="complete", report={"html_uri": "gs://b/r"})
    store.runs["r"].pop("report_error")
    assert record_report_dead_letter("r", store=store) == "complete"
    assert "report_error" not in store.runs["r"]
    finished_run(store, "s")
    del store.cells["s"]["a"]
    assert record_report_dead_letter("s", store=store) == "cells missing"
    assert store.runs["s"]["status"] == "running"
    assert record_report_dead_letter("nobody", store=store) == "unknown run"


def test_the_index_and_status_line_say_why_a_report_failed() -> None:
    from niah.cli.results import run_line

    run = {
        "run_id": "r",
        "status": "report_failed",
        "report_error": {"kind": "report_render", "reason": "ValueError:\n  bad\n  data"},
    }
    (entry,) = build_index(listed_runs([run]))["runs"]
    assert entry["report_error"] == "report_render: ValueError: bad data"
    assert entry["mean_text"] == "none (report failed: report_render: ValueError: bad data)"
    assert run_line(RunRecord.from_document(run))["report_error"]["kind"] == "report_render"
