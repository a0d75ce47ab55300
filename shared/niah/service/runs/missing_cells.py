"""Publishing a run's cells that are neither stored nor in flight: one place for it.

The dispatcher (a re-POST, a resume), a primer's release and the sweep publish a run's
missing cells through it; a run with none missing has its report asked for. The
messages themselves are ``niah.service.messages``'.
"""

from __future__ import annotations

import datetime as dt

from niah.core.interfaces import Publisher, ResultStore
from niah.core.runs import RunRecord, stored_run
from niah.logs import log
from niah.service.messages import BATCH_SUBMIT, batch_message, cell_messages
from niah.service.runs.completion import request_report_if_complete


def release_after_primer(run_id: str, *, store: ResultStore, publisher: Publisher) -> int:
    """Publish a run's cells held back behind its primer (stored, failed or retrying).

    Once: the run is marked released after publishing, so a primer that fails five
    times, or is delivered again, publishes the grid once. A release cut off before
    the mark is done again by the primer's next delivery or dead letter (the cells
    stored or in flight by then are left out).
    """
    run = stored_run(store, run_id, counts=False)
    if run is None or run.primer_released:
        return 0
    if run.cancelled:  # left unreleased: a resume publishes the rest
        log("cells not released: the run is cancelled", run_id=run_id)
        return 0
    published = publish_missing(run, taken_cells(run_id, store), store=store, publisher=publisher)
    store.update_run(run_id, {"primer_released": True, "published_at": dt.datetime.now(dt.UTC)})
    log("cells released after the primer", run_id=run_id, published=published)
    return published


def taken_cells(run_id: str, store: ResultStore) -> set[str]:
    """The run's cells that must not be published again: stored, or in flight (leased).

    The one place that knows it (a re-POST, a primer's release, the sweep). IDs only:
    a projection, not the stored cells' contents.
    """
    return store.cell_ids(run_id) | store.leased_cells(run_id)


def publish_missing(
    run: RunRecord, stored: set[str], *, store: ResultStore, publisher: Publisher
) -> int:
    """Publish the cells of the run not in ``stored``; if none, ask for the report.

    A batch run's missing cells go as one message: submit them as batch jobs (the
    worker does; it submits a round once).
    """
    messages = [m for m in cell_messages(run) if m["cell_id"] not in stored]
    if not messages:
        # Every cell is stored but the report may never have been asked for.
        request_report_if_complete(run.run_id, store=store, publisher=publisher)
        return 0
    if run.spec.is_batch():
        return publisher.publish_cells([batch_message(run, BATCH_SUBMIT)])
    return publisher.publish_cells(messages)
