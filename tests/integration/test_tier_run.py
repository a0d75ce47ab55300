"""A Flex PayGo run on the local stack (issue 52), from the dispatcher to the cells.

The dispatcher admits or refuses the tier, the worker asks Vertex (the stand-in) for it
with Google's header, and each cell records the tier the reply says it was served on,
priced at it.
"""

from __future__ import annotations

import pytest
import requests

from niah.cloud.store import FirestoreStore
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import post, wait_complete
from tests.unit.test_tiers import usage_cost

pytestmark = pytest.mark.integration


def test_a_flex_run_asks_for_flex_and_its_cells_record_and_pay_the_served_tier(
    stack: Stack,
) -> None:
    standin = stack.env["VERTEX_STANDIN_URL"]
    requests.post(f"{standin}/_standin/config", json={}, timeout=5)
    grid = {"context_lengths": [1000, 3000], "document_depth_percents": [50], "seed": 5252}
    refused = post(stack, grid | {"model_name": "gemini-4-argon", "tier": "flex"})
    assert refused.status_code == 400
    assert refused.json()["error"]["field"] == "tier"
    assert "Flex PayGo" in refused.text and "standard or priority" in refused.text

    response = post(stack, grid | {"model_name": "gemini-3.8-flash", "tier": "flex"})
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    run = wait_complete(run_id, timeout=180)
    assert run["spec"]["tier"] == "flex"
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == 2
    for cell in cells:
        assert cell["status"] == "answered"
        tier = cell["service_tier"]
        assert (tier["asked"], tier["served"], tier["traffic_type"]) == (
            "flex",
            "flex",
            "ON_DEMAND_FLEX",
        )
        assert cell["cost_usd"] == pytest.approx(usage_cost(cell, "flex"), abs=1e-8)
        # An anchor apart from our flex pricing: Flex PayGo "offers a 50% discount
        # compared to Standard PayGo" (Google's Flex PayGo page, read 2026-12-04).
        assert cell["cost_usd"] == pytest.approx(usage_cost(cell, "standard") / 2, abs=1e-8)
    seen = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
    calls = [r for r in seen if r["kind"] == "generate"]
    assert len(calls) == 2
    assert {r["shared_request_type"] for r in calls} == {"flex"}
    assert run["totals"]["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in cells))
