"""Worker (Pub/Sub push, CloudEvent): one cell per message; and the dead-letter handler.

Raise to retry (Pub/Sub redelivers with backoff), return to acknowledge.
"""

from __future__ import annotations

from functools import cache

import functions_framework
from cloudevents.http import CloudEvent

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


def _task(event: CloudEvent) -> CellTask | None:
    try:
        body, attempt = decode_event(event.data)
        return CellTask.from_message(body, delivery_attempt=attempt)
    except (MalformedMessageError, KeyError, TypeError, ValueError) as error:
        # A malformed message will never parse: acknowledge it rather than loop.
        log("malformed cell message dropped", severity="ERROR", error=str(error))
        return None


@functions_framework.cloud_event
def handle_cell(event: CloudEvent) -> None:
    """Process the cell a ``messagePublished`` event carries."""
    task = _task(event)
    if task is None:
        return
    store, publisher, blobs = _clients()
    outcome = process_cell(task, store=store, blobs=blobs, publisher=publisher)
    log(
        "cell handled",
        run_id=task.run_id,
        cell_id=task.cell_id,
        outcome=outcome,
        attempt=task.delivery_attempt,
    )


@functions_framework.cloud_event
def handle_dead_letter(event: CloudEvent) -> None:
    """Record a cell whose message was dead-lettered as failed, so its run finishes."""
    task = _task(event)
    if task is None:
        return
    store, publisher, blobs = _clients()
    outcome = record_dead_letter(task, store=store, publisher=publisher, blobs=blobs)
    log("dead letter handled", run_id=task.run_id, cell_id=task.cell_id, outcome=outcome)
