"""The worker's entry points take Pub/Sub's push body as it comes, delivery attempt too."""

from __future__ import annotations

import base64
import importlib.util
import json
from typing import Any

import functions_framework

from tests import REPO

SOURCE = str(REPO / "functions" / "worker" / "main.py")


def push(body: Any, **extra: Any) -> dict[str, Any]:
    data = base64.b64encode(json.dumps(body).encode()).decode()
    return {"subscription": "projects/p/subscriptions/s", "message": {"data": data}, **extra}


def test_the_delivery_attempt_at_the_top_of_a_push_reaches_the_cell() -> None:
    spec = importlib.util.spec_from_file_location("worker_main", SOURCE)
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    message = {"run_id": "run-x", "cell_id": "L00001000-D050000", "context_length": 1000}
    message["depth_percent"] = 50.0
    task = worker._task(push(message, deliveryAttempt=4))
    assert task is not None and (task.run_id, task.delivery_attempt) == ("run-x", 4)
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
