"""Report (Pub/Sub push, CloudEvent): render a finished run's heatmap and summary."""

from __future__ import annotations

import base64
import binascii
import json
from functools import cache

import functions_framework
from cloudevents.http import CloudEvent

from niah.blobs import GcsBlobStore
from niah.logs import log
from niah.report import render_report
from niah.settings import get_settings
from niah.store import FirestoreStore


@cache
def _clients() -> tuple[FirestoreStore, GcsBlobStore]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), GcsBlobStore(get_settings().bucket)


@functions_framework.cloud_event
def handle_report(event: CloudEvent) -> None:
    """Render the report of the run a ``messagePublished`` event names."""
    message = event.data.get("message", {})
    try:
        run_id = str(json.loads(base64.b64decode(message.get("data", "")))["run_id"])
    except (binascii.Error, json.JSONDecodeError, KeyError, TypeError) as error:
        log("malformed report message dropped", severity="ERROR", error=str(error))
        return
    store, blobs = _clients()
    render_report(run_id, store=store, blobs=blobs)
