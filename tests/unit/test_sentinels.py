"""Issues 37 and 54: sentinels, scheduled runs weighed against their baseline.

The firing's request (name, time, refusals), the check (the sequential test against
the baseline, the model version against the run before; its simulated false alarms and
delays: tests/unit/test_sentinel_watch.py),
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
from niah.core.results.sentinel_watch import WatchSettings
from niah.core.runs import ListedRun, RunRecord, listed_runs
from niah.errors import CloudUnavailableError, RequestError, UnknownSentinelError
from niah.service.reports.render import render_report
from niah.service.runs.dispatch import dispatch_run
from niah.service.sentinel.firing import sentinel_payload
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


DAILY = WatchSettings(false_alarms_per_year=1.0, firings_per_year=365, margin_points=10.0)


def checked(
    *runs: tuple[str, list[dict[str, Any]]],
    watch: WatchSettings = DAILY,
    pin: int | None = None,
) -> list[dict[str, Any]]:
    """Each run's check in turn, each weighed on what the one before kept (a day apart).

    ``pin``: the index of the run the definition pins as the baseline.
    """
    checks: list[dict[str, Any]] = []
    done: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for day, (run_id, found) in enumerate(runs):
        current = run(run_id, f"2026-11-{day + 1:02d}T06:00:00Z")
        listed = [(ListedRun.from_document(doc), kept) for doc, kept in [*done, (current, found)]]
        pinned = None if pin is None or pin > day else listed[pin]
        check = sentinel_check(
            "daily",
            (RunRecord.from_document(current), found),
            listed[-2] if done else None,
            watch=watch,
            pinned=pinned,
        )
        checks.append(check)
        done.append((current | {"sentinel_check": check}, found))
    return checks


def test_the_first_run_starts_the_baseline_and_is_not_flagged() -> None:
    (check,) = checked(("b", cells(18)))
    assert check["flagged"] is False and check["previous_run_id"] is None
    assert check["text"] == (
        "first run of sentinel daily: the first of its baseline (its first 7 runs), nothing "
        "before it to compare with"
    )
    assert check["watch"]["baseline"] == {
        "runs": ["b"],
        "right": 18.0,
        "samples": 20,
        "pinned": None,
    }


def test_a_fall_from_the_baseline_is_flagged_once_and_one_answer_less_is_not() -> None:
    same, one_less, fell, after = checked(
        ("a", cells(18)), ("b", cells(18)), ("c", cells(17)), ("d", cells(4)), ("e", cells(4))
    )[1:]
    assert same["flagged"] is False and same["reasons"] == []
    assert same["paired"]["effect"] == 0  # the run before, sample by sample: kept to read
    # 20 samples a run are too few to show "unchanged" within ± 10 points: said so.
    assert same["text"].startswith("no fall flagged, nor shown within ± 10 points")
    assert same["text"].endswith("; the same model version")
    assert one_less["flagged"] is False
    # 18, 18, 17 then 4 right: the evidence passes 365 (1 false alarm a year, daily).
    assert fell["flagged"] is True and fell["watch"]["alarm"] is True
    (reason,) = fell["reasons"]
    assert reason.startswith("score fell: -68.3 points (90 %: ")
    assert "20 % now, the baseline 88.3 % (3 runs)" in reason
    assert reason.endswith(
        "flagged at 365 (at most 1 false alarm a year); a new baseline starts here"
    )
    assert fell["watch"]["evidence"] >= 365 and fell["watch"]["statistic"] == 0
    # Flagged once: the fallen level is the new baseline, and the next run as bad is not.
    assert fell["watch"]["baseline"]["runs"] == ["d"]
    assert after["flagged"] is False and after["watch"]["compared_with"]["runs"] == ["d"]


def test_unchanged_is_said_when_the_run_is_shown_within_the_margin() -> None:
    many = [(f"r{n}", cells(114, total=120)) for n in range(8)]
    *_, last = checked(*many)
    assert last["watch"]["compared_with"]["runs"] == [f"r{n}" for n in range(7)]
    assert last["text"].startswith("unchanged (within ± 10 points of the baseline): 0 points")
    assert last["watch"]["difference"]["verdict"] == "unchanged"


def test_calls_that_start_failing_count_as_wrong_and_add_up() -> None:
    failing = cells(18)
    for cell in failing[:10]:  # ten calls now fail (blocked, cut off, refused)
        cell.update(task_score=None, score=None, status="failed")
    first, second = checked(("a", cells(18)), ("b", failing), ("c", failing))[1:]
    # 8 of 20 against a one-run baseline of 18: not enough alone; twice, it is.
    assert first["flagged"] is False and 1 < first["watch"]["evidence"] < 365
    assert second["flagged"] is True and second["watch"]["share"] == 40.0
    # The model taken away: every call fails, and one run says so.
    gone = [cell | {"task_score": None, "score": None, "status": "failed"} for cell in cells(18)]
    (check,) = checked(("a", cells(18)), ("b", gone))[1:]
    assert check["flagged"] is True and check["paired"] is None
    assert check["reasons"][0].startswith("score fell: -90 points")


def test_a_pinned_baseline_stays_and_flags_a_fall_again() -> None:
    checks = checked(("a", cells(18)), ("b", cells(4)), ("c", cells(4)), ("d", cells(4)), pin=0)
    assert checks[1]["flagged"] is True
    assert checks[1]["watch"]["baseline"]["runs"] == ["a"]  # pinned: no new baseline
    assert not checks[1]["reasons"][0].endswith("a new baseline starts here")
    assert checks[2]["watch"]["compared_with"] == {
        "runs": ["a"],
        "share": 90.0,
        "floor": checks[2]["watch"]["compared_with"]["floor"],
        "pinned": "a",
    }
    assert any(c["flagged"] for c in checks[2:])  # still below the pin: flagged again


def test_another_model_version_is_flagged_even_with_the_same_score() -> None:
    _, after = checked(
        ("a", cells(18, version="gemini-3.8-flash-001")),
        ("b", cells(18, version="gemini-3.8-flash-002")),
    )
    assert after["flagged"] is True
    assert after["reasons"] == [
        "model version changed: gemini-3.8-flash-001 before, gemini-3.8-flash-002 now"
    ]
    # A reply naming no version (the local model) says nothing either way.
    _, quiet = checked(
        ("a", cells(18, version="gemini-3.8-flash-001")), ("b", cells(18, version=None))
    )
    assert quiet["flagged"] is False and not quiet["text"].endswith("model version")


def test_a_changed_request_starts_a_new_baseline_and_is_not_compared() -> None:
    other = run("a", "2026-11-28T06:00:00Z")
    check = sentinel_check(
        "daily",
        (RunRecord.from_document(run("b", "2026-11-29T06:00:00Z")), cells(4)),
        None,
        watch=DAILY,
        other_request=ListedRun.from_document(other),
    )
    assert check["flagged"] is False and "paired" not in check
    assert check["text"] == (
        "the sentinel's request changed since run a (2026-11-28T06:00:00Z): this run starts "
        "a new baseline, not compared"
    )
    assert check["watch"]["baseline"]["runs"] == ["b"]


def test_the_previous_run_is_the_latest_complete_one_due_before_of_the_same_request() -> None:
    runs = listed_runs(
        [
            run("a", "2026-11-26T06:00:00Z") | {"sentinel_key": "k1"},
            run("b", "2026-11-27T06:00:00Z") | {"sentinel_key": "k2"},
            run("c", "2026-11-28T06:00:00Z", status="running") | {"sentinel_key": "k1"},
            run("d", "2026-11-30T06:00:00Z") | {"sentinel_key": "k1"},
        ]
    )
    # A request changed to k2 and back to k1: the run of k1 before it pairs, not b.
    same, latest = previous_run(runs, "2026-11-29T06:00:00Z", "k1")
    assert same is not None and same.run_id == "a"
    assert latest is not None and latest.run_id == "b"
    assert previous_run(runs, "2026-11-29T06:00:00Z", "k3")[0] is None
    assert previous_run(runs, "2026-11-26T06:00:00Z", "k1") == (None, None)


def test_a_weekly_sentinel_s_threshold_is_its_52_firings_a_year() -> None:
    from niah.service.sentinel.check import watch_settings

    weekly = watch_settings({"schedule": "0 6 * * 1"})
    assert (weekly.firings_per_year, weekly.threshold) == (52, 52.0)
    assert watch_settings({"schedule": "0 * * * *"}).threshold == 8760
    assert watch_settings({}).firings_per_year == 365  # no schedule to read: taken as daily


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
    assert 'data-flagged="true"' in page and "Flagged: changed: score fell" in page
    index = json.loads(blobs.objects["reports/index.json"])
    trend = index["sentinels"]["daily"]
    assert [p["run_id"] for p in trend["runs"]] == ["run-a", "run-b"]
    assert [p["flagged"] for p in trend["runs"]] == [False, True]
    assert trend["flagged"] == 1 and trend["latest"]["run_id"] == "run-b"
    html = render_index_page(
        build_index(listed_runs([doc | {"run_id": r} for r, doc in store.runs.items()]))
    )
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
    # The message and its attribute name the run alike.
    assert [(a[0]["run_id"], a[1]["run_id"]) for a in alerts.alerts] == [("run-a", "run-a")]


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
    from niah.service.sentinel import check as sentinels

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


def test_the_trend_shows_the_share_each_run_was_weighed_by_and_its_baseline() -> None:
    from niah.core.pages.sentinel_trend import trend_figure

    def point(when: str, share: float, baseline: float | None) -> dict[str, Any]:
        return {
            "scheduled_at": when,
            "mean": 99.0,  # of the scored samples only: not what the test weighed
            "mean_interval": [95.0, 100.0],
            "share": share,
            "samples": 120,
            "baseline": baseline,
            "flagged": False,
            "text": "",
        }

    figure = trend_figure(
        "daily",
        [
            point("2026-11-28T06:00:00Z", 95.0, None),
            point("2026-11-29T06:00:00Z", 80.0, 95.0),
            point("2026-11-30T06:00:00Z", 80.0, 80.0),  # after a flag, a new baseline
        ],
    )
    first, second, third = figure["dots"]
    # Drawn from the second run, in steps: held at 95 until the third drops it to 80.
    assert figure["baseline"] == (
        f"{second['x']},{first['y']} {third['x']},{first['y']} {third['x']},{third['y']}"
    )
    assert second["tooltip"].startswith(
        "2026-11-29T06:00:00Z: 80 % (95 %, samples taken as independent: "
    )
    assert second["tooltip"].endswith(
        "of 120 samples asked right (an unscored one counts as wrong); baseline 95 %"
    )


def test_niah_sentinel_show_prints_each_run_s_share_and_its_baseline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from niah.cli import sentinel as cli
    from niah.cli.main import main

    store, blobs, alerts = MemoryStore(), MemoryBlobs(), RecordingAlerts()
    defined(store)
    reported_sentinel_run(store, "run-a", "2026-11-28T06:00:00Z", 18)
    render_report("run-a", store=store, blobs=blobs, alerts=alerts)
    reported_sentinel_run(store, "run-b", "2026-11-29T06:00:00Z", 4)
    render_report("run-b", store=store, blobs=blobs, alerts=alerts)
    monkeypatch.setattr(cli, "result_store", lambda: store)
    main(["sentinel", "show", "daily"])
    printed = capsys.readouterr().out
    assert "run-b  complete  score 20 % of 20 asked, baseline 90 %; mean 20 (95 %, " in printed
    assert "    FLAGGED changed: score fell: -70 points" in printed
