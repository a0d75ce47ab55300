"""One small cache for what a process builds once and then shares between threads.

A worker instance answers several cells at once; the model, the tokenizer, a
tokenized haystack and a run's spec are each slow to make and never change, so each
is made once per key and shared.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ProcessCache(Generic[K, V]):
    """A thread-safe map whose values are made once per key, for the process's life.

    Two threads asking for the same missing key wait for one ``make``; threads asking
    for other keys are not held up by it. A ``make`` that returns None (nothing to
    keep, e.g. a run that does not exist yet) or raises stores nothing, so the next
    call tries again.
    """

    def __init__(self, max_entries: int | None = None) -> None:
        # ``max_entries``: keep at most this many, the oldest made forgotten first (for
        # values a request can multiply, such as a haystack per seed).
        self._lock = threading.Lock()
        self._values: dict[K, V] = {}
        self._making: dict[K, threading.Lock] = {}
        self._max = max_entries

    def get(self, key: K, make: Callable[[], V | None]) -> V | None:
        """The value for ``key``, made by ``make`` if this process has none yet."""
        with self._lock:
            if key in self._values:
                return self._values[key]
            key_lock = self._making.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._values:
                    return self._values[key]
            value = make()
            if value is not None:
                with self._lock:
                    self._values[key] = value
                    while self._max is not None and len(self._values) > self._max:
                        oldest = next(iter(self._values))
                        del self._values[oldest]
                        self._making.pop(oldest, None)
            return value

    def known(self, key: K) -> V | None:
        """The value for ``key`` if this process has made it; None otherwise."""
        with self._lock:
            return self._values.get(key)

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """Like ``get`` for a ``make`` that always returns a value."""
        value = self.get(key, make)
        if value is None:
            raise TypeError("make() returned None; use get() for values that may be absent")
        return value

    def clear(self) -> None:
        """Forget every value (tests and benchmarks start cold with it)."""
        with self._lock:
            self._values.clear()
            self._making.clear()
