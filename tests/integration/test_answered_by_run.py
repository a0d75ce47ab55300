"""A run routed by "Google" on the local stack: asked 3.5 Flash, answered by 3.6 Flash.

The Vertex stand-in answers gemini-3.5-flash with modelVersion gemini-3.6-flash, as
Google's routing of a deprecated or aliased ID would; the cells keep both, and the
report says who answered.
"""

from __future__ import annotations

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import post, wait_complete

pytestmark = pytest.mark.integration


def test_a_routed_run_keeps_the_model_asked_and_the_model_that_answered(stack: Stack) -> None:
    standin = stack.env["VERTEX_STANDIN_URL"]
    config = {"served_versions": {"gemini-3.5-flash": "gemini-3.6-flash"}}
    requests.post(f"{standin}/_standin/config", json=config, timeout=5).raise_for_status()
    try:
        response = post(
            stack,
            {
                "model_name": "gemini-3.5-flash",
                "context_lengths": [1000],
                "document_depth_percents": [0, 100],
            },
        )
        assert response.status_code == 202, response.text
        run_id = response.json()["run_id"]
        run = wait_complete(run_id, timeout=180)
    finally:  # the stand-in is shared by the session's tests: route nothing for them
        requests.post(f"{standin}/_standin/config", json={}, timeout=5).raise_for_status()
    cells = FirestoreStore().list_cells(run_id)
    assert [(c["model"], c["model_version"], c["status"]) for c in cells] == [
        ("gemini-3.5-flash", "gemini-3.6-flash", "answered")
    ] * 2
    assert all(len(c["response_id"]) == 22 for c in cells)
    assert len({c["response_id"] for c in cells}) == 2
    assert run["served_models"] == {"gemini-3.6-flash": 2}
    page = GcsBlobStore(stack.env["NIAH_BUCKET"]).read(run["report"]["html_uri"].split("/", 3)[3])
    assert "gemini-3.5-flash (answered by gemini-3.6-flash)" in page.decode()
