"""The worker's pushes: each decoded once, parsed by its kind, handed to its job.

Two routes share this: the cells topic (a cell, a batch run's step, a certify step) and
the dead-letter topic (any of those that kept failing, and report requests). A push
that will never parse is logged and acknowledged (``None`` work), never retried. A
job's service error is logged here once, as one line with what the push cost, and
raised for the entry point to map to a status: retryable, redelivered; the
deployment's own (no access to its store or bus), redelivered too, so its cells are
answered once that is fixed. A run this version cannot read (``StoredRunError``) is
the exception: no redelivery reads it, so its push is logged and acknowledged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from niah.cloud.bus import decode_push
from niah.cloud.metering import metered
from niah.core.interfaces import BlobStore, Publisher, ResultStore
from niah.errors import (
    CellInFlightError,
    MalformedMessageError,
    NiahError,
    RetryableError,
    StoredRunError,
)
from niah.logs import log
from niah.service.cells.worker import process_cell, record_dead_letter
from niah.service.messages import (
    BatchStep,
    CellTask,
    CertifyStep,
    Message,
    ReportRequest,
    parse_message,
)
from niah.service.runs.completion import record_report_dead_letter

Route = Literal["cells", "dead_letter"]
Clients = Callable[[], tuple[ResultStore, Publisher, BlobStore]]
Work = Callable[[], str]


def handle_push(push: Any, *, route: Route, clients: Clients, ledger: Callable[[], Any]) -> str:
    """Do what ``push`` asks on ``route``; what came of it (``NiahError`` if not done)."""
    try:
        body, attempt, attributes = decode_push(push)
        message = parse_message(body, delivery_attempt=attempt, attributes=attributes)
    except MalformedMessageError as error:
        # A malformed message will never parse: acknowledge it rather than loop.
        log("malformed message dropped", severity="ERROR", route=route, error=str(error))
        return "dropped"
    if route == "dead_letter":
        work, done = _dead_letter_work(message, clients)
    else:
        work, done = _cells_work(message, clients, ledger)
    if work is None:
        log(done, **_labels(message))
        return "dropped"
    return _run(message, work, done)


def _cells_work(
    message: Message, clients: Clients, ledger: Callable[[], Any]
) -> tuple[Work | None, str]:
    """The job of a message on the cells topic, and its log line."""
    if isinstance(message, BatchStep):
        from niah.service.batch.runs import handle_batch_message

        store, publisher, blobs = clients()
        return lambda: handle_batch_message(
            message, store=store, blobs=blobs, publisher=publisher
        ), "batch step handled"
    if isinstance(message, CertifyStep):
        from niah.service.runs.certify_rounds import handle_certify_step

        store, publisher, _ = clients()
        return lambda: handle_certify_step(
            message.run_id, message.run_stamp, store=store, publisher=publisher, ledger=ledger()
        ), "certify step handled"
    if isinstance(message, CellTask):
        store, publisher, blobs = clients()
        return lambda: process_cell(message, store=store, blobs=blobs, publisher=publisher), (
            "cell handled"
        )
    return None, "report request on the cells topic dropped"


def _dead_letter_work(message: Message, clients: Clients) -> tuple[Work | None, str]:
    """The job of a dead letter, and its log line.

    A certify step or a batch run's step that kept failing is dropped: its run's report
    request lapses, or the sweep publishes the step again while the run is open, so
    dropping it loses nothing. A report request is recorded on its run as the report's
    failure; a cell is published again or recorded failed so its run finishes.
    """
    if isinstance(message, CertifyStep):
        return None, "certify step dead-lettered; the sweep asks again"
    if isinstance(message, BatchStep):
        return None, "batch step dead-lettered; the sweep asks again"
    if isinstance(message, ReportRequest):
        store, _, _ = clients()
        return lambda: record_report_dead_letter(
            message.run_id, store=store, deliveries=message.deliveries
        ), "report dead letter handled"
    store, publisher, blobs = clients()
    return lambda: record_dead_letter(message, store=store, publisher=publisher, blobs=blobs), (
        "dead letter handled"
    )


def _labels(message: Message) -> dict[str, Any]:
    """What a log line says of the message: its run, and its cell or step."""
    if isinstance(message, CellTask):
        return {"run_id": message.run_id, "cell_id": message.cell_id}
    if isinstance(message, BatchStep):
        return {"run_id": message.run_id, "step": f"batch-{message.action}"}
    if isinstance(message, CertifyStep):
        return {"run_id": message.run_id, "step": "certify-step"}
    return {"run_id": message.run_id, "step": "report", "deliveries": message.deliveries}


def _run(message: Message, work: Work, done: str) -> str:
    """Do ``work``; a service error is one log line (no traceback), then raised."""
    started, cpu_started = time.perf_counter(), time.thread_time()
    attempt = message.delivery_attempt if isinstance(message, CellTask) else None

    def cost() -> dict[str, Any]:
        """What the push took: wall and CPU seconds, its waits by system, Google operations."""
        return {
            "wall_seconds": round(time.perf_counter() - started, 4),
            "cpu_seconds": round(time.thread_time() - cpu_started, 4),
            "waits": operations.waits(),
            "operations": operations.counts(),
        }

    with metered() as operations:
        try:
            outcome = work()
        except StoredRunError as error:
            # Its stored request fails this version's checks before anything is claimed:
            # every redelivery would fail the same (the dead-letter route's until retention),
            # and a dead letter must not republish it nor count it failed.
            log("push of a run this version cannot read acknowledged", severity="ERROR",
                **_labels(message), kind=error.kind, problem=error.problem, **cost())  # fmt: skip
            return "unreadable"
        except NiahError as error:
            _log_not_done(message, error, attempt, cost())
            raise
    log(done, **_labels(message), outcome=outcome, attempt=attempt, **cost())
    return outcome


def _log_not_done(
    message: Message, error: NiahError, attempt: int | None, cost: dict[str, Any]
) -> None:
    """The log line of a push that did not finish its job."""
    if isinstance(error, RetryableError):
        severity = "INFO" if isinstance(error, CellInFlightError) else "WARNING"
        log("cell not done; redelivered later", severity=severity, **_labels(message),
            kind=error.kind, error=str(error)[:1000], attempt=attempt, **cost)  # fmt: skip
        return
    log("cell not done: the deployment cannot reach its own services", severity="ERROR",
        **_labels(message), kind=error.kind, error=str(error)[:1000], **cost)  # fmt: skip
