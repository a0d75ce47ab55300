"""Issue 37: sentinels, scheduled runs checked against the run before them.

The firing's request (name, time, refusals), the check (paired test, model version),
the report's part (kept on the run, published to the alerts topic once) and the
index's trend. The stack test (tests/integration/test_sentinel_stack.py) runs them
through the emulators.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from niah.core.pages.run_index import build_index, render_index_page
from niah.core.request.sentinel_request import firing_time
from niah.core.results.sentinel_check import previous_run, sentinel_check
from niah.errors import CloudUnavailableError, RequestError, UnknownSentinelError
from niah.service.dispatch import dispatch_run
from niah.service.report import render_report
from niah.service.sentinel_firing import sentinel_payload
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingAlerts, RecordingPublisher

# Every firing here is judged from this moment (a firing is due now, or within days).
NOW = dt.datetime(2026, 11, 29, 7, 0, tzinfo=dt.UTC)
REQUEST = {"model_name": "gemini-3.8-flash", "context_lengths": [1000], "seed": 3}


def defined(store: MemoryStore, name: str = "daily", request: Any = None) -> None:
    """The sentinel as Terraform writes it: the request as JSON text."""
    text = json.dumps(REQUEST if request is None else request)
    store.sentinels[name] = {"request": text, "schedule": "0 6 * * *", "time_zone": "Etc/UTC"}


# ---------- the firing ----------


def test_a_firing_time_is_utc_to_the_second_and_needs_an_offset() -> None:
    assert firing_time("2026-11-28T06:00:00Z") == "2026-11-28T06:00:00Z"
    assert firing_time("2026-11-28T07:00:00.250+01:00") == "2026-11-28T06:00:00Z"
    with pytest.raises(ValueError, match="no offset"):
        firing_time("2026-11-28T06:00:00")
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        firing_time("tomorrow")


def test_the_schedulers_header_names_the_firing_and_a_retry_is_the_same_run() -> None:
    store = MemoryStore()
    defined(store)
    header = "2026-11-28T06:00:00.000Z"
    first = sentinel_payload({"sentinel": "daily"}, schedule_time=header, store=store, now=NOW)
    assert first == REQUEST | {"sentinel": "daily", "scheduled_at": "2026-11-28T06:00:00Z"}
    # The header wins over the body's time; without either, the minute it arrived.
    again = sentinel_payload(
        {"sentinel": "daily", "scheduled_at": "2026-01-01T00:00:00Z"},
        schedule_time=header,
        store=store,
        now=NOW,
    )
    assert again == first
    now = dt.datetime(2026, 11, 28, 6, 0, 41, tzinfo=dt.UTC)
    late = sentinel_payload({"sentinel": "daily"}, schedule_time=None, store=store, now=now)
    assert late["scheduled_at"] == "2026-11-28T06:00:00Z"


def test_a_firing_is_refused_naming_the_field() -> None:
    store = MemoryStore()
    defined(store)
    with pytest.raises(UnknownSentinelError) as unknown:
        sentinel_payload({"sentinel": "weekly"}, schedule_time=None, store=store, now=NOW)
    assert unknown.value.field == "sentinel" and unknown.value.status == 404
    assert "niah sentinel list" in unknown.value.message
    cases = [
        ({"sentinel": "Daily!"}, None, "sentinel"),
        ({"sentinel": "daily", "context_lengths": [9]}, None, "context_lengths"),
        ({"sentinel": "daily", "scheduled_at": "noon"}, None, "scheduled_at"),
        ({"sentinel": "daily"}, "yesterday", "X-CloudScheduler-ScheduleTime"),
        (["daily"], None, "body"),
    ]
    for body, header, field in cases:
        with pytest.raises(RequestError) as refused:
            sentinel_payload(body, schedule_time=header, store=store, now=NOW)
        assert refused.value.field == field, body
    defined(store, "broken", {**REQUEST, "sentinel": "other"})
    with pytest.raises(RequestError, match="which its firing sets"):
        sentinel_payload({"sentinel": "broken"}, schedule_time=None, store=store, now=NOW)


def test_a_plain_request_cannot_start_a_sentinels_run_but_may_ask_one_again(
    essay_blobs: MemoryBlobs,
) -> None:
    store, publisher = MemoryStore(), RecordingPublisher()
    defined(store)
    payload = sentinel_payload(
        {"sentinel": "daily"}, schedule_time="2026-11-28T06:00:00Z", store=store, now=NOW
    )
    with pytest.raises(RequestError) as refused:
        dispatch_run(payload, store=store, publisher=publisher, blobs=essay_blobs)
    assert refused.value.field == "sentinel" and store.runs == {}
    fired = dispatch_run(
        payload, store=store, publisher=publisher, blobs=essay_blobs, sentinel_route=True
    )
    assert store.runs[fired.run_id]["spec"]["sentinel"] == "daily"
    # Asked again (a retry, a resume) by the plain route: the same run, nothing new.
    again = dispatch_run(payload, store=store, publisher=publisher, blobs=essay_blobs)
    assert again.run_id == fired.run_id and not again.created
    # Another firing is another run.
    later = sentinel_payload(
        {"sentinel": "daily"}, schedule_time="2026-11-29T06:00:00Z", store=store, now=NOW
    )
    other = dispatch_run(
        later, store=store, publisher=publisher, blobs=essay_blobs, sentinel_route=True
    )
    assert other.run_id != fired.run_id and len(store.runs) == 2


def test_a_sentinel_cannot_certify() -> None:
    store = MemoryStore()
    defined(store, "certifying", {**REQUEST, "mode": "certify", "context_lengths": [1000, 2000]})
    payload = sentinel_payload({"sentinel": "certifying"}, schedule_time=None, store=store, now=NOW)
    with pytest.raises(RequestError) as refused:
        dispatch_run(
            payload,
            store=store,
            publisher=RecordingPublisher(),
            blobs=MemoryBlobs(),
            sentinel_route=True,
        )
    assert refused.value.field == "mode"


# ---------- the check ----------


def cells(right: int, total: int = 20, version: str | None = "gemini-3.8-flash") -> list[dict]:
    """``total`` samples over two lengths, the first ``right`` of them right."""
    made = []
    for i in range(total):
        cell: dict[str, Any] = {
            "cell_id": f"L{1000 * (1 + i % 2)}-D{i}",
            "context_length": 1000 * (1 + i % 2),
            "depth_percent": float(i),
            "sample": 0,
            "task_score": 1.0 if i < right else 0.0,
            "score": 10 if i < right else 1,
            "status": "answered",
        }
        if version:
            cell["model_version"] = version
        made.append(cell)
    return made


def run(run_id: str, when: str, status: str = "complete") -> dict[str, Any]:
    return {
        "run_id": run_id,
        "status": status,
        "spec": {"sentinel": "daily", "scheduled_at": when},
    }


def test_the_first_run_has_nothing_to_compare_with_and_is_not_flagged() -> None:
    check = sentinel_check("daily", (run("b", "2026-11-29T06:00:00Z"), cells(18)), None)
    assert check["flagged"] is False and check["previous_run_id"] is None
    assert check["text"] == "first run of sentinel daily: nothing before it to compare with"


def test_the_same_answers_are_unchanged_and_a_drop_is_flagged_with_its_test() -> None:
    before = (run("a", "2026-11-28T06:00:00Z"), cells(18))
    same = sentinel_check("daily", (run("b", "2026-11-29T06:00:00Z"), cells(18)), before)
    assert same["flagged"] is False and same["reasons"] == []
    assert same["paired"]["effect"] == 0 and same["paired"]["p_value"] == 1
    assert same["text"].startswith("unchanged since run a (2026-11-28T06:00:00Z): 0 points")
    assert same["text"].endswith("; the same model version")
    # 18 right, then 4: 14 discordant pairs all one way, p = 2 / 2**14.
    dropped = sentinel_check("daily", (run("c", "2026-11-30T06:00:00Z"), cells(4)), before)
    assert dropped["flagged"] is True
    assert dropped["paired"]["discordant"] == [14, 0]
    assert dropped["paired"]["p_value"] == float(f"{2 / 2**14:.4g}")  # kept to 4 figures
    (reason,) = dropped["reasons"]
    assert reason.startswith("score changed: -70 points")
    # A rise is a change too; one answer changed is not.
    rose = sentinel_check(
        "daily",
        (run("d", "2026-11-30T06:00:00Z"), cells(18)),
        (run("x", "2026-11-27T06:00:00Z"), cells(4)),
    )
    assert rose["flagged"] is True
    one = sentinel_check("daily", (run("e", "2026-11-30T06:00:00Z"), cells(17)), before)
    assert one["flagged"] is False


def test_another_model_version_is_flagged_even_with_the_same_score() -> None:
    before = (run("a", "2026-11-28T06:00:00Z"), cells(18, version="gemini-3.8-flash-001"))
    after = (run("b", "2026-11-29T06:00:00Z"), cells(18, version="gemini-3.8-flash-002"))
    check = sentinel_check("daily", after, before)
    assert check["flagged"] is True
    assert check["reasons"] == [
        "model version changed: gemini-3.8-flash-001 before, gemini-3.8-flash-002 now"
    ]
    # A reply naming no version (the local model) says nothing either way.
    quiet = sentinel_check(
        "daily", (run("b", "2026-11-29T06:00:00Z"), cells(18, version=None)), before
    )
    assert quiet["flagged"] is False and not quiet["text"].endswith("model version")


def test_a_changed_request_starts_a_new_baseline_and_is_not_compared() -> None:
    other = run("a", "2026-11-28T06:00:00Z")
    check = sentinel_check(
        "daily", (run("b", "2026-11-29T06:00:00Z"), cells(4)), None, other_request=other
    )
    assert check["flagged"] is False and "paired" not in check
    assert check["text"] == (
        "the sentinel's request changed since run a (2026-11-28T06:00:00Z): this run is a "
        "new baseline, not compared"
    )


def test_the_previous_run_is_the_latest_complete_one_due_before_of_the_same_request() -> None:
    runs = [
        run("a", "2026-11-26T06:00:00Z") | {"sentinel_key": "k1"},
        run("b", "2026-11-27T06:00:00Z") | {"sentinel_key": "k2"},
        run("c", "2026-11-28T06:00:00Z", status="running") | {"sentinel_key": "k1"},
        run("d", "2026-11-30T06:00:00Z") | {"sentinel_key": "k1"},
    ]
    # A request changed to k2 and back to k1: the run of k1 before it pairs, not b.
    same, latest = previous_run(runs, "2026-11-29T06:00:00Z", "k1")
    assert same is not None and same["run_id"] == "a"
    assert latest is not None and latest["run_id"] == "b"
    assert previous_run(runs, "2026-11-29T06:00:00Z", "k3")[0] is None
    assert previous_run(runs, "2026-11-26T06:00:00Z", "k1") == (None, None)


def test_failed_samples_are_a_change_and_nothing_to_test_is_flagged() -> None:
    before = (run("a", "2026-11-28T06:00:00Z"), cells(18))
    failing = cells(18)
    for cell in failing[:10]:  # ten calls now fail (blocked, cut off, refused)
        cell.update(task_score=None, score=None, status="failed")
    check = sentinel_check("daily", (run("b", "2026-11-29T06:00:00Z"), failing), before)
    assert check["flagged"] is True
    assert check["scored"]["discordant"] == [10, 0]
    assert any(
        r.startswith("share of samples scored changed: -50 points") for r in check["reasons"]
    )
    # The model taken away: every call fails, so nothing pairs; said, and flagged.
    gone = [cell | {"task_score": None, "score": None, "status": "failed"} for cell in cells(18)]
    check = sentinel_check("daily", (run("c", "2026-11-30T06:00:00Z"), gone), before)
    assert check["flagged"] is True and check["paired"] is None
    assert check["reasons"][0] == "not tested: no sample is scored in both runs"
    assert check["text"].startswith("changed since run a")


# ---------- the report and the alert ----------


def reported_sentinel_run(store: MemoryStore, run_id: str, when: str, right: int) -> None:
    store.create_run(
        run_id,
        {
            "run_id": run_id,
            "total": 20,
            "model": "gemini-3.8-flash",
            "status": "running",
            "spec": {**REQUEST, "sentinel": "daily", "scheduled_at": when},
        },
    )
    for cell in cells(right):
        store.record_cell(run_id, cell["cell_id"], cell, failed=False, shards=1)


def test_a_reported_sentinel_run_keeps_its_check_and_publishes_it_once() -> None:
    store, blobs, alerts = MemoryStore(), MemoryBlobs(), RecordingAlerts()
    reported_sentinel_run(store, "run-a", "2026-11-28T06:00:00Z", 18)
    assert render_report("run-a", store=store, blobs=blobs, alerts=alerts) is not None
    reported_sentinel_run(store, "run-b", "2026-11-29T06:00:00Z", 4)
    assert render_report("run-b", store=store, blobs=blobs, alerts=alerts) is not None
    first, second = alerts.alerts
    assert first[1] == {"sentinel": "daily", "run_id": "run-a", "flagged": "false"}
    assert second[1] == {"sentinel": "daily", "run_id": "run-b", "flagged": "true"}
    assert second[0]["previous_run_id"] == "run-a" and second[0]["mean"] == 20.0
    check = store.runs["run-b"]["sentinel_check"]
    assert check["flagged"] is True and "alerted_at" in check
    # A duplicate report request publishes nothing more.
    render_report("run-b", store=store, blobs=blobs, alerts=alerts)
    assert len(alerts.alerts) == 2
    # The page says it; the index keeps the trend with the flag.
    page = blobs.objects["reports/run-b/report.html"].decode()
    assert 'data-flagged="true"' in page and "Flagged: changed since run run-a" in page
    index = json.loads(blobs.objects["reports/index.json"])
    trend = index["sentinels"]["daily"]
    assert [p["run_id"] for p in trend["runs"]] == ["run-a", "run-b"]
    assert [p["flagged"] for p in trend["runs"]] == [False, True]
    assert trend["flagged"] == 1 and trend["latest"]["run_id"] == "run-b"
    html = render_index_page(build_index([doc | {"run_id": r} for r, doc in store.runs.items()]))
    assert html.count('class="flagged"') == 2  # the table's row and the plot's dot


def test_an_alert_lost_with_the_topic_is_published_by_the_next_delivery() -> None:
    store, blobs, alerts = MemoryStore(), MemoryBlobs(), RecordingAlerts()
    reported_sentinel_run(store, "run-a", "2026-11-28T06:00:00Z", 18)
    alerts.fail = True
    with pytest.raises(CloudUnavailableError):
        render_report("run-a", store=store, blobs=blobs, alerts=alerts)
    assert store.runs["run-a"]["status"] == "complete"  # the report stays written
    assert "alerted_at" not in store.runs["run-a"]["sentinel_check"]
    alerts.fail = False
    render_report("run-a", store=store, blobs=blobs, alerts=alerts)  # Pub/Sub's redelivery
    assert [a[1]["run_id"] for a in alerts.alerts] == ["run-a"]


def test_a_run_that_is_no_sentinels_publishes_no_alert() -> None:
    store, blobs, alerts = MemoryStore(), MemoryBlobs(), RecordingAlerts()
    reported_sentinel_run(store, "run-a", "2026-11-28T06:00:00Z", 18)
    # A stored spec is a valid request: no sentinel, so no firing time either.
    del store.runs["run-a"]["spec"]["sentinel"], store.runs["run-a"]["spec"]["scheduled_at"]
    render_report("run-a", store=store, blobs=blobs, alerts=alerts)
    assert alerts.alerts == [] and "sentinel_check" not in store.runs["run-a"]


def test_a_firing_far_from_now_or_past_the_calendar_is_refused_naming_its_field() -> None:
    store = MemoryStore()
    defined(store)
    for when in ("2099-01-01T00:00:00Z", "2026-11-01T06:00:00Z", "0001-01-01T00:00:00+01:00"):
        for body, header, field in (
            ({"sentinel": "daily", "scheduled_at": when}, None, "scheduled_at"),
            ({"sentinel": "daily"}, when, "X-CloudScheduler-ScheduleTime"),
        ):
            with pytest.raises(RequestError) as refused:
                sentinel_payload(body, schedule_time=header, store=store, now=NOW)
            assert refused.value.field == field, when
    # Scheduler's retries within days are the same firing.
    kept = sentinel_payload(
        {"sentinel": "daily"}, schedule_time="2026-11-23T06:00:00Z", store=store, now=NOW
    )
    assert kept["scheduled_at"] == "2026-11-23T06:00:00Z"


def test_a_check_that_trips_is_kept_flagged_and_the_report_still_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from niah.service import sentinels

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("a bug in the check")

    monkeypatch.setattr(sentinels, "sentinel_check", broken)
    store, blobs, alerts = MemoryStore(), MemoryBlobs(), RecordingAlerts()
    reported_sentinel_run(store, "run-a", "2026-11-28T06:00:00Z", 18)
    assert render_report("run-a", store=store, blobs=blobs, alerts=alerts) is not None
    check = store.runs["run-a"]["sentinel_check"]
    assert check["flagged"] is True
    assert check["text"] == "not checked: the check failed (ValueError: a bug in the check)"
    assert alerts.alerts[0][1]["flagged"] == "true"


def test_the_route_answers_each_refusal_with_its_status_and_alerts_a_scheduled_one(
    monkeypatch: pytest.MonkeyPatch, essay_blobs: MemoryBlobs
) -> None:
    from niah.settings import get_settings
    from tests.unit.id_tokens import signed
    from tests.unit.test_bad_requests import http_dispatcher

    client, (store, publisher, _) = http_dispatcher(monkeypatch, essay_blobs)
    # The client's own token is the local user's: an operator here, firing by hand.
    monkeypatch.setenv("NIAH_OPERATORS", '["local@niah.localhost"]')
    monkeypatch.setenv("NIAH_SENTINEL_SCHEDULER", "scheduler@p.iam")
    get_settings.cache_clear()
    defined(store)
    defined(store, "retired", {**REQUEST, "model_name": "gemini-2.5-pro"})
    # Scheduler's job: its account's token and a due time of the schedule (0 6 * * *).
    tick = dt.datetime.now(dt.UTC).replace(hour=6, minute=0, second=0, microsecond=0)
    tick -= dt.timedelta(days=1) if tick > dt.datetime.now(dt.UTC) else dt.timedelta(0)
    scheduler = {
        "X-CloudScheduler": "true",
        "Authorization": signed("scheduler@p.iam"),
        "X-CloudScheduler-ScheduleTime": tick.isoformat(),
    }
    answers = {
        "unknown": client.post("/sentinel", json={"sentinel": "weekly"}),
        "list": client.post("/sentinel", json=["daily"]),
        "far": client.post(
            "/sentinel", json={"sentinel": "daily", "scheduled_at": "2099-01-01T00:00:00Z"}
        ),
        "plain": client.post("/", json={**REQUEST, "sentinel": "daily"}),
        "retired": client.post("/sentinel", json={"sentinel": "retired"}, headers=scheduler),
    }
    statuses = {name: answer.status_code for name, answer in answers.items()}
    assert statuses == {"unknown": 404, "list": 400, "far": 400, "plain": 400, "retired": 400}
    fields = {name: answer.get_json()["error"]["field"] for name, answer in answers.items()}
    assert fields == {
        "unknown": "sentinel",
        "list": "body",
        "far": "scheduled_at",
        "plain": "sentinel",
        "retired": "model_name",
    }
    retired = answers["retired"].get_json()["error"]["message"]
    assert retired.startswith("sentinel retired: ")
    assert store.runs == {}  # nothing recorded by any of them
    # The scheduled firing refused made no run, so the alerts topic hears it, flagged.
    ((message, attributes),) = publisher.alerts
    assert attributes == {"sentinel": "retired", "run_id": "", "flagged": "true"}
    assert message["text"] == f"firing refused, no run made: model_name: {retired}"
    # A good firing over HTTP: a run, named by the scheduler's time.
    fired = client.post("/sentinel", json={"sentinel": "daily"}, headers=scheduler)
    assert fired.status_code == 202, fired.get_json()
    run_id = fired.get_json()["run_id"]
    assert store.runs[run_id]["spec"]["sentinel"] == "daily"
    assert store.runs[run_id]["label"].startswith("sentinel daily · ")
    assert store.runs[run_id]["sentinel_key"].startswith("run-")


def test_the_trend_puts_each_run_at_the_time_it_was_due_to_scale() -> None:
    from niah.core.pages.sentinel_trend import trend_figure
    from niah.core.results.curves import LEFT, PLOT_WIDTH

    def point(when: str, flagged: bool = False) -> dict[str, Any]:
        return {
            "scheduled_at": when,
            "mean": 90.0,
            "mean_interval": [80.0, 95.0],
            "flagged": flagged,
            "text": "",
        }

    figure = trend_figure(
        "daily",
        [
            point("2026-11-28T06:00:00Z"),
            point("2026-11-28T07:00:00Z"),  # a firing by hand an hour later
            point("2026-11-28T09:00:00Z", flagged=True),
        ],
    )
    xs = [float(dot["x"]) for dot in figure["dots"]]
    assert xs == [LEFT, round(LEFT + PLOT_WIDTH / 3, 1), LEFT + PLOT_WIDTH]
    assert [dot["flagged"] for dot in figure["dots"]] == [False, False, True]
    # Five labelled times over the span, not one per run; the ends lean in.
    assert [t["text"] for t in figure["ticks"]] == [
        "11-28 06:00",
        "11-28 06:45",
        "11-28 07:30",
        "11-28 08:15",
        "11-28 09:00",
    ]
    assert [t["anchor"] for t in figure["ticks"]] == ["start", *["middle"] * 3, "end"]
