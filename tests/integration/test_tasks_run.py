"""Every task runs through the local stack: HTTP, Pub/Sub push, the local model, report."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah.tasks import TASKS, Sample, get_task
from niah_devtools import local_identity
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import wait_complete

pytestmark = pytest.mark.integration

# A reply cut short of its answer's room is truncated, never wrong; one that ran on past
# it is scored as it stands (niah.core.results.scoring.ran_past_its_room).
OUTCOMES = {"correct", "wrong", "unscored", "truncated"}
# A conversation of 2 needle turns needs more room than one needle.
# RULER's word lists need room for their common words listed 6 times (RULER's short rule);
# GraphWalks' prompt alone is about 400 tokens, its graph the rest.
LENGTHS = {task: 500 for task in TASKS} | {"mrcr": 2048, "common_words": 1000, "graphwalks": 1000}
EXTRA: dict[str, dict[str, Any]] = {"mrcr": {"num_needles": 2}}


def submit(stack: Stack, body: dict[str, Any]) -> str:
    response = requests.post(
        stack.env["DISPATCHER_URL"],
        data=json.dumps(body),
        headers={"Content-Type": "application/json", **local_identity.headers()},
        timeout=60,
    )
    assert response.status_code == 202, response.text
    return str(response.json()["run_id"])


@pytest.fixture(scope="module")
def task_runs(stack: Stack) -> dict[str, str]:
    """One small run per task, all submitted at once so the worker interleaves them."""
    runs = {
        task: submit(
            stack,
            {
                "task": task,
                "context_lengths": [LENGTHS[task]],
                "document_depth_percents": [50],
                "seed": 3,
                **EXTRA.get(task, {}),
            },
        )
        for task in TASKS
    }
    runs["noise+repeats"] = submit(
        stack,
        {
            "task": "multi_key",
            "haystack_dir": "noise",
            "samples_per_cell": 2,
            "context_lengths": [500],
            "document_depth_percents": [25],
        },
    )
    # GraphWalks at the top of the 1k-4k on the local model, the other question.
    runs["graphwalks@4000"] = submit(
        stack,
        {
            "task": "graphwalks",
            "graph_problem": "parents",
            "context_lengths": [4000],
            "document_depth_percents": [50],
            "seed": 3,
        },
    )
    for run_id in runs.values():
        wait_complete(run_id)
    return runs


def test_graphwalks_at_4000_tokens_asks_the_parents_exactly_to_the_token(
    task_runs: dict[str, str],
) -> None:
    [cell] = FirestoreStore().list_cells(task_runs["graphwalks@4000"])
    assert cell["status"] == "answered", cell.get("error")
    assert cell["question"].startswith("Find the parents of node ")
    assert cell["usage"]["prompt_token_count"] == 4000 + 1  # llama.cpp adds BOS
    assert cell["outcome"] in ("correct", "wrong")
    assert 0.0 <= cell["task_score"] <= 1.0


@pytest.mark.parametrize("task", list(TASKS))
def test_each_task_runs_through_the_stack_and_is_scored(
    stack: Stack, task_runs: dict[str, str], task: str
) -> None:
    store = FirestoreStore()
    run_id = task_runs[task]
    [cell] = store.list_cells(run_id)
    assert cell["task"] == task and cell["status"] == "answered", cell.get("error")
    assert cell["outcome"] in OUTCOMES
    # The prompt is exactly the requested length: llama.cpp counts our tokens plus BOS.
    assert cell["usage"]["prompt_token_count"] == LENGTHS[task] + 1
    assert cell["planned_prompt_tokens"] == LENGTHS[task]
    if cell["outcome"] in ("correct", "wrong"):
        assert 0.0 <= cell["task_score"] <= 1.0
    run = store.get_run(run_id)
    assert run["measures"]["by_length"].keys() <= {str(LENGTHS[task])}
    summary = json.loads(
        GcsBlobStore(stack.env["NIAH_BUCKET"]).read(run["report"]["summary_uri"].split("/", 3)[3])
    )
    assert summary["task"] == task and summary["samples"] == 1
    assert summary["score_scale"] == ("1-10" if task == "single" else "fraction")


def test_repeats_on_the_noise_haystack_are_cells_of_their_own(task_runs: dict[str, str]) -> None:
    store = FirestoreStore()
    run_id = task_runs["noise+repeats"]
    cells = store.list_cells(run_id)
    assert [c["cell_id"] for c in cells] == ["L00000500-D025000", "L00000500-D025000-S001"]
    assert cells[0]["needle"] != cells[1]["needle"]
    run = store.get_run(run_id)
    assert run["haystack_uri"].endswith("/generated/noise/")
    assert (run["total"], run["done"] + run["failed"]) == (2, 2)


def test_graphwalks_on_the_local_model_is_scored_by_the_card_s_set_f1(
    task_runs: dict[str, str],
) -> None:
    """The local model's reply is stored and scored as the card grades it.

    The base model need not answer well: greedy, it ends this cell's prompt with an empty
    line, which parses to nothing (wrong, flagged unparsed).
    """
    [cell] = FirestoreStore().list_cells(task_runs["graphwalks"])
    assert cell["question"].startswith("Perform a BFS from node ")
    assert cell["question"].endswith(" with depth 2.")
    assert 1 <= len(cell["expected_answers"]) <= 32
    assert cell["outcome"] in ("correct", "wrong")  # an empty reply parses to nothing: wrong
    # The stored reply, scored again: the same F1, precision, recall and parse flag.
    sample = Sample(insertions=(), question="", expected=tuple(cell["expected_answers"]))
    again = get_task("graphwalks").score(sample, cell["model_response"])
    assert (again.score, again.details) == (cell["task_score"], cell["task_details"])
    assert set(cell["task_details"]) == {
        "precision",
        "recall",
        "parse_failed",
        "answered_nodes",
        "expected_nodes",
    }
