"""The kill switch on the local stack (issue 35): a budget alert stops new runs.

A budget notification, pushed to the dispatcher's /budget-alert route as the budget
topic's subscription would push it, trips the switch in Firestore; the dispatcher then
refuses every new run (429) and publishes nothing, until ``niah killswitch lift``.
The stack's own key signs each ID token, and the dispatcher verifies it as it would a
deployment's (niah_devtools.local_identity).
"""

from __future__ import annotations

import base64
import json
import time

import pytest
import requests

from niah.core.request.callers import SERVERLESS_AUTHORIZATION
from niah_devtools import local_identity
from tests.integration.conftest import BUDGET_ALERT_PUSHER, Stack, drain

pytestmark = pytest.mark.integration


def bearer(email: str) -> dict[str, str]:
    """The Authorization header of an ID token for ``email``, signed by the stack's key."""
    return local_identity.headers(email)


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
    return requests.post(
        stack.env["DISPATCHER_URL"], json=body, headers=local_identity.headers(), timeout=60
    )


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
        # A forged Authorization naming the pusher, beside a verified token of someone
        # else's (as Cloud Run passes it on): the verified one is the caller, refused
        # before the body is read (a deep body is a 403, not a 503).
        unsigned = ".".join(local_identity.token(BUDGET_ALERT_PUSHER).split(".")[:2]) + ".c2ln"
        for data in (json.dumps({"message": {"data": "e30="}}), "[" * 100_000):
            beside = requests.post(
                f"{stack.env['DISPATCHER_URL'].rstrip('/')}/budget-alert",
                data=data,
                headers={
                    "Content-Type": "application/json",
                    SERVERLESS_AUTHORIZATION: bearer("someone@example.com")["Authorization"],
                    "Authorization": f"Bearer {unsigned}",
                },
                timeout=30,
            )
            assert beside.status_code == 403, beside.text
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
