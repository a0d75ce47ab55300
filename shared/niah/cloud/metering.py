"""What the service's own work asks of Google: operations counted at the adapters.

Each adapter method counts the billable operations it makes, in Google's units:
Firestore document reads, writes and deletes (a query or a get bills at least one
read; an aggregation one read per 1,000 index entries), Pub/Sub messages and bytes
published, Cloud Storage class A (writes, listings) and class B (reads) operations.
The counts go to the ``metered()`` block around the current request (a worker's cell,
a dispatch), so each request can log what it cost; outside such a block nothing is
kept. Threads a request starts (the lease keeper) count into the same block when
started with ``contextvars.copy_context()``.

Each adapter also times its calls (``waits_on``): the seconds a request spent inside
Firestore's, Pub/Sub's and Cloud Storage's calls (the round trip and the client's own
work in it), and the worker its model's countTokens calls (``waiting_on``), so a
request's log line says where its wall time went, not only what it cost. Only the
request's own thread's calls are on its path; what the threads it started spent (a
lease renewal) is kept apart, as ``background``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

from niah.cloud.class_wrap import wrapping_public_methods

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

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

# The outside systems a request waits on (``Operations.waits`` keys), and the key of what
# the threads it started waited, off its path.
FIRESTORE = "firestore"
PUBSUB = "pubsub"
STORAGE = "storage"
# The model's token counts (Vertex's countTokens), which a fitted prompt asks per cell:
# a call to the model's service, but not the model call the benchmarks subtract.
COUNT_TOKENS = "count_tokens"
SYSTEMS = (FIRESTORE, PUBSUB, STORAGE, COUNT_TOKENS)
BACKGROUND = "background"


class Operations:
    """A request's operation counts; safe to add to from its threads."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._waits: dict[str, float] = {}
        self._lock = threading.Lock()
        # The request's own thread: only its waits are on the request's path.
        self._owner = threading.get_ident()

    def add(self, kind: str, count: int = 1) -> None:
        """Count ``count`` more operations of ``kind``."""
        with self._lock:
            self._counts[kind] += count

    def counts(self) -> dict[str, int]:
        """Every kind, zeros included, so two requests' lines compare field by field."""
        with self._lock:
            return {kind: int(self._counts.get(kind, 0)) for kind in KINDS}

    def waited(self, system: str, seconds: float) -> None:
        """``seconds`` more spent in ``system``'s calls (another thread's: ``background``)."""
        key = system if threading.get_ident() == self._owner else BACKGROUND
        with self._lock:
            self._waits[key] = self._waits.get(key, 0.0) + seconds

    def waits(self) -> dict[str, float]:
        """Seconds in each system's calls on the request's thread, and its threads' apart."""
        with self._lock:
            return {key: round(self._waits.get(key, 0.0), 4) for key in (*SYSTEMS, BACKGROUND)}


_current: ContextVar[Operations | None] = ContextVar("niah_operations", default=None)


def count(kind: str, number: int = 1) -> None:
    """Add ``number`` operations of ``kind`` to the current request's counts, if any."""
    operations = _current.get()
    if operations is not None:
        operations.add(kind, number)


def reads(documents: int) -> None:
    """A get or query that returned ``documents``: Firestore bills at least one read."""
    count(FIRESTORE_READS, max(1, documents))


# The clock the waits are read on (a test sets its own).
_clock = time.perf_counter

# A call already being timed on this thread: a public method calling another (or a
# transaction's retry) counts once, at the outermost.
_timing = threading.local()


def waits_on(system: str) -> Callable[[type[T]], type[T]]:
    """Class decorator: every public method's seconds count as waiting on ``system``.

    Two ``perf_counter`` reads a call; nothing kept outside a ``metered()`` block.
    """
    return wrapping_public_methods(lambda method: _timed(method, system))


def waiting_on(system: str, function: Callable[P, R]) -> Callable[P, R]:
    """``function``, its calls' seconds counted as waiting on ``system`` (as ``waits_on``)."""
    return _timed(function, system)


def _timed(method: Callable[P, R], system: str) -> Callable[P, R]:
    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        operations = _current.get()
        if operations is None or getattr(_timing, "active", False):
            return method(*args, **kwargs)
        _timing.active = True
        started = _clock()
        try:
            return method(*args, **kwargs)
        finally:
            operations.waited(system, _clock() - started)
            _timing.active = False

    setattr(call, "waits_on", system)  # what it is timed as (a test reads it)  # noqa: B010
    return call


@contextmanager
def metered() -> Iterator[Operations]:
    """Count the operations made inside the block (and by threads it starts with its context)."""
    operations = Operations()
    token = _current.set(operations)
    try:
        yield operations
    finally:
        _current.reset(token)
