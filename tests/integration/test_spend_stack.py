"""Holds on the local stack (issue 51): the Firestore ledger, a certify round, the sweep.

The ledger's transactions run against the Firestore emulator; the certify run goes
through the dispatcher, Pub/Sub push and the worker, whose round step takes its hold in
one transaction with the kill switch.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
import requests

from niah.cloud.spend_ledger import FirestoreSpendLedger
from niah.cloud.store import FirestoreStore
from niah.service.runs.spend_settlement import settle_ended
from tests.integration.conftest import Stack, wait_for
from tests.integration.test_tasks_run import submit

pytestmark = pytest.mark.integration


def windows() -> dict[str, float | None]:
    """Windows of this test's own (so other runs on the stack do not move them)."""
    tag = uuid.uuid4().hex[:8]
    return {f"day-test-{tag}": 10.0, f"month-test-{tag}": None}


def test_the_firestore_ledger_holds_and_settles_exactly(stack: Stack) -> None:
    ledger = FirestoreSpendLedger()
    ceilings = windows()
    day, month = ceilings
    run_id = f"run-test-{uuid.uuid4().hex[:8]}"
    assert ledger.reserve(run_id, 4.0, ceilings, caller="a@example.com").admitted
    assert ledger.reserve(run_id, 4.0, ceilings, caller="a@example.com").held  # same hold
    assert ledger.window_spend(day) == 4.0
    assert ledger.reserve(run_id, 5.0, ceilings, caller="a@example.com", hold="reask-0").admitted
    over = ledger.reserve(run_id, 1.5, ceilings, caller="a@example.com", hold="reask-1")
    assert not over.admitted and over.refused == day
    ledger.set_kill_switch({"reason": "test"})
    try:
        switched = ledger.reserve(run_id, 0.0, ceilings, caller="a@example.com", hold="round-9")
        assert not switched.admitted and switched.refused == "kill_switch"
    finally:
        ledger.set_kill_switch(None)
    assert [e["run_id"] for e in ledger.open_entries() if e["run_id"] == run_id] == [run_id]
    assert ledger.window_spend(day) == 9.0 and ledger.window_spend(month) == 9.0
    assert ledger.settle(run_id, 1.25) == 1.25 - 9.0
    assert ledger.settle(run_id, 1.25) is None  # once
    assert ledger.window_spend(day) == 1.25 and ledger.window_spend(month) == 1.25
    assert run_id not in {e["run_id"] for e in ledger.open_entries()}
    assert ledger.settle(run_id, 1.5) == 0.25  # a call billed after a cancel: only it
    assert ledger.window_spend(day) == 1.5


def test_a_hold_whose_run_never_was_is_listed_and_settled_by_the_sweep(stack: Stack) -> None:
    ledger = FirestoreSpendLedger()
    ceilings = windows()
    day = next(iter(ceilings))
    run_id = f"run-{uuid.uuid4().hex[:16]}"  # a dispatcher that died before storing it
    ledger.reserve(run_id, 3.0, ceilings, caller="a@example.com")
    listed = stack.niah("limits", "--json")
    assert listed.returncode == 0, listed.stderr
    holds = {h["run_id"]: h for h in json.loads(listed.stdout)["holds"]}
    assert holds[run_id]["reserved_usd"] == 3.0 and holds[run_id]["holds"] == ["admit"]
    settle_ended(store=FirestoreStore(), ledger=ledger, older_than_seconds=0)
    entry = ledger.entry(run_id)
    assert entry is not None and entry["settled"] and entry["settled_usd"] == 0.0
    assert ledger.window_spend(day) == 0.0
    assert run_id not in {e["run_id"] for e in ledger.open_entries()}


def test_an_operator_releases_a_stuck_hold_to_what_its_calls_cost(stack: Stack) -> None:
    ledger = FirestoreSpendLedger()
    ceilings = windows()
    day = next(iter(ceilings))
    run_id = f"run-{uuid.uuid4().hex[:16]}"
    ledger.reserve(run_id, 2.0, ceilings, caller="a@example.com")
    released = stack.niah("limits", "release", run_id)
    assert released.returncode == 0, released.stderr
    assert "settled to $0.0000" in released.stdout
    assert ledger.window_spend(day) == 0.0
    missing = stack.niah("limits", "release", "run-0000000000000000")
    assert missing.returncode != 0 and "holds nothing" in missing.stderr


def test_a_certify_round_after_the_kill_switch_trips_is_refused_and_the_run_settles(
    stack: Stack,
) -> None:
    configure = f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config"
    requests.post(configure, json={"latency_seconds": 2.0}, timeout=5).raise_for_status()
    store, ledger = FirestoreStore(), FirestoreSpendLedger()
    try:
        run_id = submit(
            stack,
            {
                "model_name": "gemini-3.8-flash",
                "mode": "certify",
                "context_lengths": [500, 1000, 2000, 4000, 8000],
                "document_depth_percents": [0, 50, 100],
                "certify_max_tokens": 400_000,
                "seed": 5101,
            },
        )
        first_round = int((store.get_run(run_id) or {})["total"])
        tripped = stack.niah("killswitch", "trip", "--reason", "test: budget spent")
        assert tripped.returncode == 0, tripped.stderr

        def ended() -> dict | None:
            run = store.get_run(run_id)
            return run if run and run.get("status") == "complete" else None

        run = wait_for(ended, timeout=300, what=f"run {run_id} to end")
    finally:
        requests.post(configure, json={}, timeout=5).raise_for_status()
        lifted = stack.niah("killswitch", "lift")
        time.sleep(1.5)  # NIAH_KILL_SWITCH_CACHE_SECONDS on the stack
    assert lifted.returncode == 0, lifted.stderr
    assert run["certify"]["refused"]["field"] == "kill_switch"
    assert int(run["total"]) == first_round == len(store.list_cells(run_id))
    entry = ledger.entry(run_id)
    assert entry is not None and entry["settled"] and entry["reserved"] == 0.0
    assert entry["settled_usd"] == pytest.approx(run["spend"]["usd"])
    assert sorted(entry["holds"]) == ["admit"]  # the refused round held nothing


def test_two_holds_at_once_cannot_both_take_a_callers_last_run(stack: Stack) -> None:
    """Firestore's transaction: the caller's runs holding spend read and written in it."""
    import threading

    ledger = FirestoreSpendLedger()
    caller = f"limit-{uuid.uuid4().hex[:8]}@example.com"
    ceilings = windows()
    outcomes: list[str | None] = []
    start = threading.Barrier(3)

    def hold(n: int) -> None:
        start.wait()
        run_id = f"run-test-{uuid.uuid4().hex[:8]}-{n}"
        found = ledger.reserve(run_id, 1.0, ceilings, caller=caller, max_open_runs=1)
        outcomes.append(None if found.admitted else found.refused)

    threads = [threading.Thread(target=hold, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count(None) == 1
    assert outcomes.count("max_running_runs_per_caller") == 2
    assert ledger.window_spend(next(iter(ceilings))) == 1.0
