"""The sweep: republish the missing cells of runs that stopped making progress."""

from __future__ import annotations

import datetime as dt

from niah.core.interfaces import Publisher, ResultStore
from niah.core.spec import RunRequest
from niah.logs import log
from niah.service.dispatch import publish_missing


def sweep_stalled_runs(
    *, store: ResultStore, publisher: Publisher, stalled_after_seconds: float
) -> dict[str, int]:
    """Republish the missing cells of runs that have made no progress for a while.

    Pub/Sub redelivers what a crashed worker held, but not forever (7 days), and the
    emulator not at all when the worker died mid-request. Workers skip stored cells, so
    republishing is always safe; a scheduler runs this every few minutes.
    """
    now = dt.datetime.now(dt.UTC)
    swept = published = 0
    for run in store.running_runs():
        last = max(filter(None, [run.get("updated_at"), run.get("created_at")]), default=None)
        if last is None or (now - last).total_seconds() < stalled_after_seconds:
            continue
        run_id = str(run["run_id"])
        try:
            spec = RunRequest.model_validate(run["spec"])
            stored = {str(cell["cell_id"]) for cell in store.list_cells(run_id)}
            stored |= store.leased_cells(run_id)  # in flight: not lost
            count = publish_missing(run_id, spec, stored, store=store, publisher=publisher, run=run)
            store.update_run(run_id, {"swept": count})  # counts as progress: no re-sweep soon
        except Exception as error:  # one bad run must not stop the sweep of the others
            log("sweep of a run failed", severity="ERROR", run_id=run_id, error=repr(error))
            continue
        log("stalled run swept", severity="WARNING", run_id=run_id, republished=count)
        swept += 1
        published += count
    return {"runs_swept": swept, "cells_republished": published}
