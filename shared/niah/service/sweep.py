"""The sweep: cells whose holder died, reports never asked for, runs that stalled."""

from __future__ import annotations

import datetime as dt
from typing import Any

from niah.core.interfaces import Publisher, ResultStore
from niah.core.spec import RunRequest
from niah.logs import log
from niah.service.batch_pieces import hand_on_dead_pieces
from niah.service.dispatch import (
    BATCH_POLL,
    BATCH_SUBMIT,
    batch_message,
    cell_messages,
    publish_missing,
    taken_cells,
)
from niah.service.run_completion import request_report_if_complete


def sweep_stalled_runs(
    *, store: ResultStore, publisher: Publisher, stalled_after_seconds: float
) -> dict[str, int]:
    """For every running run: hand on cells whose lease lapsed, and recover stalled runs.

    - A cell whose holder died (its lease lapsed unreleased) is published again at
      once, whatever the run's progress: Pub/Sub's redelivery may be minutes away or,
      on the emulator, never come.
    - A run whose cells are all stored but which has no report asks for it (at most
      once per report lease: a request lost, or a renderer that died).
    - A run with no progress for ``stalled_after_seconds`` gets its missing cells
      published again. Workers skip stored cells, so publishing again is always safe.

    A scheduler runs this every few minutes.
    """
    now = dt.datetime.now(dt.UTC)
    swept = published = handed_on = 0
    for run in store.running_runs():
        run_id = str(run["run_id"])
        try:
            spec = RunRequest.model_validate(run["spec"])
            if spec.is_batch():
                last = max(
                    filter(None, [run.get("updated_at"), run.get("created_at")]), default=None
                )
                stalled = last is None or (now - last).total_seconds() >= stalled_after_seconds
                published += _sweep_batch(
                    run_id, spec, run, store=store, publisher=publisher, stalled=stalled
                )
                continue
            handed_on += _hand_on_lapsed(run_id, spec, run, store=store, publisher=publisher)
            if int(run.get("done", 0)) + int(run.get("failed", 0)) >= int(run.get("total", 0)):
                request_report_if_complete(run_id, store=store, publisher=publisher)
            last = max(filter(None, [run.get("updated_at"), run.get("created_at")]), default=None)
            if last is None or (now - last).total_seconds() < stalled_after_seconds:
                continue
            taken = taken_cells(run_id, store)
            count = publish_missing(run_id, spec, taken, store=store, publisher=publisher, run=run)
            store.update_run(run_id, {"swept": count})  # counts as progress: no re-sweep soon
        except Exception as error:  # one bad run must not stop the sweep of the others
            log("sweep of a run failed", severity="ERROR", run_id=run_id, error=repr(error))
            continue
        log("stalled run swept", severity="WARNING", run_id=run_id, republished=count)
        swept += 1
        published += count
    return {"runs_swept": swept, "cells_republished": published, "cells_handed_on": handed_on}


def _hand_on_lapsed(
    run_id: str, spec: RunRequest, run: dict[str, Any], *, store: ResultStore, publisher: Publisher
) -> int:
    """Publish again the cells of the run whose holder died; how many."""
    lapsed = set(store.hand_on_lapsed(run_id))
    if not lapsed:
        return 0
    messages = [m for m in cell_messages(run_id, spec, run) if m["cell_id"] in lapsed]
    count = publisher.publish_cells(messages) if messages else 0
    log("cells of dead holders handed on", severity="WARNING", run_id=run_id, cells=count)
    return count


def _sweep_batch(
    run_id: str,
    spec: RunRequest,
    run: dict[str, Any],
    *,
    store: ResultStore,
    publisher: Publisher,
    stalled: bool,
) -> int:
    """A batch run's turn: poll its open jobs; re-ask dead pieces; resubmit a lost submit.

    Its jobs are polled on every sweep (the worker reads their state and ingests what is
    done): the sweep itself stays light, with no Vertex client. A piece of output whose
    holder died (its lease lapsed) is published again at once, as a dead holder's cell
    is. Messages published.
    """
    jobs = run.get("batch_jobs") or []
    if any(
        not (j.get("ingested") or j.get("ended")) and (not j.get("superseded") or "ingest" in j)
        for j in jobs
    ):
        # An open job, or a superseded one whose output is still being read (a resume
        # waits on it): the poll tends both.
        dead = hand_on_dead_pieces(run_id, run, store=store, publisher=publisher)
        return dead + publisher.publish_cells([batch_message(run_id, BATCH_POLL, run)])
    if int(run.get("done", 0)) + int(run.get("failed", 0)) >= int(run.get("total", 0)):
        request_report_if_complete(run_id, store=store, publisher=publisher)
        return 0
    if not stalled:
        return 0
    round_now = int(run.get("batch_round", 0))
    if not any(j.get("round") == round_now for j in jobs):
        return publisher.publish_cells([batch_message(run_id, BATCH_SUBMIT, run)])
    # Every job is done, yet cells are missing: failed lines sent online whose message
    # was lost. They go online again.
    taken = taken_cells(run_id, store)
    missing = [m for m in cell_messages(run_id, spec, run) if m["cell_id"] not in taken]
    count = publisher.publish_cells(missing) if missing else 0
    store.update_run(run_id, {"swept": count})
    return count
