"""Report (Pub/Sub push, CloudEvent): render a finished run's heatmap and summary.

Raise to retry (Pub/Sub redelivers), return to acknowledge; what a request asks and
how it is checked: ``niah.service.routes.report``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import functions_framework
from cloudevents.http import CloudEvent

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.bus import PubSubPublisher
from niah.cloud.spend_ledger import FirestoreSpendLedger
from niah.cloud.store import FirestoreStore
from niah.service.routes.report import handle_report_request
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
    handle_report_request(event.data, clients=_clients, alerts=_Alerts())
