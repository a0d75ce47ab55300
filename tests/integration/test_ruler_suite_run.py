"""RULER's suite on the local stack: ``niah run --suite ruler --wait`` and RULER's table.

The Vertex stand-in answers every RULER task right (it reads the chains, counts the
lists), so every row of the table is 100 % at both lengths; the local Gemma completes
every task with scores in [0, 100].
"""

from __future__ import annotations

import re

import pytest
import requests

from niah.cloud.store import FirestoreStore
from niah.tasks.ruler_suite import RULER_RUNS
from tests.integration.conftest import Stack

pytestmark = pytest.mark.integration

ROW = re.compile(r"^(\w+)((?:\s+(?:[\d.]+|-))+)$", re.MULTILINE)


def run_suite(stack: Stack, *options: str) -> tuple[dict[str, list[str]], str]:
    """Run the suite through the CLI to its table; the table's rows and the output."""
    result = stack.niah("run", "--suite", "ruler", *options, "--wait")
    assert result.returncode == 0, result.stderr[-3000:]
    print(result.stdout)  # the table, shown with pytest -s
    # The header ("task  600") is not a row: lengths under 1,000 have no comma to tell it.
    rows = {name: values.split() for name, values in ROW.findall(result.stdout) if name != "task"}
    return rows, result.stdout


def test_the_standin_scores_every_ruler_task_in_full_at_two_lengths(stack: Stack) -> None:
    requests.post(f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config", json={}, timeout=5)
    rows, out = run_suite(
        stack,
        "--model_name",
        "gemini-3.8-flash",
        "--context_lengths",
        "1500",
        "3000",
        "--document_depth_percents",
        "40",
        "--seed",
        "17",
        "--timeout",
        "600",
    )
    assert set(rows) == {*RULER_RUNS, "average"}, out
    for name, values in rows.items():
        assert values == ["100.0", "100.0"], (name, out)
    assert "effective length: 3,000" in out
    run_ids = re.findall(r"^\w+: run (run-\w+), \d+ cells?$", out, re.MULTILINE)
    assert len(run_ids) == len(RULER_RUNS)
    for run_id in run_ids:
        cells = FirestoreStore().list_cells(run_id)
        assert {c["planned_prompt_tokens"] for c in cells} == {1500, 3000}


def test_the_local_model_completes_every_ruler_task(stack: Stack) -> None:
    # Small, as the local model's tests are: 600 tokens, the least every task is admitted
    # at (common_words' list needs ~578 at most: docs/tasks/common_words.md). 9 calls.
    rows, out = run_suite(
        stack,
        "--context_lengths",
        "600",
        "--document_depth_percents",
        "50",
        "--seed",
        "2",
        "--timeout",
        "800",
    )
    assert set(rows) == {*RULER_RUNS, "average"}, out
    for name, values in rows.items():
        # A reply cut short of its answer's room is truncated (never scored): "-" then.
        assert values == ["-"] or 0.0 <= float(values[0]) <= 100.0, (name, out)
    run_ids = re.findall(r"^\w+: run (run-\w+), 1 cell$", out, re.MULTILINE)
    assert len(run_ids) == len(RULER_RUNS), out  # one cell each: "1 cell", not "1 cells"
    for run_id in run_ids:
        run = FirestoreStore().get_run(run_id)
        assert run["status"] == "complete" and run["failed"] == 0, run_id
