"""Worker (Pub/Sub push, CloudEvent): one cell per message.

Raise to retry (Pub/Sub redelivers with backoff), return to acknowledge.
"""

from __future__ import annotations

import base64
import binascii
import json
from functools import cache

import functions_framework
from cloudevents.http import CloudEvent

from niah.blobs import GcsBlobStore
from niah.bus import PubSubPublisher
from niah.logs import log
from niah.settings import get_settings
from niah.store import FirestoreStore
from niah.work import CellTask, process_cell


@cache
def _clients() -> tuple[FirestoreStore, PubSubPublisher, GcsBlobStore]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), PubSubPublisher(), GcsBlobStore(get_settings().bucket)


@functions_framework.cloud_event
def handle_cell(event: CloudEvent) -> None:
    """Process the cell a ``messagePublished`` event carries."""
    message = event.data.get("message", {})
    attempt = int(event.data.get("deliveryAttempt") or message.get("deliveryAttempt") or 1)
    try:
        body = json.loads(base64.b64decode(message.get("data", "")))
        task = CellTask.from_message(body, delivery_attempt=attempt)
    except (binascii.Error, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        # A malformed message will never parse: acknowledge it rather than loop.
        log("malformed cell message dropped", severity="ERROR", error=str(error))
        return
    store, publisher, blobs = _clients()
    outcome = process_cell(task, store=store, blobs=blobs, publisher=publisher)
    log("cell handled", run_id=task.run_id, cell_id=task.cell_id, outcome=outcome, attempt=attempt)
