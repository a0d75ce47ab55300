"""A Gemini run on the local stack: dispatcher -> worker -> Vertex stand-in -> Firestore."""

from __future__ import annotations

import json

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
    status = stack.niah("status", run_id)
    assert status.returncode == 0, status.stderr
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


def test_a_model_that_counts_more_gets_fitted_lengths_and_cells_over_its_limit_refused(
    stack: Stack,
) -> None:
    """Issue 34: lengths as Gemini counts them, on a stand-in that counts 5 % more.

    The run measures the model's count of its haystack once (countTokens), records it,
    and builds each prompt to floor(L x local / model) local tokens; the model then
    counts L or L - 1. A prompt the model counts above its input limit (the stand-in
    counting 100 times ours, on a task whose context is its own) is refused unpaid.
    """
    standin = stack.env["VERTEX_STANDIN_URL"]
    requests.post(f"{standin}/_standin/config", json={"token_count_ratio": 1.05}, timeout=5)
    lengths = [1000, 3000]
    response = post(
        stack,
        {
            "model_name": "gemini-3.8-flash",
            "context_lengths": lengths,
            "document_depth_percents": [0, 100],
            "seed": 3401,
        },
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    run = wait_complete(run_id, timeout=180)
    recorded = run["token_count"]
    local, model = recorded["local_tokens"], recorded["model_tokens"]
    assert model == int(local * 1.05 + 0.5) and round(recorded["deviation_percent"], 1) == 5.0
    assert recorded["sample"] == f"the haystack's first 3,000 tokens ({local:,} local tokens)"
    seen = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
    # The sample once for the whole run; gemini-3.8-flash's tokenizer is none we hold
    # (issue 52), so each length's probe (once in the one worker) and each of the 4 cells
    # are counted too, each landing at once (this stand-in counts at a constant ratio).
    assert len([r for r in seen if r["kind"] == "count"]) == 1 + 2 + 4
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == 4
    for cell in cells:
        length = cell["context_length"]
        assert cell["status"] == "answered" and cell["exact_score"] == 10
        assert cell["planned_prompt_tokens"] == length * local // model  # exact, local
        counted = cell["usage"]["prompt_token_count"]
        assert counted == int(cell["planned_prompt_tokens"] * 1.05 + 0.5)  # the model's
        assert length - 1 <= counted <= length, cell["cell_id"]
        assert round(cell["token_count_deviation_percent"], 1) == 5.0
        assert cell["counted_prompt_tokens"] == counted and cell["fit_rounds"] == 1
    summary_name = run["report"]["summary_uri"].split("/", 3)[3]
    summary = json.loads(GcsBlobStore(stack.env["NIAH_BUCKET"]).read(summary_name))
    assert summary["token_count_note"] == (
        "gemini-3.8-flash counts 5.0 % more tokens than the local tokenizer on this "
        f"haystack ({recorded['sample']}); lengths fitted to gemini-3.8-flash's count"
    )
    page = GcsBlobStore(stack.env["NIAH_BUCKET"]).read(run["report"]["html_uri"].split("/", 3)[3])
    assert "lengths fitted to gemini-3.8-flash&#39;s count" in page.decode()

    # 100 times ours: 12,000 tokens of common words are 1.2M as it counts, above
    # gemini-3.8-flash's 1,048,576. A generated context is not fitted; it is counted.
    requests.post(f"{standin}/_standin/config", json={"token_count_ratio": 100}, timeout=5)
    over = post(
        stack,
        {
            "model_name": "gemini-3.8-flash",
            "task": "common_words",
            "context_lengths": [12000],
            "document_depth_percents": [50],
            "seed": 3402,
        },
    )
    assert over.status_code == 202, over.text
    over_id = over.json()["run_id"]
    wait_complete(over_id, timeout=120)
    [refused] = FirestoreStore().list_cells(over_id)
    assert refused["status"] == "failed" and refused["error"]["kind"] == "cell"
    assert refused["error"]["message"].startswith(
        "context_lengths: the 12000-token cell's prompt is "
    )
    assert "above its input limit of 1048576 tokens" in refused["error"]["message"]
    seen = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
    assert [r["kind"] for r in seen] == ["count"]  # counted, never generated
