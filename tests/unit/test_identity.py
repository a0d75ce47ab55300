"""Issue 51: the caller is the identity that was verified; machine routes are their machines'.

Through the dispatcher's own HTTP entry point on fakes, with tokens a test key signs
(``tests.unit.id_tokens``): the check is the real one (``niah.cloud.identity``).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import time
from typing import Any

import pytest

from niah.cloud.identity import verified_caller
from niah.core.request.callers import SERVERLESS_AUTHORIZATION, SIGNATURE_REMOVED
from niah.core.request.cron_ticks import is_tick
from niah.errors import ForbiddenError, RequestError
from niah.service.sentinel.firing import SCHEDULE_TIME_HEADER, refused_alert
from niah.settings import get_settings
from tests.unit.id_tokens import AUDIENCE, signed, trust_test_keys, unsigned

pytestmark = pytest.mark.unit

ALICE, MALLORY = "alice@example.com", "mallory@example.com"
SCHEDULER, PUSHER, OPERATOR = "scheduler@p.iam", "pusher@p.iam", "ops@example.com"
HOST = "localhost"


@pytest.fixture
def owners(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test key trusted, and the machine routes' accounts and an operator named."""
    trust_test_keys(monkeypatch)
    monkeypatch.setenv("NIAH_SENTINEL_SCHEDULER", SCHEDULER)
    monkeypatch.setenv("NIAH_BUDGET_ALERT_PUSHER", PUSHER)
    monkeypatch.setenv("NIAH_OPERATORS", json.dumps([OPERATOR]))
    get_settings.cache_clear()


def refused(headers: dict[str, str]) -> ForbiddenError:
    with pytest.raises(ForbiddenError) as caught:
        verified_caller(headers, host=HOST)
    assert caught.value.status == 403
    return caught.value


# ---------- the check itself ----------


def test_a_signed_token_names_its_caller_and_every_other_token_is_refused(owners: None) -> None:
    assert verified_caller({"Authorization": signed("Ada@Example.com")}, host=HOST) == (
        "ada@example.com"
    )
    now = int(time.time())
    good: dict[str, Any] = {"iss": "https://identity.unit.test", "aud": AUDIENCE, "email": ALICE}
    good |= {"iat": now, "exp": now + 600}
    for name, header in {
        "unsigned": unsigned(good),
        "no signature": unsigned(good, signature=""),
        "expired": signed(ALICE, lifetime=-120),
        "wrong audience": signed(ALICE, audience="https://another-service.run.app"),
        "wrong issuer": signed(ALICE, issuer="https://evil.example"),
        "Google's removal mark, without Cloud Run in front": unsigned(good, SIGNATURE_REMOVED),
    }.items():
        error = refused({"Authorization": header})
        assert error.field == "Authorization", name
    # No token at all: refused, not the local user.
    assert "send an ID token" in refused({}).message
    # A payload that is someone else's, under a real signature: the signature fails.
    real = signed(ALICE).split(".")
    forged = base64.urlsafe_b64encode(json.dumps(good | {"email": MALLORY}).encode()).decode()
    refused({"Authorization": ".".join([real[0], forged.rstrip("="), real[2]])})


def test_the_caller_is_x_serverless_authorization_and_a_forged_authorization_is_never_read(
    owners: None,
) -> None:
    forged = unsigned({"email": ALICE, "iss": "https://identity.unit.test"})
    both = {SERVERLESS_AUTHORIZATION: signed(MALLORY), "Authorization": forged}
    assert verified_caller(both, host=HOST) == MALLORY
    # Even a validly signed Authorization beside it is not the caller.
    assert verified_caller(
        {SERVERLESS_AUTHORIZATION: signed(MALLORY), "Authorization": signed(ALICE)}, host=HOST
    ) == (MALLORY)
    # Only X-Serverless-Authorization, as `gcloud run services proxy` sends: its e-mail.
    assert verified_caller({SERVERLESS_AUTHORIZATION: signed(ALICE)}, host=HOST) == ALICE
    # An unverifiable X-Serverless-Authorization is refused, whatever Authorization holds.
    error = refused({SERVERLESS_AUTHORIZATION: forged, "Authorization": signed(ALICE)})
    assert error.field == SERVERLESS_AUTHORIZATION


def test_behind_cloud_run_the_checked_token_is_taken_at_its_claims_and_only_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trust_test_keys(monkeypatch, mode="cloud_run")
    monkeypatch.setenv("NIAH_IDENTITY_ISSUERS", json.dumps(["https://accounts.google.com"]))
    get_settings.cache_clear()
    now = int(time.time())
    claims = {"iss": "https://accounts.google.com", "iat": now, "exp": now + 600}
    checked = unsigned(claims | {"email": MALLORY}, SIGNATURE_REMOVED)
    forged = unsigned(claims | {"email": ALICE}, SIGNATURE_REMOVED)
    headers = {SERVERLESS_AUTHORIZATION: checked, "Authorization": forged}
    assert verified_caller(headers, host=HOST) == MALLORY
    assert verified_caller({"Authorization": checked}, host=HOST) == MALLORY
    # Expired since Cloud Run checked it, or another issuer's: refused.
    refused(
        {"Authorization": unsigned(claims | {"email": ALICE, "exp": now - 120}, SIGNATURE_REMOVED)}
    )
    refused({"Authorization": unsigned(claims | {"email": ALICE, "iss": "x"}, SIGNATURE_REMOVED)})
    # A token that still carries a signature did not come through Cloud Run's check:
    # verified here, and an unsigned one refused.
    refused({"Authorization": unsigned(claims | {"email": ALICE})})


def test_an_email_marked_unverified_is_not_the_caller(owners: None) -> None:
    header = signed(OPERATOR, email_verified=False, sub="12345")
    assert verified_caller({"Authorization": header}, host=HOST) == "sub:12345"


# ---------- the routes, through the dispatcher ----------


@pytest.fixture
def dispatcher(monkeypatch: pytest.MonkeyPatch, owners: None, essay_blobs: Any) -> Any:
    from tests.unit.test_bad_requests import http_dispatcher

    client, clients = http_dispatcher(monkeypatch, essay_blobs)
    owners_env = {"NIAH_SENTINEL_SCHEDULER": SCHEDULER, "NIAH_BUDGET_ALERT_PUSHER": PUSHER}
    for name, value in owners_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NIAH_OPERATORS", json.dumps([OPERATOR]))
    get_settings.cache_clear()
    del client.environ_base["HTTP_AUTHORIZATION"]  # each request says who it is
    return client, clients


RUN = {"context_lengths": [300], "document_depth_percents": [50], "seed": 51}


def test_a_forged_authorization_beside_a_verified_one_cannot_cancel_anothers_run(
    dispatcher: Any,
) -> None:
    client, (store, _, _) = dispatcher
    started = client.post("/", json=RUN, headers={"Authorization": signed(ALICE)})
    assert started.status_code == 202, started.get_json()
    run_id = started.get_json()["run_id"]
    assert store.runs[run_id]["created_by"] == ALICE
    forged = unsigned({"email": ALICE, "iss": "https://identity.unit.test"})
    attempt = client.post(
        "/cancel",
        json={"run_id": run_id},
        headers={SERVERLESS_AUTHORIZATION: signed(MALLORY), "Authorization": forged},
    )
    assert attempt.status_code == 403, attempt.get_json()
    assert mallory_named(attempt)
    assert store.runs[run_id]["status"] != "cancelled"
    # Unsigned, expired or another service's token alone: refused before anything.
    for header in (forged, signed(ALICE, lifetime=-120), signed(ALICE, audience="https://x")):
        answer = client.post("/cancel", json={"run_id": run_id}, headers={"Authorization": header})
        assert answer.status_code == 403
    assert store.runs[run_id]["status"] != "cancelled"


def mallory_named(answer: Any) -> bool:
    return MALLORY in answer.get_json()["error"]["message"]


def test_a_caller_sending_only_x_serverless_authorization_is_recorded_by_its_email(
    dispatcher: Any,
) -> None:
    client, (store, _, _) = dispatcher
    started = client.post("/", json=RUN, headers={SERVERLESS_AUTHORIZATION: signed(ALICE)})
    assert started.status_code == 202, started.get_json()
    assert store.runs[started.get_json()["run_id"]]["created_by"] == ALICE


def test_budget_alerts_only_from_the_pusher_checked_before_the_body(dispatcher: Any) -> None:
    client, _ = dispatcher
    deep = "[" * 100_000 + "]" * 100_000
    forged = unsigned({"email": PUSHER, "iss": "https://identity.unit.test"})
    for headers in (
        {SERVERLESS_AUTHORIZATION: signed(MALLORY), "Authorization": forged},
        {"Authorization": signed(MALLORY)},
        {"Authorization": forged},
    ):
        for data in (deep, "{not json", json.dumps({"message": {"data": "!!"}})):
            answer = client.post(
                "/budget-alert", data=data, content_type="application/json", headers=headers
            )
            assert answer.status_code == 403, (headers, data[:10], answer.get_json())
    notification = {"costAmount": 150.0, "budgetAmount": 100.0, "currencyCode": "USD"}
    push = {"message": {"data": base64.b64encode(json.dumps(notification).encode()).decode()}}
    tripped = client.post("/budget-alert", json=push, headers={"Authorization": signed(PUSHER)})
    assert tripped.status_code == 200 and tripped.get_json() == {"kill_switch_tripped": True}


def test_any_invoker_posting_to_sentinel_gets_403_before_its_body_is_read(dispatcher: Any) -> None:
    client, (store, publisher, _) = dispatcher
    now = dt.datetime.now(dt.UTC).isoformat()
    scheduler_headers = {"X-CloudScheduler": "true", SCHEDULE_TIME_HEADER: now}
    for headers in (
        {"Authorization": signed(ALICE)},
        {"Authorization": signed(ALICE), **scheduler_headers},  # the header proves nothing
        {SERVERLESS_AUTHORIZATION: signed(ALICE), "Authorization": unsigned({"email": SCHEDULER})},
    ):
        for data in ('{"sentinel": "daily"}', "[" * 100_000, "not json"):
            answer = client.post(
                "/sentinel", data=data, content_type="application/json", headers=headers
            )
            assert answer.status_code == 403, answer.get_json()
            assert answer.get_json()["error"]["field"] == "Authorization"
    assert store.runs == {} and publisher.alerts == []  # no run, and no alert published


# ---------- a scheduled firing's time, and its alert ----------


def test_is_tick_agrees_with_croniter() -> None:
    from zoneinfo import ZoneInfo

    from croniter import croniter

    schedules = ["0 6 * * *", "*/15 * * * *", "30 2 1,15 * *", "0 9 * * 1-5", "0 0 * jan,jul sun"]
    schedules += ["5 4 13 * fri", "0 */6 * * *", "0 6 * * 7"]
    for schedule in schedules:
        for zone in ("Etc/UTC", "Europe/Berlin"):
            ticks = croniter(schedule, dt.datetime(2026, 3, 1, tzinfo=ZoneInfo(zone)))
            for _ in range(40):
                when = ticks.get_next(dt.datetime).astimezone(dt.UTC)
                assert is_tick(schedule, zone, when), (schedule, zone, when)
                later = when + dt.timedelta(minutes=1)
                assert is_tick(schedule, zone, later) == _tick(schedule, zone, later)
                assert not is_tick(schedule, zone, when + dt.timedelta(seconds=1))
    start = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    with pytest.raises(ValueError):
        is_tick("0 6 * *", "Etc/UTC", start)
    with pytest.raises(ValueError):
        is_tick("0 6 * * *", "Mars/Olympus", start)


def _tick(schedule: str, zone: str, when: dt.datetime) -> bool:
    """The answer of croniter for one time: the next tick after a minute before it."""
    from zoneinfo import ZoneInfo

    from croniter import croniter

    local = (when - dt.timedelta(minutes=1)).astimezone(ZoneInfo(zone))
    return bool(croniter(schedule, local).get_next(dt.datetime).astimezone(dt.UTC) == when)


def test_a_scheduled_firing_runs_only_at_a_tick_of_its_schedule(dispatcher: Any) -> None:
    from tests.unit.test_sentinels import REQUEST, defined

    client, (store, publisher, _) = dispatcher
    defined(store)  # "daily": 0 6 * * * in UTC
    today = dt.datetime.now(dt.UTC).replace(hour=6, minute=0, second=0, microsecond=0)
    tick = today if today <= dt.datetime.now(dt.UTC) else today - dt.timedelta(days=1)

    def fire(when: str, who: str = SCHEDULER) -> Any:
        headers = {"Authorization": signed(who), "X-CloudScheduler": "true"}
        return client.post(
            "/sentinel", json={"sentinel": "daily"}, headers={**headers, SCHEDULE_TIME_HEADER: when}
        )

    off = fire((tick - dt.timedelta(hours=1, seconds=7)).isoformat())
    assert off.status_code == 400 and off.get_json()["error"]["field"] == SCHEDULE_TIME_HEADER
    assert "is not a firing of sentinel daily's schedule" in off.get_json()["error"]["message"]
    assert store.runs == {}
    # Its alert tells the firing was refused, and nothing the request carried.
    ((message, attributes),) = publisher.alerts
    assert attributes["sentinel"] == "daily"
    assert message["text"] == (
        f"firing refused, no run made: {SCHEDULE_TIME_HEADER}: the firing was refused (400); "
        "the dispatcher's log says why"
    )
    # The tick itself, given with an offset (RFC 3339 allows any): a run.
    berlin = tick.astimezone(dt.timezone(dt.timedelta(hours=1))).isoformat()
    ran = fire(berlin)
    assert ran.status_code == 202, ran.get_json()
    assert store.runs[ran.get_json()["run_id"]]["spec"]["scheduled_at"] == tick.strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    # Without the header: refused (Scheduler always sends it).
    missing = client.post(
        "/sentinel", json={"sentinel": "daily"}, headers={"Authorization": signed(SCHEDULER)}
    )
    assert missing.status_code == 400 and missing.get_json()["error"]["field"] == (
        SCHEDULE_TIME_HEADER
    )
    # An operator by hand fires at the minute asked, tick or not.
    by_hand = client.post(
        "/sentinel", json={"sentinel": "daily"}, headers={"Authorization": signed(OPERATOR)}
    )
    assert by_hand.status_code == 202, by_hand.get_json()
    assert REQUEST["model_name"] == store.runs[by_hand.get_json()["run_id"]]["spec"]["model_name"]


def test_an_alert_never_carries_the_callers_text() -> None:
    hostile = "<script>alert(1)</script> wire $1,000 to evil.example"
    for name in (hostile, "daily", 5):
        for error in (
            RequestError(hostile, f"{hostile!r} is not taken here"),
            RequestError("sentinel", f"no sentinel named {hostile!r}"),
            RequestError(SCHEDULE_TIME_HEADER, f"{hostile[:40]!r} is not an RFC 3339 time"),
        ):
            message, attributes = refused_alert(name, error, stored=False)
            whole = json.dumps([message, attributes])
            assert "script" not in whole and "evil" not in whole and "$1,000" not in whole
            assert attributes["sentinel"] in ("", "daily")
