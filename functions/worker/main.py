"""Worker (Pub/Sub push, HTTP): one cell per message; and the dead-letter handler.

Raise to retry (Pub/Sub redelivers with backoff), return to acknowledge. HTTP, not
CloudEvent: Pub/Sub puts ``deliveryAttempt`` at the top of a push body, and
functions-framework's CloudEvent conversion of a push rebuilds the event from the
message alone (3.10.2, ``event_conversion``), so a CloudEvent function never sees it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import flask
import functions_framework

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher, decode_event
from niah.cloud.store import FirestoreStore
from niah.errors import MalformedMessageError
from niah.logs import log
from niah.service.cell_worker import CellTask, process_cell, record_dead_letter
from niah.settings import get_settings


@cache
def _clients() -> tuple[FirestoreStore, PubSubPublisher, GcsBlobStore]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), PubSubPublisher(), GcsBlobStore(get_settings().bucket)


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


@functions_framework.http
def handle_cell(request: flask.Request) -> tuple[str, int]:
    """Process the cell a Pub/Sub push carries."""
    task = _task(request.get_json(silent=True))
    if task is None:
        return ACKNOWLEDGED
    store, publisher, blobs = _clients()
    outcome = process_cell(task, store=store, blobs=blobs, publisher=publisher)
    log(
        "cell handled",
        run_id=task.run_id,
        cell_id=task.cell_id,
        outcome=outcome,
        attempt=task.delivery_attempt,
    )
    return ACKNOWLEDGED


@functions_framework.http
def handle_dead_letter(request: flask.Request) -> tuple[str, int]:
    """Record a cell whose message was dead-lettered as failed, so its run finishes."""
    task = _task(request.get_json(silent=True))
    if task is None:
        return ACKNOWLEDGED
    store, publisher, blobs = _clients()
    outcome = record_dead_letter(task, store=store, publisher=publisher, blobs=blobs)
    log("dead letter handled", run_id=task.run_id, cell_id=task.cell_id, outcome=outcome)
    return ACKNOWLEDGED
