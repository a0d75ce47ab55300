"""The kill switch on the local stack (issue 35): a budget alert stops new runs.

A budget notification, pushed to the dispatcher's /budget-alert route as the budget
topic's subscription would push it, trips the switch in Firestore; the dispatcher then
refuses every new run (429) and publishes nothing, until ``niah killswitch lift``.
Locally no IAM verifies the ID tokens, so the test writes the tokens IAM would have let
through.
"""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
import requests

from tests.integration.conftest import BUDGET_ALERT_PUSHER, Stack, drain

pytestmark = pytest.mark.integration


def bearer(email: str) -> dict[str, str]:
    """The Authorization header of an ID token for ``email`` (unsigned: nothing checks it)."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return {"Authorization": f"Bearer {part({'alg': 'RS256'})}.{part({'email': email})}.c2ln"}


def push_alert(stack: Stack, cost: float, budget: float) -> requests.Response:
    notification = {
        "budgetDisplayName": "niah niah-local",
        "costAmount": cost,
        "costIntervalStart": "2026-11-01T07:00:00Z",
        "budgetAmount": budget,
        "budgetAmountType": "SPECIFIED_AMOUNT",
        "currencyCode": "USD",
    }
    data = base64.b64encode(json.dumps(notification).encode()).decode()
    envelope = {
        "message": {"data": data, "attributes": {"schemaVersion": "1.0"}},
        "subscription": "projects/niah-local/subscriptions/niah-budget-alerts-push",
    }
    return requests.post(
        f"{stack.env['DISPATCHER_URL'].rstrip('/')}/budget-alert",
        json=envelope,
        headers=bearer(BUDGET_ALERT_PUSHER),
        timeout=30,
    )


def post_run(stack: Stack, seed: int) -> requests.Response:
    body = {"context_lengths": [300], "document_depth_percents": [50], "seed": seed}
    return requests.post(stack.env["DISPATCHER_URL"], json=body, timeout=60)


def test_a_budget_alert_stops_new_runs_until_an_operator_lifts_the_switch(stack: Stack) -> None:
    drain(stack.tap, settle_seconds=0.5)
    try:
        under = push_alert(stack, cost=40.0, budget=100.0)
        assert under.status_code == 200 and under.json() == {"kill_switch_tripped": False}
        assert post_run(stack, 3501).status_code == 202
        drain(stack.tap, settle_seconds=0.5)

        forged = requests.post(
            f"{stack.env['DISPATCHER_URL'].rstrip('/')}/budget-alert",
            json={"message": {"data": base64.b64encode(b'{"costAmount": 1}').decode()}},
            headers=bearer("someone@example.com"),
            timeout=30,
        )
        assert forged.status_code == 403
        spent = push_alert(stack, cost=100.5, budget=100.0)
        assert spent.status_code == 200 and spent.json() == {"kill_switch_tripped": True}

        refused = post_run(stack, 3502)
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["field"] == "kill_switch" and "niah killswitch lift" in error["message"]
        assert drain(stack.tap, settle_seconds=1.0) == []  # nothing was published
        status = stack.niah("killswitch", "status")
        assert status.returncode == 0 and status.stdout.startswith("kill switch: ON")
    finally:
        lifted = stack.niah("killswitch", "lift")
    assert lifted.returncode == 0, lifted.stderr
    assert lifted.stdout.startswith("kill switch: off")
    time.sleep(1.5)  # NIAH_KILL_SWITCH_CACHE_SECONDS on the stack
    admitted = post_run(stack, 3502)
    assert admitted.status_code == 202, admitted.text
    assert len(drain(stack.tap)) == 1
