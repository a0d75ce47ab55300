"""Pub/Sub: publishing the cell, report and alert messages, and reading a push event.

The messages themselves are built and parsed in ``niah.service.messages``.
"""

from __future__ import annotations

import json
from typing import Any

from niah.cloud import metering
from niah.cloud.google_errors import raises_service_errors
from niah.cloud.metering import PUBSUB_BYTES, PUBSUB_MESSAGES
from niah.errors import MalformedMessageError
from niah.settings import get_settings


@metering.waits_on(metering.PUBSUB)
@raises_service_errors()
class PubSubPublisher:
    """``niah.core.interfaces.Publisher`` on Pub/Sub (or its emulator, via PUBSUB_EMULATOR_HOST)."""

    def __init__(self, client: Any = None) -> None:
        import google.cloud.pubsub_v1 as pubsub_v1

        settings = get_settings()
        self._timeout = settings.publish_timeout_seconds
        # Large batches: a 121-cell grid goes out in one or two publish requests.
        self._client = client or pubsub_v1.PublisherClient(
            batch_settings=pubsub_v1.types.BatchSettings(
                max_messages=1000, max_bytes=5_000_000, max_latency=0.01
            )
        )
        self._cells_topic = self._client.topic_path(settings.project, settings.cells_topic)
        self._reports_topic = self._client.topic_path(settings.project, settings.reports_topic)
        self._alerts_topic = self._client.topic_path(settings.project, settings.alerts_topic)

    def publish_cells(self, messages: list[dict[str, Any]]) -> int:
        """Publish every cell, then wait on every future so none is lost on return."""
        bodies = [json.dumps(message).encode() for message in messages]
        # Attributes for the console's eyes: the run, and the cell where the message is a
        # cell's. What a message is, is its body's to say (niah.service.messages), not ours.
        futures = [
            self._client.publish(
                self._cells_topic,
                body,
                run_id=str(message["run_id"]),
                **({"cell_id": str(message["cell_id"])} if "cell_id" in message else {}),
            )
            for body, message in zip(bodies, messages, strict=True)
        ]
        metering.count(PUBSUB_MESSAGES, len(bodies))
        metering.count(PUBSUB_BYTES, sum(len(body) for body in bodies))
        for future in futures:
            future.result(timeout=self._timeout)
        return len(futures)

    def publish_report(self, message: dict[str, Any]) -> None:
        """Publish a run's report request and wait for it to be accepted."""
        data = json.dumps(message).encode()
        metering.count(PUBSUB_MESSAGES)
        metering.count(PUBSUB_BYTES, len(data))
        run_id = str(message["run_id"])
        self._client.publish(self._reports_topic, data, run_id=run_id).result(timeout=self._timeout)

    def publish_alert(self, message: dict[str, Any], attributes: dict[str, str]) -> None:
        """Publish a sentinel's check to the alerts topic and wait for it to be accepted."""
        data = json.dumps(message, default=str).encode()
        metering.count(PUBSUB_MESSAGES)
        metering.count(PUBSUB_BYTES, len(data))
        self._client.publish(self._alerts_topic, data, **attributes).result(timeout=self._timeout)


def decode_event(event_data: Any) -> tuple[dict[str, Any], int]:
    """The JSON body of a Pub/Sub ``messagePublished`` event, and its delivery attempt."""
    body, attempt, _ = decode_push(event_data)
    return body, attempt


def decode_push(event_data: Any) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """A push's JSON body, its delivery attempt and its message's attributes, decoded once.

    The attempt counter is present when the subscription has a dead-letter policy.
    ``MalformedMessageError`` for a push that will never decode.
    """
    import base64

    message = event_data.get("message") if isinstance(event_data, dict) else None
    if not isinstance(message, dict):
        raise MalformedMessageError("the push carries no message object")
    try:
        attempt = int(event_data.get("deliveryAttempt") or message.get("deliveryAttempt") or 1)
        body = json.loads(base64.b64decode(message.get("data", "")))
    except (ValueError, TypeError) as error:  # bad base64, JSON, UTF-8 or attempt count
        raise MalformedMessageError(str(error)) from error
    if not isinstance(body, dict):
        raise MalformedMessageError("the message body is not a JSON object")
    attributes = message.get("attributes")
    return body, attempt, attributes if isinstance(attributes, dict) else {}
