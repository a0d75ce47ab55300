"""Issue 27 on the local stack: dead workers, stalls, storms, deleted runs, probes.

Firestore stalls at each point of a cell; duplicate storms of POSTs.

Each test prints its figures (``FAULT-FIGURES``): what was delivered, called, stored,
and how long after the fault the run completed.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import google.cloud.pubsub_v1 as pubsub_v1
import pytest
import requests
from google.cloud import firestore

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher
from niah.cloud.store import FirestoreStore
from niah.errors import CellInFlightError
from niah.service.cells.worker import process_cell
from niah.service.messages import CellTask
from niah.settings import get_settings
from niah_devtools import localstack
from tests.integration.conftest import Stack, drain, wait_for
from tests.integration.test_faults import (
    GEMINI,
    assert_finished_once,
    assert_report_matches_firestore,
    figures,
    model_calls,
    publish,
    standin,
    worker_lines,
)
from tests.integration.test_local_stack import post, wait_complete

pytestmark = pytest.mark.integration

# Issue 27's bound: a fault's run completes within two minutes of the fault's end.
RECOVERY_SECONDS = 120.0
# A freeze longer than the store's commit timeout (10 s on the test stack) and than a
# cell lease (30 s), so the commit fails and the leases lapse while it lasts: what
# happens at the thaw is the same for any longer freeze (it was 60 s, 4 x 20 s more).
FREEZE_SECONDS = float(os.environ.get("NIAH_TEST_FREEZE_SECONDS", "40"))


def standin_requests(stack: Stack) -> list[dict[str, Any]]:
    url = stack.env["VERTEX_STANDIN_URL"]
    return list(requests.get(f"{url}/_standin/requests", timeout=5).json()["requests"])


def stored_cells(run_id: str) -> int:
    return len(FirestoreStore().list_cells(run_id))


@pytest.mark.parametrize("kill", ["child", "group"])
def test_a_killed_worker_s_cells_are_answered_within_two_minutes(stack: Stack, kill: str) -> None:
    """Before: the killed worker's leases held its cells off for 600 s (650-730 s runs).

    ``child``: the serving process dies, gunicorn starts another. ``group``: the whole
    function dies and is started again a second later.
    """
    standin(stack, latency_seconds=3.0)
    started = time.monotonic()
    seed = 270 if kill == "child" else 271
    body = {**GEMINI, "context_lengths": [1000, 2000], "seed": seed}
    run_id = post(stack, body).json()["run_id"]
    wait_for(lambda: model_calls(stack) >= 3, timeout=90, what="calls in flight")
    stored_at_kill = stored_cells(run_id)
    if kill == "child":
        assert localstack.kill_children(stack.state_dir, "worker") >= 1
    else:
        localstack.kill_process(stack.state_dir, "worker")
    killed_at = time.monotonic()
    # Counted after the kill, so a call the worker started between the count and the kill
    # is in it (counted before, a CI run under load saw 8 calls against a bound of 7); a
    # new child answers nothing before its imports, seconds away.
    calls_at_kill = model_calls(stack)
    if kill == "group":
        time.sleep(1)
        localstack.start_function(stack.state_dir, "worker")
    wait_complete(run_id, timeout=RECOVERY_SECONDS + 30)
    recovered = time.monotonic() - killed_at
    assert_finished_once(run_id, 6)
    numbers = figures(stack, run_id, started, f"worker {kill} killed mid-call")
    print(f"FAULT-FIGURES recovered_after_kill_seconds={recovered:.1f}")
    assert recovered <= RECOVERY_SECONDS
    assert numbers["cells_answered"] == 6
    # Calls cut off by the kill are made again, once each: never more. Those in flight
    # are at most the calls sent by the kill less the cells stored before it.
    in_flight_at_kill = calls_at_kill - stored_at_kill
    assert 6 <= numbers["model_calls"] <= 6 + in_flight_at_kill
    spend = assert_report_matches_firestore(stack, run_id)["spend"]
    assert spend["answered_calls"] == 6 and spend["error_calls"] == 0
    # Every call noted before it was sent is in the spend; the killed ones as cut off.
    assert spend["cut_off_calls"] == spend["calls"] - 6 >= numbers["model_calls"] - 6
    standin(stack)


def frozen_firestore(stack: Stack, seconds: float) -> float:
    """Freeze the Firestore emulator for ``seconds``; when it thawed (monotonic)."""
    localstack.freeze_process(stack.state_dir, "firestore", frozen=True)
    try:
        time.sleep(seconds)
    finally:
        localstack.freeze_process(stack.state_dir, "firestore", frozen=False)
    return time.monotonic()


def check_recovered(stack: Stack, run_id: str, thawed: float, point: str, cells: int) -> None:
    """Complete within two minutes of the thaw, each cell stored once, one call per cell."""
    wait_complete(run_id, timeout=RECOVERY_SECONDS + 30)
    recovered = time.monotonic() - thawed
    assert_finished_once(run_id, cells)
    numbers = figures(stack, run_id, thawed, f"Firestore frozen {FREEZE_SECONDS:.0f} s at {point}")
    print(f"FAULT-FIGURES {point}: recovered_after_thaw_seconds={recovered:.1f}")
    assert recovered <= RECOVERY_SECONDS
    assert numbers["model_calls"] == cells == numbers["cells_answered"]
    spend = assert_report_matches_firestore(stack, run_id)["spend"]
    assert (spend["calls"], spend["answered_calls"]) == (cells, cells)


def test_firestore_frozen_at_the_claim(stack: Stack) -> None:
    """The worker's first read and its claim meet a frozen Firestore.

    The worker is stopped while the run is posted, Firestore is frozen, then the worker
    goes on with the primer's delivery waiting for it.
    """
    standin(stack)
    localstack.freeze_process(stack.state_dir, "worker", frozen=True)
    try:
        body = {**GEMINI, "context_lengths": [1000], "seed": 272}
        run_id = post(stack, body).json()["run_id"]
        localstack.freeze_process(stack.state_dir, "firestore", frozen=True)
    finally:
        localstack.freeze_process(stack.state_dir, "worker", frozen=False)
    try:
        time.sleep(FREEZE_SECONDS)
    finally:
        localstack.freeze_process(stack.state_dir, "firestore", frozen=False)
    check_recovered(stack, run_id, time.monotonic(), "the claim", 3)


def freeze_when(
    stack: Stack,
    ready: Callable[[str], Any],
    *,
    point: str,
    seed: int,
    options: dict[str, Any] | None = None,
    **script: Any,
) -> str:
    """Post a 3-cell run, freeze Firestore once ``ready(run_id)``, check it recovers.

    2,500 tokens: long enough for a primer (its prefixes can pass the 2,048 Vertex
    caches from), so the freeze meets the primer's delivery and its release.
    """
    standin(stack, **script)
    body = {**GEMINI, "context_lengths": [2500], "seed": seed, **(options or {})}
    run_id = str(post(stack, body).json()["run_id"])
    wait_for(lambda: ready(run_id), timeout=60, what=f"the moment to freeze at {point}")
    thawed = frozen_firestore(stack, FREEZE_SECONDS)
    check_recovered(stack, run_id, thawed, point, 3)
    standin(stack)
    return run_id


def test_firestore_frozen_at_the_spend_note(stack: Stack) -> None:
    """Frozen after the claim, while the call's spend note is written (before the call).

    ``count_tokens_check`` makes the worker count the prompt's tokens between the claim
    and the note; the stand-in holds that count 3 s, and Firestore is frozen meanwhile.
    """

    def counting(run_id: str) -> bool:
        counted = any(r["kind"] == "count" for r in standin_requests(stack))
        assert model_calls(stack) == 0  # the note comes first: no call is made yet
        return counted

    freeze_when(
        stack,
        counting,
        point="the spend note",
        seed=273,
        options={"count_tokens_check": True},
        count_latency_seconds=3.0,
    )


def test_firestore_frozen_at_the_store(stack: Stack) -> None:
    """Frozen while a call is in flight: the answer's store (and count) meet it.

    Before: a freeze past the commit deadline lost paid answers (10 calls for 8 cells).
    The commit times out (NIAH_STORE_TIMEOUT_SECONDS, 10 s here), the answer is kept in
    the bucket, and a delivery after the thaw stores it without calling the model again.
    """
    run_id = freeze_when(
        stack, lambda _: model_calls(stack) >= 1, point="the store", seed=274, latency_seconds=2.0
    )
    kept = worker_lines(stack, run_id, "answer kept for the next delivery")
    # A commit that timed out in the freeze may still land at the thaw; then the kept
    # copy is not needed. Either way no answer is lost and none is paid twice.
    assert kept >= 1 and worker_lines(stack, run_id, "kept answer stored") <= kept


def test_firestore_frozen_after_the_store(stack: Stack) -> None:
    """Frozen the moment the primer is stored: its release, the count and the report ask.

    The store and the run's count are one atomic write (``record_cell``); what follows
    it (the lease's release, publishing the held cells, counting the stored cells for
    the report) meets the freeze.
    """
    freeze_when(
        stack,
        lambda run_id: stored_cells(run_id) >= 1,
        point="after the store",
        seed=275,
        latency_seconds=1.0,
    )


def test_twenty_identical_posts_publish_each_cell_at_most_twice(stack: Stack) -> None:
    """Before: 20 identical POSTs of a 6-cell run published 115 messages, 113 reports."""
    subscriber = pubsub_v1.SubscriberClient()
    project = stack.env["NIAH_PROJECT"]
    reports_tap = subscriber.subscription_path(project, "niah-reports-tap-storm")
    subscriber.create_subscription(
        name=reports_tap, topic=f"projects/{project}/topics/niah-reports"
    )
    standin(stack, latency_seconds=0.5)
    drain(stack.tap, settle_seconds=0.5)
    body = {**GEMINI, "context_lengths": [1000, 2000], "seed": 276}
    with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
        # Twenty queue on the dispatcher's threads: on a loaded machine the last waits
        # minutes; what is checked is what they publish, not how fast.
        responses = list(pool.map(lambda _: post(stack, body, timeout=300), range(20)))
    refused = [r.text for r in responses if r.status_code != 202]
    if refused:  # say why, from the dispatcher's own log (its state goes with the suite)
        errors = [line for line in stack.log_lines("dispatcher") if line.get("severity") == "ERROR"]
        raise AssertionError(f"{len(refused)} of 20 not 202: {refused[:2]}; logged: {errors[:3]}")
    run_id = responses[0].json()["run_id"]
    wait_complete(run_id, timeout=180)
    time.sleep(3)  # late duplicates, if any, would ask for the report now
    cells = drain(stack.tap, settle_seconds=2.0)
    reports = drain(reports_tap, settle_seconds=1.0)
    assert_finished_once(run_id, 6)
    numbers = figures(stack, run_id, time.monotonic(), "20 identical concurrent POSTs")
    print(f"FAULT-FIGURES storm: cell_messages={len(cells)} report_requests={len(reports)}")
    assert len(cells) <= 6 + 6
    assert len(reports) <= 2
    assert numbers["model_calls"] == 6
    assert worker_lines(stack, run_id, "report being rendered elsewhere", "report") <= 1
    standin(stack)


def test_a_deleted_run_is_not_answered(stack: Stack) -> None:
    """Before: workers wrote cells of a run Firestore had lost, from their process cache."""
    standin(stack)
    body = {**GEMINI, "context_lengths": [1000], "seed": 277}
    localstack.freeze_process(stack.state_dir, "worker", frozen=True)
    try:
        run_id = post(stack, body).json()["run_id"]
        firestore.Client(project=stack.env["NIAH_PROJECT"]).collection("runs").document(
            run_id
        ).delete()
    finally:
        localstack.freeze_process(stack.state_dir, "worker", frozen=False)
    wait_for(
        lambda: worker_lines(stack, run_id, "cell for an unknown run dropped"),
        timeout=60,
        what="the primer dropped",
    )
    assert model_calls(stack) == 0
    assert FirestoreStore().list_cells(run_id) == []
    assert FirestoreStore().get_run(run_id) is None


def test_readiness_probes_are_answered_quietly(stack: Stack) -> None:
    """Before: each function logged an ERROR "malformed cell message dropped" at start."""
    for function in ("worker", "dead-letter"):
        lines = stack.log_lines(function)
        assert not [line for line in lines if line.get("severity") == "ERROR"], function
    url = localstack.function_url(stack.state_dir, "worker")
    before = len(stack.log_lines("worker"))
    response = requests.get(url, timeout=10)
    assert (response.status_code, response.text) == (200, "ready")
    assert len(stack.log_lines("worker")) == before


class StalledRenewals(FirestoreStore):
    """The emulator's store, but its first lease renewal waits ``stall`` seconds first.

    A renewal stalled as a Firestore latency spike or a pause stalls it; the holder's
    other requests (its spend note, its store) and other deliveries' claims go through.
    """

    def __init__(self, stall: float) -> None:
        super().__init__()
        self._stall = stall
        self._first = threading.Lock()
        self.stalled = 0

    def renew_lease(self, run_id: str, cell_id: str, claim: int, lease_seconds: float) -> bool:
        if self._first.acquire(blocking=False):
            self.stalled += 1
            time.sleep(self._stall)
        return super().renew_lease(run_id, cell_id, claim, lease_seconds)


@pytest.fixture
def deliveries_here(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Settings for cell deliveries made in this process: the stack worker's model, 30 s leases."""
    monkeypatch.setenv("NIAH_VERTEX_BASE_URL", stack.env["VERTEX_STANDIN_URL"])
    monkeypatch.setenv("NIAH_VERTEX_ACCESS_TOKEN", "local-standin-token")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("NIAH_CELL_LEASE_SECONDS", "30")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()  # monkeypatch restores the environment after this


def test_a_renewal_stalled_25_s_with_a_30_s_lease_gives_one_paid_call(
    stack: Stack, deliveries_here: None
) -> None:
    """Issue 51's probe on the emulator: a live holder's renewal stalls 25 s mid-call.

    Two deliveries of one cell, made here as two worker instances would (the stack's
    worker is stopped meanwhile): the holder, whose first renewal stalls 25 s while its
    call (40 s, longer than the 30 s lease) runs, and a second delivery 2 s into the
    call. Before: renewals went one after another, so the lease lapsed behind the
    stalled one; the second delivery took the cell over and called again (two paid
    calls, one answer thrown away). Now the renewals after the stalled one keep the
    lease, and the second delivery is held off.
    """
    standin(stack, latency_seconds=40.0)
    body = {**GEMINI, "context_lengths": [1000], "document_depth_percents": [50], "seed": 278}
    blobs, publisher = GcsBlobStore(get_settings().bucket), PubSubPublisher()
    holder_store = StalledRenewals(25.0)
    outcomes: dict[str, str] = {}
    localstack.freeze_process(stack.state_dir, "worker", frozen=True)
    try:
        run_id = post(stack, body).json()["run_id"]
        (message,) = wait_for(
            lambda: [m for m in drain(stack.tap, settle_seconds=0.5) if m["run_id"] == run_id],
            timeout=30,
            what="the cell's message",
        )
        task = CellTask.from_message(message)

        def deliver(name: str, store: FirestoreStore) -> None:
            try:
                outcomes[name] = process_cell(task, store=store, blobs=blobs, publisher=publisher)
            except CellInFlightError:
                outcomes[name] = "held off"

        holder = threading.Thread(target=deliver, args=("holder", holder_store))
        holder.start()
        wait_for(lambda: model_calls(stack) >= 1, timeout=60, what="the holder's call")
        time.sleep(2)
        deliver("second", FirestoreStore())
        holder.join(timeout=120)
    finally:
        localstack.freeze_process(stack.state_dir, "worker", frozen=False)
    assert model_calls(stack) == 1
    assert holder_store.stalled == 1
    assert outcomes == {"holder": "answered", "second": "held off"}
    wait_complete(run_id, timeout=RECOVERY_SECONDS)
    assert_finished_once(run_id, 1)
    numbers = figures(stack, run_id, time.monotonic(), "a renewal stalled 25 s mid-call")
    assert numbers["model_calls"] == 1 == numbers["cells_answered"]
    spend = assert_report_matches_firestore(stack, run_id)["spend"]
    assert (spend["calls"], spend["answered_calls"]) == (1, 1)
    standin(stack)


def test_messages_without_a_kind_are_dropped_by_name_once_never_redelivered(
    stack: Stack,
) -> None:
    """As an older version published them: each refused in one log line and acknowledged.

    Last of the module: its refusals are ERROR lines, which the readiness test above
    (that start-up logs none) would take for start-up's.

    The subscriptions retry a nack after 1 s (localstack's retry policy) and dead-letter
    it after 5 deliveries, so within the wait below a nacked message would be logged
    again, and reach the dead-letter handler; each is logged exactly once, by its own
    function, and nowhere else.
    """
    cell: dict[str, Any] = {"run_id": "run-00000000000000a1", "cell_id": "L00001000-D050000"}
    cell |= {"context_length": 1000, "depth_percent": 50.0}
    publish(stack, "niah-cells", cell, copies=1)
    publish(stack, "niah-reports", {"run_id": "run-00000000000000a2"}, copies=1)

    no_kind = "kind is 'None'"

    def dropped(function: str, text: str) -> int:
        return sum(
            1
            for line in stack.log_lines(function)
            if "malformed" in str(line.get("message")) and text in str(line.get("error"))
        )

    wait_for(lambda: dropped("worker", no_kind), timeout=60, what="the cell dropped")
    wait_for(lambda: dropped("report", no_kind), timeout=60, what="the request dropped")
    time.sleep(10)  # ten retry backoffs: a nacked message would be back by now
    assert (dropped("worker", no_kind), dropped("report", no_kind)) == (1, 1)
    assert dropped("dead-letter", no_kind) == 0
