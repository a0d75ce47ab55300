"""A report request off the reports topic: parsed by its kind, rendered, metered.

A push that will never parse (no kind, another kind, a run ID no run can have), or
that names a run this version cannot read (``StoredRunError``), is logged and
dropped: retrying cannot help. Anything else ``render_report`` raises goes up to the
entry point, and Pub/Sub delivers the request again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from niah.cloud.bus import decode_event
from niah.cloud.metering import metered
from niah.core.interfaces import BlobStore, ResultStore
from niah.errors import MalformedMessageError, StoredRunError
from niah.logs import log
from niah.service.messages import ReportRequest, parse_message
from niah.service.reports.render import render_report


def handle_report_request(
    event_data: Any, *, clients: Callable[[], tuple[ResultStore, BlobStore, Any]], alerts: Any
) -> str:
    """Render the report the request names; what came of it, for the log."""
    try:
        message = parse_message(decode_event(event_data)[0])
        if not isinstance(message, ReportRequest):
            raise MalformedMessageError(f"a {type(message).__name__} on the reports topic")
    except MalformedMessageError as error:
        log("malformed report message dropped", severity="ERROR", error=str(error))
        return "dropped"
    store, blobs, ledger = clients()
    started = time.perf_counter()
    with metered() as operations:
        try:
            render_report(message.run_id, store=store, blobs=blobs, ledger=ledger, alerts=alerts)
        except StoredRunError as error:
            # Raised before the claim: nothing changed, and no redelivery can read it.
            log("report request of a run this version cannot read dropped", severity="ERROR",
                run_id=message.run_id, kind=error.kind, problem=error.problem)  # fmt: skip
            return "unreadable"
    log(
        "report request metered",
        run_id=message.run_id,
        wall_seconds=round(time.perf_counter() - started, 3),
        operations=operations.counts(),
    )
    return "rendered"
