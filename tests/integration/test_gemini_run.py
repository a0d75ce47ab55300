"""A Gemini run on the local stack: dispatcher -> worker -> Vertex stand-in -> Firestore."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import post, wait_complete

pytestmark = pytest.mark.integration


def test_a_gemini_run_stores_judge_and_exact_scores_usage_and_cost(stack: Stack) -> None:
    standin = stack.env["VERTEX_STANDIN_URL"]
    # The first two model calls are rate-limited: the SDK's retries absorb them.
    requests.post(f"{standin}/_standin/config", json={"fail_first": 2}, timeout=5)
    response = post(
        stack,
        {
            "model_name": "gemini-3.8-flash",
            "evaluator_model_name": "gemini-3.8-flash",
            "scorer": "both",
            "context_lengths": [1000, 5000],
            "document_depth_percents": [0, 50, 100],
        },
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    run = wait_complete(run_id, timeout=180)
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == 6
    for cell in cells:
        assert cell["status"] == "answered"
        assert cell["exact_score"] == 10 and cell["judge_score"] == 10
        assert cell["usage"]["prompt_token_count"] > 0 and cell["cost_usd"] > 0
        assert cell["prompt_token_deviation"] == 0  # the API counts exactly what was asked
    seen = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
    generate_calls = [r for r in seen if r["kind"] == "generate"]
    assert len(generate_calls) == 6 + 6 + 2  # answers, judge calls, the two 429s
    assert run["totals"]["cost_usd"] > 0
    summary_name = run["report"]["summary_uri"].split("/", 3)[3]
    summary = json.loads(GcsBlobStore(stack.env["NIAH_BUCKET"]).read(summary_name))
    assert summary["mean_judge_score"] == 10 and summary["cost_usd"] > 0
    assert summary["prompt_token_deviation"]["max_abs"] == 0
    status = subprocess.run(
        [sys.executable, "-m", "niah.cli", "status", run_id],
        env={**os.environ, **stack.env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "cost $" in status.stdout and "scores (both)" in status.stdout
    assert "prompt tokens vs requested length" in status.stdout


def test_a_retired_model_runs_only_when_allowed_and_the_run_says_so(stack: Stack) -> None:
    """A retired model runs only with allow_retired, and the run says so (issue 33).

    gemini-2.5-flash is refused (Vertex retired it on 2026-10-20); with allow_retired it
    runs, and the run, its report and the dispatcher's answer say so. A model that
    ignores a custom temperature is sent none.
    """
    standin = stack.env["VERTEX_STANDIN_URL"]
    requests.post(f"{standin}/_standin/config", json={}, timeout=5)
    grid = {"context_lengths": [1000], "document_depth_percents": [50], "seed": 3303}
    refused = post(stack, grid | {"model_name": "gemini-2.5-flash"})
    assert refused.status_code == 400
    assert refused.json()["error"]["field"] == "model_name"
    assert "Google names gemini-3.8-flash or gemini-3.5-flash-lite instead" in refused.text
    allowed = post(stack, grid | {"model_name": "gemini-2.5-flash", "allow_retired": True})
    assert allowed.status_code == 202, allowed.text
    note = (
        "gemini-2.5-flash was retired on Vertex AI on 2026-10-20; Google names "
        "gemini-3.8-flash or gemini-3.5-flash-lite instead; called anyway (allow_retired)"
    )
    assert note in allowed.json()["warnings"]
    run_id = allowed.json()["run_id"]
    run = wait_complete(run_id, timeout=120)
    assert run["model_notes"] == [note] and run["spec"]["allow_retired"] is True
    assert run["call_settings"]["temperature"] == 0.0
    page = GcsBlobStore(stack.env["NIAH_BUCKET"]).read(run["report"]["html_uri"].split("/", 3)[3])
    assert "model lifecycle" in page.decode() and "called anyway (allow_retired)" in page.decode()

    ignored = post(stack, grid | {"model_name": "gemini-3.6-flash"})
    assert ignored.status_code == 202, ignored.text
    ignored_run = wait_complete(ignored.json()["run_id"], timeout=120)
    assert ignored_run["call_settings"]["temperature"] == "model default (ignored)"
    seen = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
    bodies = {
        r["path"].split("/models/")[1].split(":")[0]: r["body"]
        for r in seen
        if r["kind"] == "generate"
    }
    assert bodies["gemini-2.5-flash"]["generationConfig"]["temperature"] == 0.0
    assert "temperature" not in bodies["gemini-3.6-flash"]["generationConfig"]
