"""What the service's own work asks of Google: operations counted at the adapters.

Each adapter method counts the billable operations it makes, in Google's units:
Firestore document reads, writes and deletes (a query or a get bills at least one
read; an aggregation one read per 1,000 index entries), Pub/Sub messages and bytes
published, Cloud Storage class A (writes, listings) and class B (reads) operations.
The counts go to the ``metered()`` block around the current request (a worker's cell,
a dispatch), so each request can log what it cost; outside such a block nothing is
kept. Threads a request starts (the lease keeper) count into the same block when
started with ``contextvars.copy_context()``.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# The kinds counted (``Operations`` keys), in Google's billing units.
FIRESTORE_READS = "firestore_reads"
FIRESTORE_WRITES = "firestore_writes"
FIRESTORE_DELETES = "firestore_deletes"
PUBSUB_MESSAGES = "pubsub_messages"
PUBSUB_BYTES = "pubsub_bytes"
GCS_CLASS_A = "gcs_class_a"
GCS_CLASS_B = "gcs_class_b"
KINDS = (
    FIRESTORE_READS,
    FIRESTORE_WRITES,
    FIRESTORE_DELETES,
    PUBSUB_MESSAGES,
    PUBSUB_BYTES,
    GCS_CLASS_A,
    GCS_CLASS_B,
)


class Operations:
    """A request's operation counts; safe to add to from its threads."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, kind: str, count: int = 1) -> None:
        """Count ``count`` more operations of ``kind``."""
        with self._lock:
            self._counts[kind] += count

    def counts(self) -> dict[str, int]:
        """Every kind, zeros included, so two requests' lines compare field by field."""
        with self._lock:
            return {kind: int(self._counts.get(kind, 0)) for kind in KINDS}


_current: ContextVar[Operations | None] = ContextVar("niah_operations", default=None)


def count(kind: str, number: int = 1) -> None:
    """Add ``number`` operations of ``kind`` to the current request's counts, if any."""
    operations = _current.get()
    if operations is not None:
        operations.add(kind, number)


def reads(documents: int) -> None:
    """A get or query that returned ``documents``: Firestore bills at least one read."""
    count(FIRESTORE_READS, max(1, documents))


@contextmanager
def metered() -> Iterator[Operations]:
    """Count the operations made inside the block (and by threads it starts with its context)."""
    operations = Operations()
    token = _current.set(operations)
    try:
        yield operations
    finally:
        _current.reset(token)
