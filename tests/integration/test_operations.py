"""The service's own operations per stored cell, counted at the adapters (issue 26).

Pinned by equality: a new Firestore read or write, a Pub/Sub message or a bucket call
per cell changes these numbers and fails the test, so it is seen and priced.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from tests.integration.conftest import Stack
from tests.integration.test_faults import GEMINI, standin
from tests.integration.test_local_stack import post, wait_complete

pytestmark = pytest.mark.integration

# What one cell that is neither the run's primer nor its last costs, end to end in
# the worker: the run document read; the claim (a transaction reading the cell and its
# lease in one request, writing the lease); the spend note; the store (one batch: the
# cell, its counter shard, its call, its lease's release); the completion check (one
# count aggregation). No bucket call: the haystack's listing rides on the run document
# and its tokens are in memory.
PLAIN_CELL = {
    "firestore_reads": 4,
    "firestore_writes": 6,
    "firestore_deletes": 0,
    "pubsub_messages": 0,
    "pubsub_bytes": 0,
    "gcs_class_a": 0,
    "gcs_class_b": 0,
}


def handled(stack: Stack, run_id: str) -> list[dict[str, Any]]:
    return [
        line
        for line in stack.log_lines("worker")
        if line.get("run_id") == run_id and line.get("message") == "cell handled"
    ]


def test_a_plain_cell_costs_exactly_its_pinned_operations(stack: Stack) -> None:
    standin(stack)
    body = {**GEMINI, "context_lengths": [1000, 2000], "seed": 260}
    run_id = post(stack, body).json()["run_id"]
    wait_complete(run_id, timeout=120)
    lines = handled(stack, run_id)
    assert [line["outcome"] for line in lines] == ["answered"] * 6
    shapes = Counter(json.dumps(line["operations"], sort_keys=True) for line in lines)
    print("OPERATIONS per cell: " + json.dumps(dict(shapes)))
    # The primer also releases the grid; the last cell also asks for the report. The
    # other four are plain, and cost exactly the pinned operations.
    assert shapes[json.dumps(PLAIN_CELL, sort_keys=True)] >= 4
    assert all(line["cpu_seconds"] >= 0 and line["wall_seconds"] > 0 for line in lines)
