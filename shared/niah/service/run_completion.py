"""Run completion: when every cell is stored, ask for the report.

Shared by the worker, the dead-letter handler, the dispatcher and the sweep; light, so
the dispatcher's cold start does not load the worker's machinery.
"""

from __future__ import annotations

from niah.core.interfaces import Publisher, ResultStore
from niah.logs import log


def request_report_if_complete(run_id: str, *, store: ResultStore, publisher: Publisher) -> bool:
    """Publish a report request when every cell of the run is stored.

    Two workers finishing together may both publish; the report is safe to render twice.
    """
    run = store.get_run(run_id, counts=False)
    if run is None or run.get("status") == "complete":
        return False
    # One aggregation read: a cell is counted in the same write that stores it.
    if store.count_cells(run_id) < int(run.get("total", 0)):
        return False
    publisher.publish_report(run_id)
    log("report requested", run_id=run_id)
    return True
