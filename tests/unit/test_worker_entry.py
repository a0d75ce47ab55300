"""The worker's entry points take Pub/Sub's push body as it comes, delivery attempt too."""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
from typing import Any

import functions_framework
import pytest

from tests import REPO

SOURCE = str(REPO / "functions" / "worker" / "main.py")
RUN = "run-0123456789abcdef"


def push(body: Any, **extra: Any) -> dict[str, Any]:
    data = base64.b64encode(json.dumps(body).encode()).decode()
    return {"subscription": "projects/p/subscriptions/s", "message": {"data": data}, **extra}


def test_the_delivery_attempt_at_the_top_of_a_push_reaches_the_cell() -> None:
    spec = importlib.util.spec_from_file_location("worker_main", SOURCE)
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    message = {"run_id": RUN, "cell_id": "L00001000-D050000", "context_length": 1000}
    message["depth_percent"] = 50.0
    task = worker._task(push(message, deliveryAttempt=4))
    assert task is not None and (task.run_id, task.delivery_attempt) == (RUN, 4)
    assert worker._task(push(message)).delivery_attempt == 1


def test_malformed_pushes_are_acknowledged_not_retried() -> None:
    for target in ("handle_cell", "handle_dead_letter"):
        client = functions_framework.create_app(target=target, source=SOURCE).test_client()
        hostile = [
            b"not json",
            b"[]",
            json.dumps(push("a string")).encode(),
            json.dumps({"message": "x"}).encode(),
            json.dumps({"message": {"data": 3}}).encode(),
            json.dumps(push({"run_id": "r"}, deliveryAttempt="many")).encode(),
        ]
        for body in hostile:
            response = client.post("/", data=body, content_type="application/json")
            assert response.status_code == 204, (target, body)


@pytest.mark.parametrize(
    "run_id", ["run-x", "runs/run-0123456789abcdef", "run-0123456789ABCDEF", "", 7, None]
)
def test_a_message_with_a_malformed_run_id_is_acknowledged_without_a_call(
    run_id: Any, monkeypatch: Any
) -> None:
    """A run ID no run can have names no document: not read, not answered, not retried."""
    message = {"run_id": run_id, "cell_id": "L00001000-D050000", "context_length": 1000}
    message["depth_percent"] = 50.0
    for target in ("handle_cell", "handle_dead_letter"):
        app = functions_framework.create_app(target=target, source=SOURCE)
        served = sys.modules["main"]

        def no_work(*args: Any, **kwargs: Any) -> str:
            raise AssertionError("a malformed message reached the store or the model")

        monkeypatch.setattr(served, "_clients", no_work)
        response = app.test_client().post("/", json=push(message))
        assert response.status_code == 204, (target, run_id)


def test_a_readiness_probe_is_answered_quietly(capsys: Any) -> None:
    """Before: every start logged an ERROR "malformed cell message dropped" per function."""
    for target in ("handle_cell", "handle_dead_letter"):
        client = functions_framework.create_app(target=target, source=SOURCE).test_client()
        capsys.readouterr()
        for method in (client.get, client.head):
            response = method("/")
            assert response.status_code == 200, (target, method)
        assert capsys.readouterr().out == ""


def test_a_cell_not_done_is_one_log_line_and_a_status_not_a_traceback(
    capsys: Any, monkeypatch: Any
) -> None:
    """Retryable: 503 (redelivered), logged as one line; the deployment's own: 500, ERROR."""
    from niah.errors import CellInFlightError, CloudAccessError, CloudUnavailableError

    message = {"run_id": RUN, "cell_id": "L00001000-D050000", "context_length": 1000}
    message["depth_percent"] = 50.0
    cases = [
        (CellInFlightError("in flight"), 503, "INFO", "in_flight"),
        (CloudUnavailableError("DeadlineExceeded: 504"), 503, "WARNING", "cloud_unavailable"),
        (CloudAccessError("PermissionDenied: 403; grant ..."), 500, "ERROR", "cloud_access"),
    ]
    for error, status, severity, kind in cases:

        def fails(*args: Any, error: Exception = error, **kwargs: Any) -> str:
            raise error

        app = functions_framework.create_app(target="handle_cell", source=SOURCE)
        served = sys.modules["main"]  # the module functions-framework loaded and serves
        monkeypatch.setattr(served, "_clients", lambda: (None, None, None))
        monkeypatch.setattr(served, "process_cell", fails)
        capsys.readouterr()
        response = app.test_client().post("/", json=push(message))
        out = capsys.readouterr()
        assert (response.status_code, response.get_data(as_text=True)) == (status, kind)
        (line,) = [json.loads(text) for text in out.out.splitlines() if text.startswith("{")]
        assert (line["severity"], line["kind"]) == (severity, kind)
        assert "Traceback" not in out.out + out.err


def test_a_dead_lettered_batch_step_is_acknowledged_for_the_sweep_to_ask_again() -> None:
    client = functions_framework.create_app(
        target="handle_dead_letter", source=SOURCE
    ).test_client()
    body = push({"run_id": "run-0123456789abcdef", "batch_action": "submit", "batch_round": 0})
    response = client.post("/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 204


def test_a_dead_lettered_report_request_is_recorded_on_its_run(monkeypatch: Any) -> None:
    """Report requests share the dead-letter topic with cells; each is told apart."""
    from niah.service.messages import REPORT_REQUEST
    from tests.fake_store import MemoryStore
    from tests.unit.test_report_failures import finished_run

    app = functions_framework.create_app(target="handle_dead_letter", source=SOURCE)
    served = sys.modules["main"]
    store = MemoryStore()
    monkeypatch.setattr(served, "_clients", lambda: (store, None, None))
    for run_id, body in (
        ("r", {"run_id": "r", "request": REPORT_REQUEST}),
        ("s", {"run_id": "s"}),  # as published before requests said what they are
    ):
        finished_run(store, run_id)
        message = push(body)
        message["message"]["attributes"] = {"CloudPubSubDeadLetterSourceDeliveryCount": "5"}
        response = app.test_client().post("/", json=message)
        assert response.status_code == 204
        error = store.runs[run_id]["report_error"]
        assert error["kind"] == "dead_letter" and "5 deliveries" in error["reason"]
