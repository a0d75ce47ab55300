"""Spend ceilings, callers and the kill switch (issue 35): no surprise bills."""

from __future__ import annotations

import base64
import datetime as dt
import inspect
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import time_machine

from niah.core.money.spend import day_window, month_window, read_budget_alert
from niah.core.request.callers import (
    LOCAL_CALLER,
    caller_of_claims,
    claims_of,
    verified_header,
)
from niah.errors import ForbiddenError, SpendRefusedError
from niah.service.runs import admission
from niah.service.runs.admission import handle_budget_alert
from niah.service.runs.cancel import cancel_run
from niah.service.runs.dispatch import Dispatched, dispatch_run
from niah.service.runs.spend_settlement import settle_run_spend
from niah.settings import get_settings
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, MemorySpendLedger, RecordingPublisher
from tests.unit.id_tokens import signed

ALICE, BOB = "alice@example.com", "bob@example.com"


def body(seed: int = 1, **options: Any) -> dict[str, Any]:
    """A Gemini run of two 600-token cells (worst case about 30 cents with 5 calls each)."""
    return {
        "context_lengths": [600],
        "document_depth_percents": [0, 100],
        "seed": seed,
    } | options


@pytest.fixture(autouse=True)
def gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("NIAH_DEFAULT_MODEL_NAME", "gemini-3.8-flash")
    monkeypatch.setenv("NIAH_LOCAL_MODEL_AVAILABLE", "false")
    monkeypatch.setenv("NIAH_KILL_SWITCH_CACHE_SECONDS", "0")
    get_settings.cache_clear()
    admission.forget_kill_switch()
    yield
    admission.forget_kill_switch()
    get_settings.cache_clear()


def settings(monkeypatch: pytest.MonkeyPatch, **values: Any) -> None:
    for name, value in values.items():
        monkeypatch.setenv(f"NIAH_{name.upper()}", str(value))
    get_settings.cache_clear()


class World:
    """One deployment: its store, bus, bucket and ledger."""

    def __init__(self, blobs: MemoryBlobs) -> None:
        self.store, self.publisher = MemoryStore(), RecordingPublisher()
        self.blobs, self.ledger = blobs, MemorySpendLedger()

    def post(self, payload: dict[str, Any], *, caller: str = ALICE, **kw: Any) -> Dispatched:
        return dispatch_run(
            payload,
            store=self.store,
            publisher=self.publisher,
            blobs=self.blobs,
            ledger=self.ledger,
            caller=caller,
            **kw,
        )

    def worst_usd(self, run_id: str) -> float:
        run = self.store.get_run(run_id)
        assert run is not None
        return float(run["worst_case"]["usd"])


@pytest.fixture
def world(essay_blobs: MemoryBlobs) -> World:
    return World(essay_blobs)


def one_run_usd(world: World) -> float:
    """The worst case of one ``body()`` run, measured on a deployment of its own."""
    probe = World(world.blobs)
    return probe.worst_usd(probe.post(body(seed=999)).run_id)


# ---------- the worst case ----------


def test_the_worst_case_counts_every_retry_the_full_output_budget_and_the_judge(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = world.post(body())
    worst = world.store.get_run(plain.run_id)["worst_case"]
    assert worst["cells"] == 2 and worst["calls_per_cell"] == 5  # NIAH_MAX_CELL_FAILURES
    assert worst["prompt_tokens"] == 2 * 600 * 5
    assert worst["output_tokens"] >= 2 * 5 * 1000  # answer + thinking room, every call
    assert worst["judge_usd"] == 0
    judged = world.post(body(seed=2, scorer="both", evaluator_model_name="gemini-3.8-flash"))
    with_judge = world.store.get_run(judged.run_id)["worst_case"]
    assert with_judge["judge_usd"] > 0
    assert with_judge["usd"] == pytest.approx(worst["usd"] + with_judge["judge_usd"], abs=1e-5)
    settings(monkeypatch, max_cell_failures=1)
    single = World(world.blobs)
    assert single.worst_usd(single.post(body()).run_id) == pytest.approx(worst["usd"] / 5, abs=1e-5)


# ---------- the ceilings ----------


def test_a_run_over_the_daily_ceiling_is_refused_naming_its_cost_the_room_and_the_setting(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    usd = one_run_usd(world)
    settings(monkeypatch, daily_spend_ceiling_usd=round(usd * 1.5, 6))
    world.post(body(seed=1))
    with pytest.raises(SpendRefusedError) as refused:
        world.post(body(seed=2))  # a new seed is a new run: it must pay its way too
    error = refused.value
    assert error.status == 429 and error.field == "context_lengths"
    assert f"${usd:,.2f}" in error.message  # the run's worst case
    assert f"${usd * 0.5:,.2f} is left" in error.message  # the room
    assert "NIAH_DAILY_SPEND_CEILING_USD" in error.message
    assert len(world.store.runs) == 1  # refused before anything was recorded or published


def test_two_admissions_at_once_cannot_both_take_the_last_room(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An admitted run's worst case counts at once, before it has spent a cent."""
    settings(monkeypatch, daily_spend_ceiling_usd=round(one_run_usd(world) * 1.5, 6))
    start = threading.Barrier(6)
    outcomes: list[str] = []

    def post(seed: int) -> None:
        start.wait()
        try:
            world.post(body(seed=seed))
            outcomes.append("admitted")
        except SpendRefusedError:
            outcomes.append("refused")

    threads = [threading.Thread(target=post, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["admitted"] + ["refused"] * 5


def test_the_same_request_twice_is_held_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    usd = one_run_usd(world)
    settings(monkeypatch, daily_spend_ceiling_usd=round(usd * 1.5, 6))
    first = world.post(body())
    again = world.post(body())  # a client's retry: the same run, not charged again
    assert again.run_id == first.run_id and not again.created
    assert world.ledger.window_spend(day_window(dt.datetime.now(dt.UTC))) == pytest.approx(usd)


def test_the_daily_ceiling_resets_the_next_utc_day(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    usd = one_run_usd(world)
    settings(monkeypatch, daily_spend_ceiling_usd=round(usd * 1.5, 6))
    with time_machine.travel(dt.datetime(2026, 11, 27, 23, 50, tzinfo=dt.UTC), tick=False):
        world.post(body(seed=1))
        with pytest.raises(SpendRefusedError, match="tomorrow 00:00 UTC"):
            world.post(body(seed=2))
    with time_machine.travel(dt.datetime(2026, 11, 28, 0, 10, tzinfo=dt.UTC), tick=False):
        world.post(body(seed=2))
    assert world.ledger.window_spend("day-2026-11-27") == pytest.approx(usd)
    assert world.ledger.window_spend("day-2026-11-28") == pytest.approx(usd)


def test_the_monthly_ceiling_resets_the_next_month(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    usd = one_run_usd(world)
    settings(monkeypatch, daily_spend_ceiling_usd=0, monthly_spend_ceiling_usd=round(usd * 2.5, 6))
    with time_machine.travel(dt.datetime(2026, 11, 2, 12, tzinfo=dt.UTC), tick=False):
        world.post(body(seed=1))
    with time_machine.travel(dt.datetime(2026, 11, 30, 23, 59, tzinfo=dt.UTC), tick=False):
        world.post(body(seed=2))  # another day, the same month: the daily ceiling is off
        with pytest.raises(SpendRefusedError, match="NIAH_MONTHLY_SPEND_CEILING_USD"):
            world.post(body(seed=3))
    with time_machine.travel(dt.datetime(2026, 12, 1, 0, 1, tzinfo=dt.UTC), tick=False):
        world.post(body(seed=3))
    assert world.ledger.window_spend("month-2026-11") == pytest.approx(2 * usd)
    assert world.ledger.window_spend("month-2026-12") == pytest.approx(usd)


def test_a_finished_runs_actual_spend_replaces_its_worst_case(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    usd = one_run_usd(world)
    settings(monkeypatch, daily_spend_ceiling_usd=round(usd * 1.5, 6))
    first = world.post(body(seed=1))
    settle_run_spend(first.run_id, 0.01, ledger=world.ledger)  # what the report counted
    today = day_window(dt.datetime.now(dt.UTC))
    assert world.ledger.window_spend(today) == pytest.approx(0.01)
    world.post(body(seed=2))  # the room it held is free again
    assert world.ledger.window_spend(today) == pytest.approx(0.01 + usd)
    settle_run_spend(first.run_id, 0.01, ledger=world.ledger)  # the report redelivered
    assert world.ledger.window_spend(today) == pytest.approx(0.01 + usd)  # counted once
    settle_run_spend(first.run_id, 0.02, ledger=world.ledger)  # a call billed since
    assert world.ledger.window_spend(today) == pytest.approx(0.02 + usd)  # only what came


def test_a_callers_daily_share_and_running_runs_are_limited_when_set(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    usd = one_run_usd(world)
    settings(monkeypatch, caller_daily_spend_ceiling_usd=round(usd * 1.5, 6))
    world.post(body(seed=1), caller=ALICE)
    with pytest.raises(SpendRefusedError, match="NIAH_CALLER_DAILY_SPEND_CEILING_USD"):
        world.post(body(seed=2), caller=ALICE)
    world.post(body(seed=2), caller=BOB)  # another caller's share
    now = dt.datetime.now(dt.UTC)
    assert world.ledger.window_spend(f"caller-{now:%Y-%m-%d}-{BOB}") == pytest.approx(usd)
    settings(monkeypatch, caller_daily_spend_ceiling_usd=0, max_running_runs_per_caller=2)
    world.post(body(seed=3), caller=BOB)
    with pytest.raises(SpendRefusedError, match=r"bob@example\.com has 2 runs running"):
        world.post(body(seed=4), caller=BOB)


def test_an_unpriced_gemini_model_is_refused_its_spend_cannot_be_held(world: World) -> None:
    with pytest.raises(SpendRefusedError, match="NIAH_PRICE_TABLE") as refused:
        world.post(body(model_name="gemini-9.9-imaginary"))
    assert refused.value.field == "model_name"


# ---------- callers ----------


def token(claims: dict[str, Any]) -> str:
    """A JWT's text (its signature is not read here: ``niah.cloud.identity`` checks it)."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


def test_the_caller_is_the_verified_tokens_email_or_its_subject() -> None:
    def caller(claims: dict[str, Any]) -> str:
        header, text = verified_header({"Authorization": f"Bearer {token(claims)}"})
        return caller_of_claims(claims_of(text, header), header)

    assert caller({"email": "Ada@Example.com", "aud": "x"}) == "ada@example.com"
    assert caller({"sub": "1234567890"}) == "sub:1234567890"  # no e-mail minted
    for header in ("Basic abc", "Bearer not-a-jwt", "", f"Bearer {token({'aud': 'x'})}"):
        with pytest.raises(ForbiddenError) as refused:
            name, text = verified_header({"Authorization": header})
            caller_of_claims(claims_of(text, name), name)
        assert refused.value.status == 403 and refused.value.field == "Authorization"
    with pytest.raises(ForbiddenError):  # a payload that is not JSON
        claims_of("a.!!!.c", "Authorization")


def test_only_the_creator_or_an_operator_may_cancel_resume_or_relabel(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = world.post(body(), caller=ALICE)
    assert world.store.get_run(run.run_id)["created_by"] == ALICE
    world.store.settle(run.run_id)
    # The same request from another caller changes nothing: it is answered.
    assert world.post(body(), caller=BOB).run_id == run.run_id
    with pytest.raises(ForbiddenError, match="may not relabel"):
        world.post(body(label="bob's now"), caller=BOB)
    with pytest.raises(ForbiddenError, match="may not resume"):
        world.post(body(), caller=BOB, resume=True)
    with pytest.raises(ForbiddenError, match="may not cancel") as refused:
        cancel_run(run.run_id, store=world.store, caller=BOB)
    assert refused.value.status == 403 and refused.value.field == "run_id"
    assert world.store.get_run(run.run_id)["status"] == "running"
    world.post(body(label="alice's"), caller=ALICE)
    assert world.store.get_run(run.run_id)["label"] == "alice's"
    settings(monkeypatch, operators=json.dumps([BOB]))
    assert cancel_run(run.run_id, store=world.store, caller=BOB).outcome == "cancelled"
    resumed = world.post(body(), caller=BOB, resume=True)
    assert not resumed.cancelled


def test_a_cancel_settles_the_runs_reservation_and_a_resume_reserves_again(
    world: World,
) -> None:
    run = world.post(body())
    today = day_window(dt.datetime.now(dt.UTC))
    held = world.ledger.window_spend(today)
    assert held > 0
    cancel_run(run.run_id, store=world.store, ledger=world.ledger, caller=ALICE)
    assert world.ledger.window_spend(today) == pytest.approx(0.0)  # nothing was called
    world.post(body(), resume=True)
    assert world.ledger.window_spend(today) == pytest.approx(held)  # its two cells again
    assert world.ledger.window_spend(month_window(dt.datetime.now(dt.UTC))) == pytest.approx(held)


# ---------- the kill switch ----------


def alert(**fields: Any) -> dict[str, Any]:
    """A budget notification as Google sends it (with a field it may add later)."""
    return {
        "budgetDisplayName": "niah",
        "costAmount": 100.01,
        "costIntervalStart": "2026-11-01T08:00:00Z",
        "budgetAmount": 100.0,
        "budgetAmountType": "SPECIFIED_AMOUNT",
        "alertThresholdExceeded": 1.0,
        "currencyCode": "USD",
        "someFieldGoogleAddsLater": {"nested": [1, 2]},
    } | fields


def test_a_budget_alert_trips_the_switch_only_once_the_budget_is_spent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings(monkeypatch, budget_alert_pusher="pusher@p.iam.gserviceaccount.com")
    pusher, ledger = "pusher@p.iam.gserviceaccount.com", MemorySpendLedger()
    assert not handle_budget_alert(alert(costAmount=99.0), ledger=ledger, caller=pusher)
    assert not handle_budget_alert({"budgetDisplayName": "x"}, ledger=ledger, caller=pusher)
    assert not handle_budget_alert(alert(costAmount="lots"), ledger=ledger, caller=pusher)
    assert ledger.switch is None
    with pytest.raises(ForbiddenError):
        handle_budget_alert(alert(), ledger=ledger, caller=BOB)
    assert ledger.switch is None
    assert handle_budget_alert(alert(), ledger=ledger, caller=pusher)
    assert ledger.switch is not None and ledger.switch["budget_amount"] == 100.0
    assert "100.01 of 100 USD" in ledger.switch["reason"]
    share = read_budget_alert(alert(costAmount=80.0), trip_share=0.8)
    assert share is not None and share.trips


def test_the_kill_switch_refuses_new_runs_until_it_is_lifted(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.ledger.set_kill_switch({"reason": "budget spent", "set_at": "2026-11-27T10:00:00"})
    with pytest.raises(SpendRefusedError, match="niah killswitch lift") as refused:
        world.post(body())
    assert refused.value.status == 429 and refused.value.field == "kill_switch"
    assert world.store.runs == {} and world.publisher.cells == []
    world.ledger.set_kill_switch(None)
    assert world.post(body()).created


def test_a_dispatcher_reads_the_switch_at_most_once_per_cache_period(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings(monkeypatch, kill_switch_cache_seconds=60)
    for seed in range(3):
        world.post(body(seed=seed))
    assert world.ledger.switch_reads == 1


# ---------- the dispatcher's doors ----------


def dispatcher(monkeypatch: pytest.MonkeyPatch, world: World) -> Any:
    """The dispatcher's Flask app (as functions-framework serves it) on this world's fakes.

    Its requests name their caller with tokens a test key signs (``tests.unit.id_tokens``).
    """
    import functions_framework

    from tests import REPO
    from tests.unit.id_tokens import trust_test_keys

    trust_test_keys(monkeypatch)

    source = str(REPO / "functions" / "dispatcher" / "main.py")
    app = functions_framework.create_app(target="dispatch", source=source)
    module = inspect.unwrap(app.view_functions["run"]).__globals__  # main.py's namespace
    clients = (world.store, world.publisher, world.blobs)
    monkeypatch.setitem(module, "_clients", lambda: clients)
    monkeypatch.setitem(module, "_ledger", lambda: world.ledger)
    client = app.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = signed(LOCAL_CALLER)
    return client


def pushed(data: dict[str, Any]) -> dict[str, Any]:
    encoded = base64.b64encode(json.dumps(data).encode()).decode()
    return {"subscription": "projects/p/subscriptions/budget", "message": {"data": encoded}}


def test_the_dispatcher_answers_403_for_another_callers_run_and_429_over_the_ceiling(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = dispatcher(monkeypatch, world)
    alice, bob = {"Authorization": signed(ALICE)}, {"Authorization": signed(BOB)}
    started = client.post("/", json=body(), headers=alice)
    assert started.status_code == 202
    run_id = started.get_json()["run_id"]
    assert world.store.get_run(run_id)["created_by"] == ALICE
    refused = client.post("/cancel", json={"run_id": run_id}, headers=bob)
    assert refused.status_code == 403 and refused.get_json()["error"]["field"] == "run_id"
    assert client.post("/cancel", json={"run_id": run_id}, headers=alice).status_code == 200
    settings(monkeypatch, daily_spend_ceiling_usd=0.000001)
    over = client.post("/", json=body(seed=7), headers=bob)
    assert over.status_code == 429
    assert "NIAH_DAILY_SPEND_CEILING_USD" in over.get_json()["error"]["message"]


def test_a_budget_alert_pushed_to_the_dispatcher_stops_new_runs(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    pusher = "niah-pusher@p.iam.gserviceaccount.com"
    settings(monkeypatch, budget_alert_pusher=pusher)
    client = dispatcher(monkeypatch, world)
    as_pusher = {"Authorization": signed(pusher)}
    forged = client.post(
        "/budget-alert", json=pushed(alert()), headers={"Authorization": signed(BOB)}
    )
    assert forged.status_code == 403 and world.ledger.switch is None
    under = client.post("/budget-alert", json=pushed(alert(costAmount=5.0)), headers=as_pusher)
    assert under.status_code == 200 and under.get_json() == {"kill_switch_tripped": False}
    assert client.post("/budget-alert", json={"nope": 1}, headers=as_pusher).status_code == 400
    tripped = client.post("/budget-alert", json=pushed(alert()), headers=as_pusher)
    assert tripped.get_json() == {"kill_switch_tripped": True}
    stopped = client.post("/", json=body())
    assert stopped.status_code == 429 and stopped.get_json()["error"]["field"] == "kill_switch"


def test_cancelling_a_run_this_version_cannot_read_is_answered_not_retried(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel is written: 200 saying the run is unreadable, never a 503 "retry"."""
    client = dispatcher(monkeypatch, world)
    alice = {"Authorization": signed(ALICE)}
    run_id = client.post("/", json=body(), headers=alice).get_json()["run_id"]
    world.store.runs[run_id]["spec"] |= {"context_lengths": [-5]}
    answered = client.post("/cancel", json={"run_id": run_id}, headers=alice)
    assert answered.status_code == 200
    reply = answered.get_json()
    assert (reply["outcome"], reply["status"]) == ("cancelled", "cancelled")
    assert (
        reply["unreadable"].startswith(f"run {run_id}") and "context_lengths" in reply["unreadable"]
    )
    assert world.store.runs[run_id]["status"] == "cancelled"
    again = client.post("/cancel", json={"run_id": run_id}, headers=alice).get_json()
    assert again["outcome"] == "already_cancelled" and "unreadable" in again
