"""Run completion: when every cell is stored, ask for the report, once; or record why not.

Shared by the worker, the dead-letter handler, the dispatcher, the sweep and the report;
light, so the dispatcher's cold start does not load the worker's machinery.
"""

from __future__ import annotations

import datetime as dt

from niah.core.interfaces import RUN_COMPLETE, RUN_REPORT_FAILED, Publisher, ResultStore
from niah.core.runs import RunRecord, stored_run
from niah.errors import DeadLetteredError
from niah.logs import log
from niah.service.messages import certify_step_message, report_message
from niah.settings import get_settings


def request_report_if_complete(
    run_id: str, *, store: ResultStore, publisher: Publisher, total: int | None = None
) -> bool:
    """Publish a report request when every cell of the run is stored, once.

    Of the workers that store a run's last cells together and of any duplicate
    deliveries after them, one asks (``mark_report_requested``). Again, never while a
    renderer is alive (its claim renewed within ``report_lease_seconds``): only once
    the run is still not complete a lease after the last ask and its renderer's claim
    lapsed (the renderer died) or was never taken (the request was lost), or after a
    reset. ``total``: the run's cell count where the caller read the run already (a
    worker), saving that read; a complete run then only finds its report requested
    already.
    """
    run: RunRecord | None = None
    if total is None:
        run = stored_run(store, run_id, counts=False)
        # A failed report is asked for again only once reopened (a reset, a resume).
        if run is None or run.status in (RUN_COMPLETE, RUN_REPORT_FAILED):
            return False
        total = run.total
    # One aggregation read: a cell is counted in the same write that stores it.
    if store.count_cells(run_id) < total:
        return False
    if not store.mark_report_requested(run_id, get_settings().report_lease_seconds):
        log("report already requested", run_id=run_id)
        return False
    try:
        if run is not None and run.is_certify:
            # A certify run's round is in: a worker plans the next round, or asks for
            # the report once the certificate is reached (niah.service.runs.certify_rounds).
            publisher.publish_cells([certify_step_message(run)])
            log("certify round in; next step asked", run_id=run_id)
            return True
        publisher.publish_report(report_message(run_id))
    except BaseException:
        store.clear_report_request(run_id)  # not asked after all: the next one asks
        raise
    log("report requested", run_id=run_id)
    return True


def record_report_failure(
    run_id: str, kind: str, reason: str, *, store: ResultStore, claim_id: str | None = None
) -> bool:
    """Mark the run's report failed, with why: ``niah status`` and the index say so.

    The cells stay; the run is done with (the sweep asks no more), until a reset, a
    resume or the run request sent again reopens it. ``claim_id``: the renderer's claim,
    which must still stand. False if the report was written or reopened meanwhile.
    """
    error = {"kind": kind, "reason": reason[:2000], "failed_at": dt.datetime.now(dt.UTC)}
    recorded = store.fail_report(run_id, error, claim_id=claim_id)
    log(
        "report failed; recorded on the run" if recorded else "report failure not recorded",
        severity="ERROR" if recorded else "WARNING",
        run_id=run_id,
        kind=kind,
        reason=reason[:1000],
    )
    return recorded


def record_report_dead_letter(run_id: str, *, store: ResultStore, deliveries: int = 0) -> str:
    """A report request that failed past its delivery limit: recorded on its run.

    Only a run still waiting for its report: one reset since (cells missing) or
    reported since is left alone. ``deliveries``: how often it was tried (0: unknown).
    What came of it, for the log.
    """
    run = stored_run(store, run_id, counts=False)
    if run is None:
        return "unknown run"
    if run.status in (RUN_COMPLETE, RUN_REPORT_FAILED):
        return run.status
    if store.count_cells(run_id) < run.total:
        return "cells missing"
    tried = f"{deliveries} deliveries" if deliveries else "every delivery"
    reason = (
        f"the report request failed {tried} (the store or the bucket out of reach, or "
        "the renderer dying); the report function's logs say why"
    )
    recorded = record_report_failure(run_id, DeadLetteredError.kind, reason, store=store)
    return "recorded" if recorded else "not recorded"
