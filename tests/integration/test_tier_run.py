"""A Priority PayGo run on the local stack (issue 52), from the dispatcher to the cells.

The dispatcher admits or refuses the tier (Flex PayGo on every model: no Vertex page
read names one for it), the worker asks Vertex (the stand-in) for it with Google's
header, and each cell records the tier the reply says it was served on, priced at it.
The stand-in's stack calls the global endpoint, where Google serves Priority PayGo.
"""

from __future__ import annotations

import pytest
import requests

from niah.cloud.store import FirestoreStore
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import post, wait_complete
from tests.unit.test_tiers import usage_cost

pytestmark = pytest.mark.integration


def test_a_priority_run_asks_for_priority_and_its_cells_record_and_pay_the_served_tier(
    stack: Stack,
) -> None:
    standin = stack.env["VERTEX_STANDIN_URL"]
    requests.post(f"{standin}/_standin/config", json={}, timeout=5)
    grid = {"context_lengths": [1000, 3000], "document_depth_percents": [50], "seed": 5252}
    for model in ("gemini-4-argon", "gemini-3.7-flash"):  # 3.8 Flash alone is named: FLEX
        refused = post(stack, grid | {"model_name": model, "tier": "flex"})
        assert refused.status_code == 400
        assert refused.json()["error"]["field"] == "tier"
        assert "Flex PayGo" in refused.text and "standard or priority" in refused.text

    response = post(stack, grid | {"model_name": "gemini-3.8-flash", "tier": "priority"})
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    run = wait_complete(run_id, timeout=180)
    assert run["spec"]["tier"] == "priority"
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == 2
    for cell in cells:
        assert cell["status"] == "answered"
        tier = cell["service_tier"]
        assert (tier["asked"], tier["served"], tier["traffic_type"]) == (
            "priority",
            "priority",
            "ON_DEMAND_PRIORITY",
        )
        assert cell["cost_usd"] == pytest.approx(usage_cost(cell, "priority"), abs=1e-8)
        assert cell["cost_usd"] == pytest.approx(usage_cost(cell, "standard") * 1.8, abs=1e-8)
    seen = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
    calls = [r for r in seen if r["kind"] == "generate"]
    assert len(calls) == 2
    assert {r["shared_request_type"] for r in calls} == {"priority"}
    assert run["totals"]["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in cells))
