"""Worker (Pub/Sub push, HTTP): one cell per message; and the dead-letter handler.

Raise to retry (Pub/Sub redelivers with backoff), return to acknowledge. HTTP, not
CloudEvent: Pub/Sub puts ``deliveryAttempt`` at the top of a push body, and
functions-framework's CloudEvent conversion of a push rebuilds the event from the
message alone (3.10.2, ``event_conversion``), so a CloudEvent function never sees it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from typing import Any

import flask
import functions_framework

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher, decode_event
from niah.cloud.metering import metered
from niah.cloud.store import FirestoreStore
from niah.errors import CellInFlightError, MalformedMessageError, NiahError, RetryableError
from niah.logs import log
from niah.service.cell_worker import process_cell, record_dead_letter
from niah.service.messages import CellTask, certify_step_run, report_request_run
from niah.service.run_completion import record_report_dead_letter
from niah.settings import get_settings


@cache
def _clients() -> tuple[FirestoreStore, PubSubPublisher, GcsBlobStore]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), PubSubPublisher(), GcsBlobStore(get_settings().bucket)


@cache
def _ledger() -> Any:
    """The spend ledger, for a certify round's hold; made on first use (light imports)."""
    from niah.cloud.spend_ledger import FirestoreSpendLedger

    return FirestoreSpendLedger()


def _batch_body(push: Any) -> dict[str, Any] | None:
    """A batch run's message (submit, poll), which names no cell; None for a cell's."""
    try:
        body, _ = decode_event(push)
    except (MalformedMessageError, KeyError, TypeError, ValueError):
        return None
    return body if isinstance(body, dict) and body.get("batch_action") else None


def _certify_step(push: Any) -> tuple[str, str | None] | None:
    """The run (and stamp) a certify step names; None for any other message."""
    try:
        body, _ = decode_event(push)
        return certify_step_run(body)
    except (MalformedMessageError, KeyError, TypeError, ValueError):
        return None


def _report_request(push: Any) -> tuple[str, int] | None:
    """The run a dead-lettered report request names, and how often it was delivered.

    None for any other message. The count is the attribute Pub/Sub adds when it
    forwards a dead letter (0 where it is missing).
    """
    try:
        body, _ = decode_event(push)
        run_id = report_request_run(body)
        attributes = push["message"].get("attributes") or {}
        deliveries = int(attributes.get("CloudPubSubDeadLetterSourceDeliveryCount") or 0)
    except (MalformedMessageError, KeyError, TypeError, ValueError, AttributeError):
        return None
    return None if run_id is None else (run_id, deliveries)


def _task(push: Any) -> CellTask | None:
    """The cell a push body carries, with its delivery attempt; None if it never will."""
    try:
        body, attempt = decode_event(push)
        return CellTask.from_message(body, delivery_attempt=attempt)
    except (MalformedMessageError, KeyError, TypeError, ValueError) as error:
        # A malformed message will never parse: acknowledge it rather than loop.
        log("malformed cell message dropped", severity="ERROR", error=str(error))
        return None


ACKNOWLEDGED = ("", 204)
# A push that is not done: Pub/Sub redelivers it with backoff (any status but 102 and
# 2xx is a nack).
NOT_DONE = 503


def _probe(request: flask.Request) -> tuple[str, int] | None:
    """A GET is a readiness or health probe, not a message: answered quietly."""
    return ("ready", 200) if request.method in ("GET", "HEAD") else None


def _run(task: CellTask, work: Callable[[], str], done: str) -> tuple[str, int]:
    """Do ``work`` for ``task``; a service error is one log line and a status, no traceback.

    Retryable (the model, the store or the bus busy; the cell in flight elsewhere):
    503, redelivered. Permanent errors that reach here are the deployment's (no access
    to its own store or bus): logged as errors with the fix, and redelivered too, so the
    cells are answered once it is fixed.
    """
    started, cpu_started = time.perf_counter(), time.thread_time()

    def cost() -> dict[str, Any]:
        """What the request took: wall and CPU seconds, and Google operations by kind."""
        return {
            "wall_seconds": round(time.perf_counter() - started, 4),
            "cpu_seconds": round(time.thread_time() - cpu_started, 4),
            "operations": operations.counts(),
        }

    with metered() as operations:
        try:
            outcome = work()
        except NiahError as error:
            return _not_done(task, error, cost())
    log(
        done,
        run_id=task.run_id,
        cell_id=task.cell_id,
        outcome=outcome,
        attempt=task.delivery_attempt,
        **cost(),
    )
    return ACKNOWLEDGED


def _not_done(task: CellTask, error: NiahError, cost: dict[str, Any]) -> tuple[str, int]:
    """The status and log line of a delivery that did not finish its cell."""
    if isinstance(error, RetryableError):
        severity = "INFO" if isinstance(error, CellInFlightError) else "WARNING"
        log(
            "cell not done; redelivered later",
            severity=severity,
            run_id=task.run_id,
            cell_id=task.cell_id,
            kind=error.kind,
            error=str(error)[:1000],
            attempt=task.delivery_attempt,
            **cost,
        )
        return error.kind, NOT_DONE
    log(
        "cell not done: the deployment cannot reach its own services",
        severity="ERROR",
        run_id=task.run_id,
        cell_id=task.cell_id,
        kind=error.kind,
        error=str(error)[:1000],
        **cost,
    )
    return error.kind, 500


@functions_framework.http
def handle_cell(request: flask.Request) -> tuple[str, int]:
    """Process the cell a Pub/Sub push carries."""
    probe = _probe(request)
    if probe is not None:
        return probe
    push = request.get_json(silent=True)
    batch = _batch_body(push)
    if batch is not None:
        from niah.service.batch_runs import handle_batch_message

        store, publisher, blobs = _clients()
        step = CellTask(str(batch["run_id"]), f"batch-{batch['batch_action']}", 0, 0.0)
        return _run(
            step,
            lambda: handle_batch_message(batch, store=store, blobs=blobs, publisher=publisher),
            "batch step handled",
        )
    step = _certify_step(push)
    if step is not None:
        from niah.service.certify_rounds import handle_certify_step

        store, publisher, _ = _clients()
        run_id, stamp = step
        return _run(
            CellTask(run_id, "certify-step", 0, 0.0),
            lambda: handle_certify_step(
                run_id, stamp, store=store, publisher=publisher, ledger=_ledger()
            ),
            "certify step handled",
        )
    task = _task(push)
    if task is None:
        return ACKNOWLEDGED
    store, publisher, blobs = _clients()
    return _run(
        task,
        lambda: process_cell(task, store=store, blobs=blobs, publisher=publisher),
        "cell handled",
    )


@functions_framework.http
def handle_dead_letter(request: flask.Request) -> tuple[str, int]:
    """Have a dead-lettered cell answered again, or record it failed so its run finishes.

    A dead-lettered report request is recorded on its run as the report's failure.
    """
    probe = _probe(request)
    if probe is not None:
        return probe
    push = request.get_json(silent=True)
    report = _report_request(push)
    if report is not None:
        run_id, deliveries = report
        store, _, _ = _clients()
        return _run(
            CellTask(run_id, "report", 0, 0.0, delivery_attempt=deliveries),
            lambda: record_report_dead_letter(run_id, store=store, deliveries=deliveries),
            "report dead letter handled",
        )
    if _certify_step(push) is not None:
        # A certify step that kept failing: its run's report request lapses and the
        # sweep asks again, so dropping it loses nothing.
        log("certify step dead-lettered; the sweep asks again")
        return ACKNOWLEDGED
    batch = _batch_body(push)
    if batch is not None:
        # A batch run's step that kept failing: the sweep publishes it again while the
        # run is open, so dropping it loses nothing.
        log("batch step dead-lettered; the sweep asks again", run_id=batch.get("run_id"))
        return ACKNOWLEDGED
    task = _task(push)
    if task is None:
        return ACKNOWLEDGED
    store, publisher, blobs = _clients()
    return _run(
        task,
        lambda: record_dead_letter(task, store=store, publisher=publisher, blobs=blobs),
        "dead letter handled",
    )
