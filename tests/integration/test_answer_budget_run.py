"""Every answer has room, and one cut off at its budget is truncated, never wrong.

On the local stack: dispatcher, Pub/Sub push, worker, the local model or the Vertex
stand-in, Firestore, report, CLI.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah.core.prompts.answer_budget import answer_room
from niah.core.request.spec import RunRequest
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import post, wait_complete
from tests.unit.test_report_page import rows_of

pytestmark = pytest.mark.integration


def configure(stack: Stack, **config: Any) -> None:
    response = requests.post(
        f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config", json=config, timeout=5
    )
    response.raise_for_status()


def run(stack: Stack, body: dict[str, Any], timeout: float = 300) -> tuple[str, dict[str, Any]]:
    response = post(stack, body)
    assert response.status_code == 202, response.text
    run_id = str(response.json()["run_id"])
    return run_id, wait_complete(run_id, timeout=timeout)


def bucket_text(stack: Stack, uri: str) -> str:
    return GcsBlobStore(stack.env["NIAH_BUCKET"]).read(uri.split("/", 3)[3]).decode()


def test_a_truncated_answer_is_truncated_in_status_report_and_export(
    stack: Stack, tmp_path: Path
) -> None:
    # Every reply spends the budget thinking and ends MAX_TOKENS, as a thinking model does
    # when its output budget is too small.
    configure(stack, thoughts_tokens=900, thinking_only=True)
    try:
        run_id, finished = run(
            stack,
            {
                "model_name": "gemini-3.8-flash",
                "context_lengths": [1000],
                "document_depth_percents": [0, 100],
                "seed": 11,
            },
        )
    finally:
        configure(stack)
    cells = FirestoreStore().list_cells(run_id)
    assert [c["outcome"] for c in cells] == ["truncated", "truncated"]
    assert all(c["score"] is None and "exact_score" not in c for c in cells)
    assert all("raise max_output_tokens" in c["unscored_reason"] for c in cells)

    status = stack.niah("status", run_id, "--json")
    assert status.returncode == 5, status.stderr  # truncated answers: exit code 5
    document = json.loads(status.stdout)
    assert document["outcomes"]["truncated"] == 2 and document["outcomes"]["wrong"] == 0
    text = stack.niah("status", run_id)
    assert text.returncode == 5 and "2 truncated" in text.stdout
    assert "2 x truncated: cut off at the output budget" in text.stderr

    summary = json.loads(bucket_text(stack, finished["report"]["summary_uri"]))
    assert summary["outcomes"] == {"correct": 0, "wrong": 0, "unscored": 0, "truncated": 2}
    page = bucket_text(stack, finished["report"]["html_uri"])
    assert [row["outcome"] for row in rows_of(page)] == ["truncated", "truncated"]
    assert "0 wrong" in page and "2 truncated" in page

    out = tmp_path / "cells.csv"
    exported = stack.niah("export", run_id, "--format", "csv", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(out.read_text(encoding="utf-8-sig").splitlines()))
    assert [row["outcome"] for row in rows] == ["truncated", "truncated"]


def test_eight_needles_keep_every_value_whole_on_the_local_model(stack: Stack) -> None:
    """Before: the local model's 24-token budget cut the third of three numbers."""
    body = {
        "task": "multi_needle",
        "num_needles": 8,
        "context_lengths": [1200],
        "document_depth_percents": [0, 50],
        "seed": 4,
    }
    run_id, finished = run(stack, body)
    room = answer_room(RunRequest.model_validate(body))
    assert finished["call_settings"]["max_output_tokens"] == room
    for cell in FirestoreStore().list_cells(run_id):
        # The answer ended where the model ended it (the end of its line), not at the budget.
        assert cell["finish_reason"] == "stop", cell["model_response"]
        assert cell["outcome"] in ("correct", "wrong")
        assert cell["usage"]["candidates_token_count"] < room


def test_eight_needles_keep_every_value_whole_on_the_standin(stack: Stack) -> None:
    configure(stack)
    run_id, _ = run(
        stack,
        {
            "model_name": "gemini-3.8-flash",
            "task": "multi_needle",
            "num_needles": 8,
            "context_lengths": [2000],
            "document_depth_percents": [0, 50],
            "seed": 4,
        },
    )
    for cell in FirestoreStore().list_cells(run_id):
        assert cell["finish_reason"] == "STOP"
        for value in cell["expected_answers"]:
            assert value in cell["model_response"]
        assert (cell["outcome"], cell["task_score"]) == ("correct", 1.0)
