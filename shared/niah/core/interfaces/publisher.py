"""What the service needs of its message bus: publish, and know it was accepted.

``niah.cloud.bus`` implements it on Pub/Sub.
"""

from __future__ import annotations

from typing import Any, Protocol


class Publisher(Protocol):
    """Publishes the service's messages and waits until each is accepted."""

    def publish_cells(self, messages: list[dict[str, Any]]) -> int:
        """Publish one message per cell; return how many were published."""
        ...

    def publish_report(self, message: dict[str, Any]) -> None:
        """Ask for a run's report to be rendered (``niah.service.messages.report_message``)."""
        ...


class AlertPublisher(Protocol):
    """Publishes sentinels' checks to the alerts topic users subscribe to."""

    def publish_alert(self, message: dict[str, Any], attributes: dict[str, str]) -> None:
        """Publish one check (``niah.core.results.sentinel_check.alert_message``) and wait."""
        ...


class Bus(Publisher, AlertPublisher, Protocol):
    """Both: the dispatcher publishes cells and reports, and alerts of refused firings."""
