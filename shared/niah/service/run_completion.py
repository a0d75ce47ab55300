"""Run completion: when every cell is stored, ask for the report, once.

Shared by the worker, the dead-letter handler, the dispatcher and the sweep; light, so
the dispatcher's cold start does not load the worker's machinery.
"""

from __future__ import annotations

from niah.core.interfaces import Publisher, ResultStore
from niah.logs import log

# Longer than the report function may run (300 s, infra/functions.tf), so only a dead
# renderer's claim is taken over, and a live one's guarded finish cannot fail on a
# takeover; shorter than Pub/Sub keeps redelivering. A report is asked for at most
# once in this window.
REPORT_LEASE_SECONDS = 360.0


def request_report_if_complete(
    run_id: str, *, store: ResultStore, publisher: Publisher, total: int | None = None
) -> bool:
    """Publish a report request when every cell of the run is stored, once.

    Of the workers that store a run's last cells together and of any duplicate
    deliveries after them, one asks (``mark_report_requested``); again only after
    ``REPORT_LEASE_SECONDS`` with the run still not complete (its request was lost or
    its renderer died), or after a reset. ``total``: the run's cell count where the
    caller read the run already (a worker), saving that read; a complete run then only
    finds its report requested already.
    """
    if total is None:
        run = store.get_run(run_id, counts=False)
        if run is None or run.get("status") == "complete":
            return False
        total = int(run.get("total", 0))
    # One aggregation read: a cell is counted in the same write that stores it.
    if store.count_cells(run_id) < total:
        return False
    if not store.mark_report_requested(run_id, REPORT_LEASE_SECONDS):
        log("report already requested", run_id=run_id)
        return False
    try:
        publisher.publish_report(run_id)
    except BaseException:
        store.clear_report_request(run_id)  # not asked after all: the next one asks
        raise
    log("report requested", run_id=run_id)
    return True
