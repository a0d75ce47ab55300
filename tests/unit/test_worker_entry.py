"""The worker's entry points take Pub/Sub's push body as it comes, delivery attempt too."""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import functions_framework
import pytest

from niah.service.routes import worker as worker_pushes
from tests import REPO

SOURCE = str(REPO / "functions" / "worker" / "main.py")
RUN = "run-0123456789abcdef"


def push(body: Any, **extra: Any) -> dict[str, Any]:
    data = base64.b64encode(json.dumps(body).encode()).decode()
    return {"subscription": "projects/p/subscriptions/s", "message": {"data": data}, **extra}


def test_the_delivery_attempt_at_the_top_of_a_push_reaches_the_cell(monkeypatch: Any) -> None:
    app = functions_framework.create_app(target="handle_cell", source=SOURCE)
    worker = sys.modules["main"]  # the module functions-framework loaded and serves
    from niah.service.messages import CellTask

    message = CellTask(RUN, "L00001000-D050000", 1000, 50.0).message()
    seen: list[CellTask] = []

    def process_cell(task: CellTask, **_: Any) -> str:
        seen.append(task)
        return "answered"

    monkeypatch.setattr(worker_pushes, "process_cell", process_cell)
    monkeypatch.setattr(worker, "_clients", lambda: (None, None, None))
    client = app.test_client()
    for body in (push(message, deliveryAttempt=4), push(message)):
        assert client.post("/", json=body).status_code == 204
    assert [(task.run_id, task.delivery_attempt) for task in seen] == [(RUN, 4), (RUN, 1)]


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
    message = {"kind": "cell", "run_id": run_id, "cell_id": "L00001000-D050000"}
    message |= {"context_length": 1000, "depth_percent": 50.0}
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

    message: dict[str, Any] = {"kind": "cell", "run_id": RUN, "cell_id": "L00001000-D050000"}
    message |= {"context_length": 1000, "depth_percent": 50.0}
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
        monkeypatch.setattr(worker_pushes, "process_cell", fails)
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
    from niah.core.request.spec import RunRequest
    from niah.core.runs import RunRecord
    from niah.service.messages import BATCH_SUBMIT, batch_message

    run = RunRecord("run-0123456789abcdef", RunRequest())
    body = push(batch_message(run, BATCH_SUBMIT))
    response = client.post("/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 204


def test_a_dead_lettered_report_request_is_recorded_on_its_run(monkeypatch: Any) -> None:
    """Report requests share the dead-letter topic with cells; each is told apart."""
    from niah.service.messages import report_message
    from tests.fake_store import MemoryStore
    from tests.unit.test_report_failures import finished_run

    app = functions_framework.create_app(target="handle_dead_letter", source=SOURCE)
    served = sys.modules["main"]
    store = MemoryStore()
    monkeypatch.setattr(served, "_clients", lambda: (store, None, None))
    run_id = "run-0123456789abcdef"
    finished_run(store, run_id)
    message = push(report_message(run_id))
    message["message"]["attributes"] = {"CloudPubSubDeadLetterSourceDeliveryCount": "5"}
    response = app.test_client().post("/", json=message)
    assert response.status_code == 204
    error = store.runs[run_id]["report_error"]
    assert error["kind"] == "dead_letter" and "5 deliveries" in error["reason"]


@pytest.mark.parametrize("target", ["handle_cell", "handle_dead_letter"])
def test_a_message_without_a_kind_is_refused_in_one_log_line_and_acknowledged(
    target: str, capsys: Any, monkeypatch: Any
) -> None:
    """As published before messages said what they are: dropped by name, nothing touched."""
    app = functions_framework.create_app(target=target, source=SOURCE)
    served = sys.modules["main"]

    def no_work(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("a message without a kind reached the store or the model")

    monkeypatch.setattr(served, "_clients", no_work)
    for body in (
        {"run_id": RUN},  # a report request of old
        {"run_id": RUN, "cell_id": "L00001000-D050000", "context_length": 1000,
         "depth_percent": 50.0},  # a cell of old
        {"run_id": RUN, "batch_action": "poll"},
        {"run_id": RUN, "certify_step": True},
        {"kind": "cells", "run_id": RUN},
    ):  # fmt: skip
        capsys.readouterr()
        response = app.test_client().post("/", json=push(body))
        assert response.status_code == 204, body
        (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines()]
        assert line["severity"] == "ERROR" and line["message"] == "malformed message dropped"
        assert "kind is" in line["error"] and "cell, batch, certify_step, report" in line["error"]


def test_a_push_of_a_run_this_version_cannot_read_is_acknowledged_on_both_routes(
    essay_blobs: Any, monkeypatch: Any
) -> None:
    """A 204 on both routes.

    Before: a 500 on each, so 5 deliveries, then dead letters redelivered until
    retention drops them (their subscription has no dead-letter policy).
    """
    from tests.unit.test_unreadable_run_push import pushed, state, unreadable
    from tests.unit.test_work import dispatch_task

    world = dispatch_task(essay_blobs)
    before = unreadable(world)
    (task,) = world["tasks"]
    for target in ("handle_cell", "handle_dead_letter"):
        app = functions_framework.create_app(target=target, source=SOURCE)
        served = sys.modules["main"]
        monkeypatch.setattr(
            served, "_clients", lambda: (world["store"], world["publisher"], world["blobs"])
        )
        response = app.test_client().post("/", json=pushed(task))
        assert (response.status_code, response.get_data(as_text=True)) == (204, ""), target
    assert state(world) == before
