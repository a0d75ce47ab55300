"""Gemini on the local stack answers every task in full: each run scores 100 %.

The Vertex stand-in answers as a good model would (every asked value, a decline for an
absent key, the character behind a landmark, the asked MRCR reply) and thinks as Google's
models do, against the output budget: a run that scores less here has a budget or a
scorer that cuts right answers.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from niah.cloud.store import FirestoreStore
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import wait_complete
from tests.integration.test_tasks_run import submit

pytestmark = pytest.mark.integration

TASK_RUNS: dict[str, dict[str, Any]] = {
    "single": {},
    "multi_needle": {"num_needles": 8},
    "multi_key": {"num_distractors": 5, "needle_key_type": "uuids"},
    "multi_value": {"num_values": 6, "needle_value_type": "words"},
    "multi_query": {"num_queries": 4},
    "absent": {},
    "nonliteral": {},
    "mrcr": {"num_needles": 4},
}


def standin_runs(stack: Stack, runs: dict[str, dict[str, Any]], **common: Any) -> dict[str, str]:
    """Each of ``runs`` submitted for gemini-3.8-flash on the stand-in, reset to defaults."""
    requests.post(f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config", json={}, timeout=5)
    return {
        name: submit(stack, {"model_name": "gemini-3.8-flash", **common, **options})
        for name, options in runs.items()
    }


@pytest.fixture(scope="module")
def gemini_task_runs(stack: Stack) -> dict[str, str]:
    runs = {task: {"task": task, **options} for task, options in TASK_RUNS.items()}
    return standin_runs(
        stack,
        runs,
        context_lengths=[3000],
        document_depth_percents=[10, 60],
        samples_per_cell=2,
        seed=21,
    )


def finished(run_id: str, timeout: float) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run once complete, and its cells."""
    run = wait_complete(run_id, timeout=timeout)
    return run, FirestoreStore().list_cells(run_id)


@pytest.mark.parametrize("task", list(TASK_RUNS))
def test_gemini_on_the_standin_scores_every_task_in_full(
    gemini_task_runs: dict[str, str], task: str
) -> None:
    run, cells = finished(gemini_task_runs[task], timeout=300)
    assert len(cells) == 4
    for cell in cells:
        assert cell["finish_reason"] == "STOP", cell.get("unscored_reason")
        assert (cell["outcome"], cell["task_score"]) == ("correct", 1.0), cell["model_response"]
    assert run["outcomes"] == {"correct": 4, "wrong": 0, "unscored": 0, "truncated": 0}
    assert run["measures"]["mean"] == 100.0


# GraphWalks to a million tokens (gemini-3.8-flash takes 1,048,576): both questions.
GRAPHWALKS_RUNS: dict[str, dict[str, Any]] = {
    "bfs": {"bfs_depth": 3, "context_lengths": [2000, 1_000_000]},
    "parents": {"graph_problem": "parents", "context_lengths": [4000, 1_000_000]},
}


@pytest.fixture(scope="module")
def graphwalks_runs(stack: Stack) -> dict[str, str]:
    return standin_runs(
        stack, GRAPHWALKS_RUNS, task="graphwalks", document_depth_percents=[50], seed=38
    )


@pytest.mark.parametrize("problem", list(GRAPHWALKS_RUNS))
def test_graphwalks_on_the_standin_scores_in_full_to_a_million_tokens(
    graphwalks_runs: dict[str, str], problem: str
) -> None:
    run, cells = finished(graphwalks_runs[problem], timeout=600)
    assert (
        sorted(cell["context_length"] for cell in cells)
        == GRAPHWALKS_RUNS[problem]["context_lengths"]
    )
    for cell in cells:
        assert cell["status"] == "answered", cell.get("error")
        assert cell["planned_prompt_tokens"] == cell["context_length"]
        assert cell["usage"]["prompt_token_count"] == cell["context_length"]
        assert cell["model_response"].startswith("Final Answer: [")
        assert (cell["outcome"], cell["task_score"]) == ("correct", 1.0), cell["model_response"]
        assert cell["task_details"]["precision"] == cell["task_details"]["recall"] == 1.0
    assert run["measures"]["mean"] == 100.0


# The harness's --needles, written in the form the stand-in reads (as a good model would).
OWN_NEEDLES = {
    "task": "multi_needle",
    "needles": [
        "The special magic Lisbon number is: 4417302.",
        "The special magic Oslo number is: 9081126.",
    ],
    "retrieval_question": (
        "What are the special magic numbers for Lisbon, Oslo? Give each city with its number."
    ),
}


@pytest.mark.parametrize(
    ("scoring", "scorer"),
    [
        ({"expected_answers": ["4417302", "9081126"]}, "task"),
        ({"scorer": "judge", "evaluator_model_name": "gemini-3.8-flash"}, "judge"),
    ],
)
def test_the_users_own_needles_are_hidden_asked_and_scored_on_the_stack(
    stack: Stack, scoring: dict[str, Any], scorer: str
) -> None:
    run_id = submit(
        stack,
        {
            "model_name": "gemini-3.8-flash",
            "context_lengths": [2000],
            "document_depth_percents": [30],
            **OWN_NEEDLES,
            **scoring,
        },
    )
    run = wait_complete(run_id, timeout=300)
    [cell] = FirestoreStore().list_cells(run_id)
    assert all(needle in cell["needle"] for needle in OWN_NEEDLES["needles"])
    assert "4417302" in cell["model_response"] and "9081126" in cell["model_response"]
    assert (cell["scorer"], cell["outcome"], cell["score"]) == (scorer, "correct", 1.0)
    assert run["measures"]["mean"] == 100.0
