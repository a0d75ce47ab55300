"""Issue 37: sentinels on the local stack, fired as Cloud Scheduler fires them.

A sentinel's definition is written to Firestore as Terraform writes it; each firing is
the scheduler's request (``niah_devtools.sentinel_schedule.fire``: the name, the due
time in ``X-CloudScheduler-ScheduleTime``) or ``niah sentinel run``. Five firings:
the first starts the baseline, the second answers as the first (not flagged), the third
is answered by another model version (flagged), the fourth after the Vertex stand-in's
accuracy drops (its score fell from the baseline: flagged, and a new baseline starts),
the fifth (by hand) as the fourth (not flagged).
The flags are on the runs, on the index (its trend, looked at in Chromium at 1280 px)
and on the alerts topic.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.error
from typing import Any

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah_devtools import local_identity, localstack, sentinel_schedule
from tests.integration.conftest import Stack, wait_for
from tests.integration.test_local_stack import wait_complete
from tests.integration.test_report_browser import browser, open_page  # noqa: F401 (fixture)

pytestmark = pytest.mark.integration

NAME = "flash-watch"
REQUEST = {
    "model_name": "gemini-3.8-flash",
    "context_lengths": [1000, 2000],
    "document_depth_percents": [0, 25, 50, 75, 100],
    "samples_per_cell": 2,
    "seed": 37,
}
SAMPLES = 20
# Right at no length the sentinel asks: every answer "I could not find that".
NOTHING_RIGHT = {"midpoint_tokens": 50, "width": 0.1, "seed": 1}


def alerts(project: str) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Every alert the local subscription holds now (acknowledged: each is read once)."""
    import google.cloud.pubsub_v1 as pubsub_v1

    subscriber = pubsub_v1.SubscriberClient()
    path = subscriber.subscription_path(project, localstack.ALERTS_SUBSCRIPTION)
    got = subscriber.pull(request={"subscription": path, "max_messages": 50}, timeout=10)
    if got.received_messages:
        subscriber.acknowledge(
            request={"subscription": path, "ack_ids": [m.ack_id for m in got.received_messages]}
        )
    return [(json.loads(m.message.data), dict(m.message.attributes)) for m in got.received_messages]


def test_sentinels_flag_a_changed_model_on_the_run_the_index_and_the_alerts_topic(
    stack: Stack,
    browser: Any,  # noqa: F811 (the fixture imported above)
) -> None:
    project = stack.env["NIAH_PROJECT"]
    dispatcher = stack.env["DISPATCHER_URL"]
    configure = f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config"
    sentinel_schedule.define(
        {NAME: {"schedule": "0 6 * * *", "time_zone": "Etc/UTC", "request": json.dumps(REQUEST)}},
        project,
    )
    alerts(project)  # none of an earlier test's
    store = FirestoreStore()
    # Firings are due now or lately (the route refuses times far off), each a tick of the
    # schedule (06:00 UTC; the route refuses any other time from the scheduler): four by
    # the scheduler's request, days apart; the fifth by hand, now.
    now = dt.datetime.now(dt.UTC)
    base = now.replace(hour=6, minute=0, second=0, microsecond=0)
    base -= dt.timedelta(days=1) if base > now else dt.timedelta(0)
    runs: list[str] = []
    # Issue 51: the same POST with a user's token (the scheduler's headers and all) is
    # refused before anything is read: no run, no alert.
    when = (base - dt.timedelta(days=6)).strftime("%Y-%m-%dT%H:%M:%SZ")
    runs_before = [r["run_id"] for r in store.recent_runs(200)]
    as_user = requests.post(
        dispatcher.rstrip("/") + "/sentinel",
        json={"sentinel": NAME},
        headers={
            **local_identity.headers("someone@example.com"),
            "X-CloudScheduler": "true",
            sentinel_schedule.SCHEDULE_TIME_HEADER: when,
        },
        timeout=60,
    )
    assert as_user.status_code == 403, as_user.text
    assert as_user.json()["error"]["field"] == "Authorization"
    # The scheduler's own account, at a time that is no tick of the schedule: refused.
    with pytest.raises(urllib.error.HTTPError) as off_tick:
        sentinel_schedule.fire(dispatcher, NAME, base - dt.timedelta(days=6, minutes=1))
    assert off_tick.value.code == 400
    assert [r["run_id"] for r in store.recent_runs(200)] == runs_before  # no run made
    ((refusal, _),) = alerts(project)  # the refused scheduled firing, in our words only
    assert refusal["text"].startswith("firing refused, no run made: X-CloudScheduler")

    def fired(days: int) -> str:
        answer = sentinel_schedule.fire(dispatcher, NAME, base - dt.timedelta(days=days))
        wait_complete(answer["run_id"], timeout=300)
        runs.append(answer["run_id"])
        return str(answer["run_id"])

    try:
        first = fired(6)
        # Scheduler's retry of the same firing is the same run.
        again = sentinel_schedule.fire(dispatcher, NAME, base - dt.timedelta(days=6))
        assert again["run_id"] == first and not again["created"]
        second = fired(4)
        # Google routes the ID to another version: the same answers, another model.
        routed = {"served_versions": {"gemini-3.8-flash": "gemini-3.8-flash-002"}}
        requests.post(configure, json=routed, timeout=5).raise_for_status()
        third = fired(2)
        # That version gets worse: nothing right (a config is whole: the routing again).
        worse = routed | {"curve": NOTHING_RIGHT}
        requests.post(configure, json=worse, timeout=5).raise_for_status()
        fourth = fired(1)
        # Now, by hand: the CLI's firing, followed to its report; as bad as the fourth,
        # so unchanged since it.
        done = stack.niah("sentinel", "run", NAME, "--wait")
        assert done.returncode == 0, done.stdout + done.stderr
        fifth = done.stdout.split("run ", 1)[1].split()[0]
        runs.append(fifth)
    finally:
        requests.post(configure, json={}, timeout=5).raise_for_status()
    flags = [False, False, True, True, False]
    assert len(set(runs)) == 5
    checks = [store.get_run(run_id, counts=False)["sentinel_check"] for run_id in runs]
    assert [c["flagged"] for c in checks] == flags
    assert checks[0]["previous_run_id"] is None
    assert [c["previous_run_id"] for c in checks[1:]] == [first, second, third, fourth]
    assert checks[1]["paired"]["effect"] == 0 and checks[1]["paired"]["pairs"] == SAMPLES
    assert checks[2]["reasons"] == [
        "model version changed: gemini-3.8-flash before, gemini-3.8-flash-002 now"
    ]
    # Issue 54: weighed against the baseline (runs 1 to 3), the fall passes the threshold
    # of 1 false alarm a year (365 daily firings), and starts a new baseline there.
    (dropped,) = checks[3]["reasons"]
    assert dropped.startswith("score fell: -100 points") and "flagged at 365" in dropped
    assert checks[3]["watch"]["compared_with"]["runs"] == [first, second, third]
    assert checks[4]["paired"]["effect"] == 0 and checks[4]["reasons"] == []
    assert checks[4]["watch"]["compared_with"]["runs"] == [fourth]
    # The alerts topic: one message per run, the flag as an attribute to filter on.
    published: list[tuple[dict[str, Any], dict[str, str]]] = []

    def five_alerts() -> bool:
        published.extend(alerts(project))
        return len(published) >= 5

    wait_for(five_alerts, timeout=60, what="five alerts")
    by_run = {attributes["run_id"]: (message, attributes) for message, attributes in published}
    assert sorted(by_run) == sorted(runs) and len(published) == 5
    assert [by_run[r][1]["flagged"] for r in runs] == [str(f).lower() for f in flags]
    assert all(by_run[r][1]["sentinel"] == NAME for r in runs)
    assert by_run[fourth][0]["mean"] == 0 and by_run[fourth][0]["previous_run_id"] == third
    # The index: the sentinel's trend, oldest first, the flags where they are.
    bucket = GcsBlobStore(stack.env["NIAH_BUCKET"])
    index = json.loads(bucket.read("reports/index.json"))
    trend = index["sentinels"][NAME]
    assert [p["run_id"] for p in trend["runs"]] == runs
    assert [p["flagged"] for p in trend["runs"]] == flags
    assert trend["flagged"] == 2 and trend["latest"]["run_id"] == fifth
    # `niah sentinel show` says the same.
    shown = stack.niah("sentinel", "show", NAME, "--json")
    assert [r["flagged"] for r in json.loads(shown.stdout)["runs"]] == flags
    listed = stack.niah("sentinel", "list")
    assert f"{NAME}: 0 6 * * * (Etc/UTC), 5 runs, 2 flagged" in listed.stdout, listed.stdout
    # The trend in Chromium at 1280 px: five points at their times, two flagged.
    url = f"{stack.env['STORAGE_EMULATOR_HOST']}/{stack.env['NIAH_BUCKET']}/reports/index.html"
    page, requested = open_page(browser, url, "index-sentinel.png")
    assert requested == [url]
    section = page.locator("#section-sentinels")
    assert section.locator("svg.trend circle").count() == 5
    assert section.locator("svg.trend polyline.baseline").count() == 1  # the dashed baseline
    assert section.locator("svg.trend circle.flagged").count() == 2
    assert section.locator("tr.flagged").count() == 2
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.close()
    # The flagged run's own report says why.
    report_url = store.get_run(fourth, counts=False)["report"]["html_url"]
    page, _ = open_page(browser, report_url, "report-sentinel.png")
    flag = page.locator('#section-sentinel p[data-flagged="true"]')
    assert flag.count() == 1 and "score fell" in (flag.text_content() or "")
    page.close()
