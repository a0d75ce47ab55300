"""Issue 52 on the local stack: cells fitted to a model that tokenizes otherwise than we do.

The Vertex stand-in counts in ``chunks4`` (``niah_devtools.standin_tokens.chunks4_tokens``:
every run of letters and digits is one token per 4 characters, rounded up, every other
non-space character one), a tokenization that is no constant times Gemma 3's (the
essays count 1.20-1.34 of ours, a needle's digits fewer). countTokens and the reply's
promptTokenCount both count so. gemini-3.5-flash is on Gemma 4 as google-genai maps it,
a tokenizer the service does not hold: each cell is fitted to countTokens and must land
in the documented window, [L - fit_tolerance(L), L], with the count and deviation on it.
"""

from __future__ import annotations

import json

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah.core.prompts.count_fit import FIT_ROUNDS, fit_tolerance
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import post, wait_complete

pytestmark = pytest.mark.integration


def test_cells_of_a_model_on_another_tokenizer_land_within_the_tolerance_and_say_so(
    stack: Stack,
) -> None:
    standin = stack.env["VERTEX_STANDIN_URL"]
    requests.post(f"{standin}/_standin/config", json={"tokenization": "chunks4"}, timeout=5)
    # 40,000 tokens: the run's sample is 16 slices (not the cells' own text), so the
    # sample's ratio alone does not fit the longest cells.
    lengths = [1000, 6000, 40_000]
    response = post(
        stack,
        {
            "model_name": "gemini-3.5-flash",
            "context_lengths": lengths,
            "document_depth_percents": [0, 50, 100],
            "seed": 5201,
        },
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    run = wait_complete(run_id, timeout=240)
    assert run["token_count"]["measured_by"] == "countTokens"
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == 9
    for cell in cells:
        length, name = cell["context_length"], cell["cell_id"]
        assert cell["status"] == "answered" and cell["exact_score"] == 10, name
        assert cell["fitted_by"] == "countTokens", name
        assert cell["fit_tolerance_tokens"] == fit_tolerance(length), name
        deviation = cell["fit_deviation_tokens"]
        assert -fit_tolerance(length) <= deviation <= 0, (name, deviation)
        assert cell["fit_within_tolerance"] is True, name
        assert cell["counted_prompt_tokens"] == length + deviation, name
        # The reply's count checks the fit: the model counted what countTokens did.
        assert cell["usage"]["prompt_token_count"] == cell["counted_prompt_tokens"], name
        assert cell["prompt_token_deviation"] == deviation, name
    seen = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
    counted = [json.dumps(r["body"]) for r in seen if r["kind"] == "count"]
    # The cells' fits, each round a count of the cell's prompt (which asks its question)...
    questions = {json.dumps(cell["question"])[1:-1] for cell in cells}
    asked = [body for body in counted if any(question in body for question in questions)]
    assert len(asked) == sum(cell["fit_rounds"] for cell in cells)
    # ...and the run's sample, and each length's probe (no needle, no question) that the
    # one worker fits once to start its cells from, in one to FIT_ROUNDS rounds.
    probes = len(counted) - len(asked) - 1
    assert len(lengths) <= probes <= len(lengths) * FIT_ROUNDS
    summary_name = run["report"]["summary_uri"].split("/", 3)[3]
    summary = json.loads(GcsBlobStore(stack.env["NIAH_BUCKET"]).read(summary_name))
    largest = max(-cell["fit_deviation_tokens"] for cell in cells)
    assert summary["prompt_token_deviation"]["max_abs"] == largest
    assert summary["count_fit"]["cells"] == summary["count_fit"]["within_tolerance"] == 9
    assert summary["count_fit"]["max_abs_deviation"] == largest
    note = (
        "prompt lengths fitted by countTokens (Google: an estimate), not exact: 9 cells, "
        f"all within [L - max(8, 0.1 % of L), L], largest |deviation| {largest} tokens"
    )
    assert summary["count_fit_note"] == note
    page = GcsBlobStore(stack.env["NIAH_BUCKET"]).read(run["report"]["html_uri"].split("/", 3)[3])
    assert "prompt lengths fitted by countTokens (Google: an estimate)" in page.decode()
    status = stack.niah("status", run_id)
    assert note in status.stdout, status.stdout


def test_cells_of_a_gemma3_model_are_exact_and_google_counts_them_so(stack: Stack) -> None:
    """gemini-3-flash-preview is on Gemma 3 (the SDK's map): no fit, and equality."""
    standin = stack.env["VERTEX_STANDIN_URL"]
    requests.post(f"{standin}/_standin/config", json={}, timeout=5)  # counts as Gemma 3
    response = post(
        stack,
        {
            "model_name": "gemini-3-flash-preview",
            "context_lengths": [1000, 6000],
            "document_depth_percents": [0, 100],
            "seed": 5202,
        },
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    run = wait_complete(run_id, timeout=180)
    assert "count_fit" not in run  # nothing fitted: the report claims no fit
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == 4
    for cell in cells:
        assert cell["status"] == "answered" and "fitted_by" not in cell
        assert cell["planned_prompt_tokens"] == cell["context_length"]
        assert cell["usage"]["prompt_token_count"] == cell["context_length"]
        assert cell["prompt_token_deviation"] == 0
    seen = requests.get(f"{standin}/_standin/requests", timeout=5).json()["requests"]
    assert len([r for r in seen if r["kind"] == "count"]) == 1  # the run's sample only
