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
# the worker: the run document read; the claim (the lease created: a cell never leased
# is neither stored nor held); the spend note (the lease extended, guarded by the update
# time its creation returned, and the note, in one batch, so only the lease's holder
# calls); the store (one batch: the cell, its counter shard, its call, its lease's
# release), whose commit returns the shard's count, so the completion check reads
# nothing. No bucket call: the haystack's listing rides on the run document and its
# tokens are in memory.
PLAIN_CELL = {
    "firestore_reads": 1,
    "firestore_writes": 7,
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
    # A cell held past a third of its lease renews it (one read, one write each), as a
    # slow machine's cell may: each renewal is logged, and counted here.
    renewed = Counter(
        line["cell_id"]
        for line in stack.log_lines("worker")
        if line.get("run_id") == run_id and line.get("message") == "lease renewed"
    )

    def pinned(cell_id: str) -> dict[str, int]:
        more = renewed[cell_id]
        return PLAIN_CELL | {
            "firestore_reads": PLAIN_CELL["firestore_reads"] + more,
            "firestore_writes": PLAIN_CELL["firestore_writes"] + more,
        }

    # The primer also releases the grid; the last cell also asks for the report. The
    # other four are plain, and cost exactly the pinned operations (and their renewals).
    plain = [line for line in lines if line["operations"] == pinned(line["cell_id"])]
    assert len(plain) >= 4
    assert all(line["cpu_seconds"] >= 0 and line["wall_seconds"] > 0 for line in lines)
    # Six cells count on one shard (one per 32 cells), not the deployment's 32: the
    # report sums one document, and one completion check counts the run.
    from niah.cloud.store import FirestoreStore
    from niah.cloud.store.paths import COUNTERS

    store = FirestoreStore()
    assert (store.get_run(run_id, counts=False) or {})["counter_shards"] == 1
    shards = [doc.to_dict() for doc in store._run(run_id).collection(COUNTERS).stream()]
    assert [(shard["done"], shard.get("failed", 0)) for shard in shards] == [(6, 0)]


def test_published_mrcr_rows_are_read_at_their_spans_on_the_stack(stack: Stack) -> None:
    """Each cell of a published MRCR v2 file reads its own row (a few bucket reads at most).

    Before: every cell streamed the file from its start to its row.
    """
    from niah.cloud.blobs import GcsBlobStore
    from niah.cloud.store import FirestoreStore
    from tests.unit.test_mrcr import PREFIX, published_csv, transcript

    standin(stack)
    rows = [
        (transcript(f"{PREFIX[:-2]}{n:02d}", f"Poem {n}.", "Essay. " * 2000), "x", 3000 + n, 2)
        for n in range(6)
    ]
    blobs = GcsBlobStore(stack.env["NIAH_BUCKET"])
    blobs.write("mrcr_v2/spans/a.csv", published_csv(rows), content_type="text/csv")
    body = {
        "model_name": "gemini-3.8-flash",
        "task": "mrcr",
        "mrcr_source": f"gs://{stack.env['NIAH_BUCKET']}/mrcr_v2/spans/",
    }
    response = post(stack, body)
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    wait_complete(run_id, timeout=120)
    cells = FirestoreStore().list_cells(run_id)
    assert sorted(c["context_length"] for c in cells) == [3000 + n for n in range(6)]
    assert {c["status"] for c in cells} == {"answered"}
    lines = handled(stack, run_id)
    # Its metadata, the header's first chunk and the row: at most three reads a cell.
    assert max(line["operations"]["gcs_class_b"] for line in lines) <= 3
