"""Report (Pub/Sub push, CloudEvent): render a finished run's heatmap and summary."""

from __future__ import annotations

import time
from functools import cache
from typing import Any

import functions_framework
from cloudevents.http import CloudEvent

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher, decode_event
from niah.cloud.metering import metered
from niah.cloud.spend_ledger import FirestoreSpendLedger
from niah.cloud.store import FirestoreStore
from niah.errors import MalformedMessageError
from niah.logs import log
from niah.service.report import render_report
from niah.settings import get_settings


@cache
def _clients() -> tuple[FirestoreStore, GcsBlobStore, FirestoreSpendLedger]:
    """Cloud clients, created once per instance on first use."""
    return FirestoreStore(), GcsBlobStore(get_settings().bucket), FirestoreSpendLedger()


@cache
def _alerts() -> PubSubPublisher:
    """The alerts topic's publisher (sentinels' checks), created on first use."""
    return PubSubPublisher()


class _Alerts:
    """The alerts publisher, made when a sentinel's check is first published, not before."""

    def publish_alert(self, message: dict[str, Any], attributes: dict[str, str]) -> None:
        _alerts().publish_alert(message, attributes)


@functions_framework.cloud_event
def handle_report(event: CloudEvent) -> None:
    """Render the report of the run a ``messagePublished`` event names."""
    try:
        body, _ = decode_event(event.data)
        run_id = str(body["run_id"])
    except (MalformedMessageError, KeyError) as error:
        log("malformed report message dropped", severity="ERROR", error=str(error))
        return
    store, blobs, ledger = _clients()
    started = time.perf_counter()
    with metered() as operations:
        render_report(run_id, store=store, blobs=blobs, ledger=ledger, alerts=_Alerts())
    log(
        "report request metered",
        run_id=run_id,
        wall_seconds=round(time.perf_counter() - started, 3),
        operations=operations.counts(),
    )
