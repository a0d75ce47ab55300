"""Issue 39: a report renderer killed mid-render costs a lease, not six minutes.

Before: the report's claim was a 360 s lease (longer than the function's 300 s
timeout), and the report was asked for again at most once per lease, so a renderer
killed mid-render left its run without a report for about 6 minutes. Now the claim is
short (``report_lease_seconds``) and renewed while the renderer works.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from niah.errors import CloudUnavailableError
from niah.service.lease import keep_report_claim
from niah.service.reports import render as report
from niah.service.reports.render import render_report
from niah.service.runs.completion import request_report_if_complete
from niah.service.runs.sweep import sweep_stalled_runs
from niah.settings import get_settings
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher
from tests.unit.test_report_failures import finished_run


@pytest.fixture
def lease(monkeypatch: pytest.MonkeyPatch) -> Iterator[float]:
    """A one-second report lease, renewed every third of a second."""
    monkeypatch.setenv("NIAH_REPORT_LEASE_SECONDS", "1")
    get_settings.cache_clear()
    yield 1.0
    get_settings.cache_clear()


def sweep(store: MemoryStore, publisher: RecordingPublisher) -> None:
    sweep_stalled_runs(store=store, publisher=publisher, stalled_after_seconds=3600)


def test_a_live_renderer_keeps_its_claim_however_long_it_renders(
    lease: float, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A render three leases long: no other renders, nothing asks again; one report."""
    store, blobs, publisher = MemoryStore(), MemoryBlobs(), RecordingPublisher()
    finished_run(store)
    assert request_report_if_complete("r", store=store, publisher=publisher)  # the last cell
    real_render = report.render_heatmap
    rendering = threading.Event()

    def slow_render(*args: Any, **kwargs: Any) -> bytes:
        rendering.set()
        time.sleep(3 * lease)
        return real_render(*args, **kwargs)

    monkeypatch.setattr(report, "render_heatmap", slow_render)
    renderer = threading.Thread(
        target=render_report, args=("r",), kwargs={"store": store, "blobs": blobs}
    )
    renderer.start()
    assert rendering.wait(10)
    held_off = 0
    deadline = time.monotonic() + 2.5 * lease
    while time.monotonic() < deadline:
        # A redelivery finds the claim held; a duplicate worker and the sweep ask nothing.
        assert render_report("r", store=store, blobs=blobs) is None
        assert not request_report_if_complete("r", store=store, publisher=publisher)
        sweep(store, publisher)
        held_off += 1
        time.sleep(0.1)
    renderer.join(10)
    assert held_off >= 10 and publisher.reports == ["r"]
    assert store.runs["r"]["status"] == "complete"
    assert blobs.writes.count("reports/r/heatmap.png") == 1
    said = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    renewed = [line for line in said if line["message"] == "report claim renewed"]
    assert len(renewed) >= 6 and {line["run_id"] for line in renewed} == {"r"}
    # Done: asked for no more, by anyone.
    time.sleep(lease + 0.1)
    sweep(store, publisher)
    assert not request_report_if_complete("r", store=store, publisher=publisher, total=4)
    assert publisher.reports == ["r"]


def test_a_dead_renderer_s_claim_lapses_within_a_lease_and_the_sweep_asks_again(
    lease: float,
) -> None:
    """A renderer killed mid-render: held off while its claim is live, asked after it lapses."""
    store, blobs, publisher = MemoryStore(), MemoryBlobs(), RecordingPublisher()
    finished_run(store)
    assert request_report_if_complete("r", store=store, publisher=publisher)
    assert store.claim_report("r", lease, "killed") == "claimed"  # then killed: no renewals
    assert render_report("r", store=store, blobs=blobs) is None  # a redelivery: quiet
    time.sleep(lease / 2)
    sweep(store, publisher)
    assert publisher.reports == ["r"]  # its claim is live yet: not asked again
    time.sleep(lease / 2 + 0.1)
    sweep(store, publisher)  # lapsed: the next pass asks
    assert publisher.reports == ["r", "r"]
    sweep(store, publisher)
    assert publisher.reports == ["r", "r"]  # once
    location = render_report("r", store=store, blobs=blobs)  # takes the lapsed claim over
    assert location is not None and store.runs["r"]["status"] == "complete"
    assert store.runs["r"]["report_claim"] != "killed"


def test_a_request_lost_before_its_claim_is_asked_again_after_a_lease(lease: float) -> None:
    store, publisher = MemoryStore(), RecordingPublisher()
    finished_run(store)
    assert request_report_if_complete("r", store=store, publisher=publisher)  # then lost
    sweep(store, publisher)
    assert publisher.reports == ["r"]
    time.sleep(lease + 0.1)
    sweep(store, publisher)
    assert publisher.reports == ["r", "r"]


def test_the_keeper_renews_until_closed_and_stops_when_the_claim_is_gone() -> None:
    store = MemoryStore()
    finished_run(store)
    assert store.claim_report("r", 0.3, "first") == "claimed"
    with keep_report_claim(store, "r", "first", 0.3) as keeper:
        time.sleep(1.0)
        assert store.claim_report("r", 0.3, "second") == "held"
    assert keeper.renewals >= 2 and not keeper.lost
    time.sleep(0.4)  # closed: no more renewals, the claim lapses and is taken over
    assert store.claim_report("r", 0.3, "second") == "claimed"
    with keep_report_claim(store, "r", "first", 0.3) as stale:
        time.sleep(0.5)
    assert stale.lost and stale.renewals == 0
    assert store.runs["r"]["report_claim"] == "second"  # the stale keeper renewed nothing
    # A reset drops the claim: its keeper lets go.
    with keep_report_claim(store, "r", "second", 0.3) as dropped:
        store.reopen_report("r")
        time.sleep(0.5)
    assert dropped.lost


def test_a_renderer_that_lost_its_claim_leaves_the_new_holder_s_claim_alone(
    lease: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store out of reach a whole lease: another renderer took over, then this one fails.

    Before the keeper, a failing renderer dropped the claim whoever held it (the lease
    outlasted the function, so it was always its own).
    """
    store, blobs = MemoryStore(), MemoryBlobs()
    finished_run(store)

    def taken_over_then_fails(*args: Any, **kwargs: Any) -> bytes:
        store.runs["r"].update(report_claim="other", report_claimed_at=time.monotonic())
        time.sleep(lease / 2)  # the keeper's next renewal finds the claim gone
        raise CloudUnavailableError("the bucket is out of reach")

    monkeypatch.setattr(report, "render_heatmap", taken_over_then_fails)
    with pytest.raises(CloudUnavailableError):
        render_report("r", store=store, blobs=blobs)
    assert store.runs["r"]["report_claim"] == "other"
    assert store.claim_report("r", lease, "third") == "held"
