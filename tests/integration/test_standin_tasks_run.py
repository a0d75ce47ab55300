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


@pytest.fixture(scope="module")
def gemini_task_runs(stack: Stack) -> dict[str, str]:
    requests.post(f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config", json={}, timeout=5)
    return {
        task: submit(
            stack,
            {
                "model_name": "gemini-3.8-flash",
                "task": task,
                "context_lengths": [3000],
                "document_depth_percents": [10, 60],
                "samples_per_cell": 2,
                "seed": 21,
                **options,
            },
        )
        for task, options in TASK_RUNS.items()
    }


@pytest.mark.parametrize("task", list(TASK_RUNS))
def test_gemini_on_the_standin_scores_every_task_in_full(
    gemini_task_runs: dict[str, str], task: str
) -> None:
    run_id = gemini_task_runs[task]
    run = wait_complete(run_id, timeout=300)
    cells = FirestoreStore().list_cells(run_id)
    assert len(cells) == 4
    for cell in cells:
        assert cell["finish_reason"] == "STOP", cell.get("unscored_reason")
        assert (cell["outcome"], cell["task_score"]) == ("correct", 1.0), cell["model_response"]
    assert run["outcomes"] == {"correct": 4, "wrong": 0, "unscored": 0, "truncated": 0}
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
