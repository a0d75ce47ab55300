"""Cancel on the local stack (issue 21): ``niah cancel`` stops an online run mid-flight.

After the cancel: no cell message is published, no call is started but by the cells
already in flight, the status says cancelled with the spend; ``niah run --resume``
finishes the run without asking any answered cell again.
"""

from __future__ import annotations

import time

import pytest
import requests

from niah.cloud.store import FirestoreStore
from tests.integration.conftest import Stack, drain, wait_for
from tests.integration.test_faults import assert_finished_once, standin, worker_lines

pytestmark = pytest.mark.integration


def call_times(stack: Stack) -> list[float]:
    """When each model call reached the stand-in (its clock: time.time())."""
    url = stack.env["VERTEX_STANDIN_URL"]
    seen = requests.get(f"{url}/_standin/requests", timeout=5).json()["requests"]
    return [r["time"] for r in seen if r["kind"] == "generate"]


def test_cancel_stops_an_online_run_mid_flight_and_resume_finishes_it(stack: Stack) -> None:
    standin(stack, latency_seconds=3.0)
    drain(stack.tap, settle_seconds=0.5)
    store = FirestoreStore()
    started = stack.niah(
        "run", "--model_name", "gemini-3.8-flash", "--context_lengths", "[2500, 3000]",
        "--document_depth_percents", "[0, 50, 100]", "--seed", "280",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-2000:]
    run_id = started.stdout.split()[1].rstrip(":")
    # The primer answered and the grid's calls under way (four worker threads).
    wait_for(lambda: len(call_times(stack)) >= 3, timeout=90, what="calls in flight")

    cancelled_at = time.time()
    cancelled = stack.niah("cancel", run_id)
    assert cancelled.returncode == 0, cancelled.stderr[-2000:]
    assert cancelled.stdout.startswith(f"run {run_id} cancelled: ")
    assert f"niah run --resume {run_id}" in cancelled.stdout
    in_flight = store.leased_cells(run_id)  # cells that claimed before the cancel
    published_before = drain(stack.tap, settle_seconds=0.5)

    # Every cell message is handled: answered (in flight) or acknowledged unanswered.
    def all_handled() -> bool:
        dropped = worker_lines(stack, run_id, "cell of a cancelled run dropped")
        return not store.leased_cells(run_id) and len(store.cell_ids(run_id)) + dropped >= 6

    wait_for(all_handled, timeout=90, what="the cells in flight to finish")
    time.sleep(6)  # a sweep (every 5 s) would publish a stalled run's cells now
    calls = call_times(stack)
    after = [t for t in calls if t > cancelled_at]
    stored = store.cell_ids(run_id)
    print(
        f"CANCEL-FIGURES calls={len(calls)} after_cancel={len(after)} in_flight={len(in_flight)} "
        f"stored={len(stored)} published_before={len(published_before)}"
    )
    assert len(after) <= len(in_flight)
    assert drain(stack.tap, settle_seconds=1.0) == []  # nothing published after the cancel
    assert worker_lines(stack, run_id, "cell of a cancelled run dropped") >= 1
    assert len(calls) == len(stored) < 6  # every paid call stored; some cells never asked
    run = store.get_run(run_id)
    assert run is not None and run["status"] == "cancelled"

    status = stack.niah("status", run_id)
    assert status.stdout.startswith(
        f"run {run_id}: cancelled, {len(stored)} answered + 0 failed of 6 cells\n"
    )
    assert "cancelled: no further cell is asked" in status.stdout
    n = len(stored)
    assert f"spend: {n} model calls ({n} answered, 0 errors): $" in status.stdout

    standin(stack)
    resumed = stack.niah("run", "--resume", run_id, "--wait", "--timeout", "180")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{len(stored)} already answered" in resumed.stdout
    assert_finished_once(run_id, 6)
    assert len(call_times(stack)) == 6 - len(stored)  # only the cells never answered


def test_a_forged_authorization_beside_a_verified_token_cannot_cancel_anothers_run(
    stack: Stack,
) -> None:
    """Issue 51: the caller is the verified token; a forged Authorization is never read.

    Cloud Run checks X-Serverless-Authorization and passes Authorization on unchecked.
    """
    from niah.core.request.callers import SERVERLESS_AUTHORIZATION
    from niah_devtools import local_identity

    alice, mallory = "alice@example.com", "mallory@example.com"
    dispatcher = stack.env["DISPATCHER_URL"].rstrip("/")
    body = {"context_lengths": [300], "document_depth_percents": [50], "seed": 5101}
    started = requests.post(
        dispatcher, json=body, headers=local_identity.headers(alice), timeout=60
    )
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    store = FirestoreStore()
    assert store.get_run(run_id, counts=False)["created_by"] == alice
    # An unsigned token naming Alice: her name, nobody's signature.
    forged = ".".join(local_identity.token(alice).split(".")[:2]) + ".c2ln"
    attempts = {
        "beside": {
            SERVERLESS_AUTHORIZATION: local_identity.headers(mallory)["Authorization"],
            "Authorization": f"Bearer {forged}",
        },
        "alone": {"Authorization": f"Bearer {forged}"},
        "expired": {"Authorization": f"Bearer {local_identity.token(alice, lifetime=-120)}"},
    }
    for name, headers in attempts.items():
        answer = requests.post(
            f"{dispatcher}/cancel", json={"run_id": run_id}, headers=headers, timeout=30
        )
        assert answer.status_code == 403, (name, answer.text)
    assert store.get_run(run_id, counts=False)["status"] != "cancelled"
    # Only X-Serverless-Authorization (as `gcloud run services proxy` sends): its e-mail.
    proxied = requests.post(
        dispatcher,
        json={**body, "seed": 5102},
        headers={SERVERLESS_AUTHORIZATION: local_identity.headers(mallory)["Authorization"]},
        timeout=60,
    )
    assert proxied.status_code == 202, proxied.text
    assert store.get_run(proxied.json()["run_id"], counts=False)["created_by"] == mallory
