"""A cell's record: storing it and counting it on its run, kept answers, failed cells.

Whatever answered a cell (an online call, a batch line, a dead letter's kept answer),
storing it is one atomic create-and-count; a paid answer the store cannot take is kept
in the bucket for the next delivery rather than asked for again.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, Literal

from niah.core.interfaces import BlobStore, Publisher, ResultStore, gs_uri
from niah.core.request.spec import RunRequest
from niah.core.results.counters import shard_of
from niah.errors import CloudRefusedError, NiahError, RetryableError, StoreUnavailableError
from niah.logs import log
from niah.service.cells.run_view import RunView
from niah.service.messages import CellTask
from niah.service.runs.completion import request_report_if_complete
from niah.settings import KEPT_ANSWERS_PREFIX

# What became of a delivery (the worker function logs it and acknowledges).
Outcome = Literal[
    "answered", "failed", "duplicate", "orphan", "rejected", "republished", "cancelled"
]
# A model call's record: its ID (cell and claim) and what it cost.
Call = tuple[str, dict[str, Any]]


def harness_timestamp() -> str:
    """Now, as the harness's ``test_timestamp_utc`` writes it."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S%z")


def store_cell(
    task: CellTask,
    doc: dict[str, Any],
    totals: dict[str, float],
    *,
    call: Call | None = None,
    store: ResultStore,
    blobs: BlobStore,
    publisher: Publisher,
    run: RunView,
) -> Outcome:
    """Create the cell and count it on the run; ask for the report if it was the last.

    ``run``: the run as the caller read it (its shards, total and shard totals).

    An answer is paid for: if the store cannot take it, it is kept in the bucket where
    the next delivery stores it, rather than asking the model again.
    """
    failed = doc.get("status") == "failed"
    try:
        recorded = store.record_cell(
            task.run_id,
            task.cell_id,
            doc,
            failed=failed,
            shards=run.counter_shards,
            totals=totals,
            call=call,
        )
    except CloudRefusedError as error:
        if failed:
            raise
        # The store will never take this document: the cell is stored failed, with the
        # call it paid for closed, rather than redelivered until it is dead-lettered.
        kept = {key: doc[key] for key in GRID_FIELDS if key in doc}
        refused = kept | failure_fields(error.kind, f"the store refused the cell's result: {error}")
        return store_cell(
            task,
            refused,
            totals,
            call=call,
            store=store,
            blobs=blobs,
            publisher=publisher,
            run=run,
        )
    except StoreUnavailableError as error:
        if failed:
            raise
        name = keep_answer(task, doc, totals, call, blobs)
        raise RetryableError(
            f"the store did not take {task.cell_id} ({error}); its answer is kept at "
            f"{gs_uri(blobs.bucket, name)} for the next delivery"
        ) from error
    # Stored, its lease freed in the same batch (so a reset of a failed cell can publish
    # and answer it again at once); or stored by another delivery, and this one's
    # claim freed here.
    if not recorded.stored:
        store.release_cell(task.run_id, task.cell_id)
        log("concurrent duplicate suppressed", run_id=task.run_id, cell_id=task.cell_id)
        return "duplicate"
    if failed:
        log(
            "cell failed",
            severity="WARNING",
            run_id=task.run_id,
            cell_id=task.cell_id,
            error=doc["error"],
        )
    if run.spec.is_certify():
        # Each round adds cells: the run's total and shards as this worker first read
        # them may be a round old, so the run is read afresh (a certify run is small).
        request_report_if_complete(task.run_id, store=store, publisher=publisher)
    elif _may_be_last(task, run, recorded.shard_counted, store):
        request_report_if_complete(task.run_id, store=store, publisher=publisher, total=run.total)
    return "failed" if failed else "answered"


def _may_be_last(task: CellTask, run: RunView, counted: int | None, store: ResultStore) -> bool:
    """Whether the run may be complete now: the cell's shard has all of its cells.

    ``counted``: the shard's count that storing the cell returned; no read then. Else
    (a run from before shards kept it) one read of the cell's own counter shard,
    whatever the run's size (none when the cell is alone on its shard). Only the last
    cell of each shard counts the run's cells (an aggregation of one read per 1,000).
    Counting the run after every cell read n/1,000 each: n squared over a run.
    """
    if not run.shard_totals:
        return True
    expected = run.shard_totals.get(shard_of(task.cell_id, run.counter_shards))
    if expected is None or expected <= 1:  # alone on its shard: its own store filled it
        return True
    if run.shards_keep_counted and counted is not None:
        return counted >= expected
    return store.shard_count(task.run_id, task.cell_id, shards=run.counter_shards) >= expected


def _kept_answer_name(task: CellTask) -> str:
    return f"{KEPT_ANSWERS_PREFIX}{task.run_id}/{task.cell_id}.json"


def keep_answer(
    task: CellTask,
    doc: dict[str, Any],
    totals: dict[str, float],
    call: Call | None,
    blobs: BlobStore,
) -> str:
    """Write a paid answer the store refused to the bucket; where it went."""
    name = _kept_answer_name(task)
    record = {"doc": doc, "totals": totals, "call": list(call) if call else None}
    blobs.write(name, json.dumps(record).encode(), content_type="application/json")
    log("answer kept for the next delivery", severity="WARNING", run_id=task.run_id, name=name)
    return name


def kept_answer(task: CellTask, blobs: BlobStore) -> dict[str, Any] | None:
    """A paid answer an earlier delivery could not store, as ``store_cell``'s arguments."""
    name = _kept_answer_name(task)
    if not any(info.name == name for info in blobs.list(name)):
        return None
    record = json.loads(blobs.read(name))
    call = record.get("call")
    return {
        "doc": record["doc"],
        "totals": record["totals"],
        "call": (str(call[0]), dict(call[1])) if call else None,
    }


# What a failed cell keeps of its record: its place on the grid and when.
GRID_FIELDS = (
    "run_id",
    "model",
    "task",
    "context_length",
    "depth_percent",
    "sample",
    "variant",
    "version",
    "attempts",
    "test_timestamp_utc",
)


def failed_cell(task: CellTask, spec: RunRequest, error: NiahError) -> dict[str, Any]:
    """A cell failed before it had a sample: its place on the grid and the error."""
    return {
        "run_id": task.run_id,
        "model": spec.model_name,
        "task": spec.task,
        "context_length": task.context_length,
        "depth_percent": task.depth_percent,
        "sample": task.sample,
        **({"variant": task.variant} if task.variant else {}),
        "version": spec.results_version,
        "attempts": task.delivery_attempt,
        "test_timestamp_utc": harness_timestamp(),
        **failure_fields(error.kind, str(error)),
    }


def failure_fields(kind: str, message: str) -> dict[str, Any]:
    """A failed cell's fields (shown grey, never a score)."""
    return {
        "status": "failed",
        "outcome": "unscored",
        "score": None,
        "task_score": None,
        "error": {"kind": kind, "message": message},
    }
