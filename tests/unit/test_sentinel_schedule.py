"""The local stack's Cloud Scheduler for sentinels: its file, its schedule, its request."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from niah.core.request.callers import claims_of
from niah_devtools import local_identity
from niah_devtools.sentinel_schedule import due, fire, fire_due, load_definitions
from tests.fakes import json_server

UTC = dt.UTC
HOUR = dt.timedelta(hours=1)


@pytest.fixture(autouse=True)
def stack_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local stack's signing key, as ``up`` makes one: the scheduler signs with it."""
    _, signer_env = local_identity.create(tmp_path, "http://127.0.0.1:1/")
    for name, value in signer_env.items():
        monkeypatch.setenv(name, value)


def test_the_file_takes_infras_shape_and_a_request_as_an_object(tmp_path: Path) -> None:
    path = tmp_path / "sentinels.json"
    path.write_text(
        json.dumps(
            {
                "flash-daily": {"schedule": "0 6 * * *", "request": {"model_name": "m"}},
                "pro": {"schedule": "*/5 * * * *", "time_zone": "Europe/Paris", "request": "{}"},
            }
        )
    )
    assert load_definitions(path) == {
        "flash-daily": {
            "schedule": "0 6 * * *",
            "time_zone": "Etc/UTC",
            "request": '{"model_name": "m"}',
        },
        "pro": {"schedule": "*/5 * * * *", "time_zone": "Europe/Paris", "request": "{}"},
    }
    path.write_text(json.dumps({"Flash!": {"schedule": "0 6 * * *", "request": {}}}))
    with pytest.raises(ValueError, match="sentinel name 'Flash!'"):
        load_definitions(path)


def test_firings_are_due_as_cron_says_in_the_sentinels_time_zone() -> None:
    after = dt.datetime(2026, 11, 28, 5, 59, tzinfo=UTC)
    now = dt.datetime(2026, 11, 29, 6, 0, tzinfo=UTC)
    assert due("0 6 * * *", "Etc/UTC", after, now) == [
        dt.datetime(2026, 11, 28, 6, 0, tzinfo=UTC),
        dt.datetime(2026, 11, 29, 6, 0, tzinfo=UTC),
    ]
    # 06:00 in Paris is 05:00 UTC in winter; the one at 28 Nov 05:00 UTC was before.
    assert due("0 6 * * *", "Europe/Paris", after, now) == [
        dt.datetime(2026, 11, 29, 5, 0, tzinfo=UTC)
    ]
    assert due("0 6 * * *", "Etc/UTC", now, now) == []


def test_a_firing_is_posted_as_cloud_scheduler_posts_it() -> None:
    received: list[tuple[str, dict[str, str], bytes]] = []
    with json_server(202, {"run_id": "run-0123456789abcdef"}, received) as url:
        answer = fire(url, "flash-daily", dt.datetime(2026, 11, 28, 6, 0, tzinfo=UTC))
    assert answer == {"run_id": "run-0123456789abcdef"}
    ((path, sent_headers, body),) = received
    headers = {name.lower(): value for name, value in sent_headers.items()}  # any case
    assert path == "/sentinel" and json.loads(body) == {"sentinel": "flash-daily"}
    assert headers["content-type"] == "application/json"
    assert headers["x-cloudscheduler-scheduletime"] == "2026-11-28T06:00:00.000Z"
    assert headers["x-cloudscheduler-jobname"] == "niah-sentinel-flash-daily"
    # As Scheduler's account, with a token the stack's key signed for the dispatcher.
    scheme, token = headers["authorization"].split(" ")
    claims = claims_of(token, "Authorization")
    assert scheme == "Bearer" and claims["email"] == local_identity.SCHEDULER_ACCOUNT
    assert claims["aud"] == url.rstrip("/") and claims["iss"] == local_identity.ISSUER


def test_the_local_scheduler_fires_what_is_due_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "sentinels.json"
    path.write_text(
        json.dumps(
            {
                "hourly": {"schedule": "0 * * * *", "request": {}},
                "daily": {"schedule": "0 6 * * *", "request": {}},
            }
        )
    )
    received: list[tuple[str, dict[str, str], bytes]] = []
    after = dt.datetime(2026, 11, 28, 6, 30, tzinfo=UTC)
    with json_server(202, {"run_id": "run-0123456789abcdef"}, received) as url:
        lines = fire_due(path, url, after, after + dt.timedelta(hours=2))
    assert [json.loads(line)["sentinel"] for line in lines] == ["hourly", "hourly"]
    times = [
        {k.lower(): v for k, v in h.items()}["x-cloudscheduler-scheduletime"]
        for _, h, _ in received
    ]
    assert times == ["2026-11-28T07:00:00.000Z", "2026-11-28T08:00:00.000Z"]
    # A dispatcher out of reach is logged, as Scheduler logs a failed attempt.
    failed = fire_due(path, "http://127.0.0.1:9/", after, after + dt.timedelta(hours=1))
    assert "error" in json.loads(failed[0])


def test_a_bad_edit_is_said_and_the_other_sentinels_still_fire(tmp_path: Path) -> None:
    path = tmp_path / "sentinels.json"
    path.write_text(
        json.dumps(
            {
                "typo": {"schedule": "every day", "request": {}},
                "zone": {"schedule": "0 * * * *", "time_zone": "Mars/Olympus", "request": {}},
                "hourly": {"schedule": "0 * * * *", "request": {}},
            }
        )
    )
    received: list[tuple[str, dict[str, str], bytes]] = []
    after = dt.datetime(2026, 11, 28, 6, 30, tzinfo=UTC)
    with json_server(202, {"run_id": "run-0123456789abcdef"}, received) as url:
        lines = [json.loads(line) for line in fire_due(path, url, after, after + HOUR)]
    assert [(line["sentinel"], "error" in line) for line in lines] == [
        ("typo", True),
        ("zone", True),
        ("hourly", False),
    ]
    assert len(received) == 1
    path.write_text("{not json")
    (broken,) = fire_due(path, "http://127.0.0.1:9/", after, after + HOUR)
    assert json.loads(broken)["error"].startswith("JSONDecodeError")
