"""The stand-in's model of Vertex's implicit cache: which prefix of a prompt it serves.

Apart from ``niah_devtools.standin`` (the HTTP server) so that module stays one job;
prompts are counted by ``niah_devtools.standin_tokens`` (countTokens, promptTokenCount,
the input limit and the cached share all use ``modelled_prompt_tokens``).
"""

from __future__ import annotations

import bisect
import collections
import threading
import time
from typing import Any

from niah_devtools.standin_tiers import cache_min_tokens
from niah_devtools.standin_tokens import modelled_prompt_tokens


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two long byte strings, by halving.

    Each step is one C-speed copy and compare (a megabyte prompt takes milliseconds;
    a memoryview compare, element by element, was 60 times slower).
    """
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a.startswith(b[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


class PromptCache:
    """The prompts answered within the window, kept so a lookup costs O(log n), not O(n).

    Of a set of byte strings, the one sharing the longest prefix with a prompt is one of
    the prompt's two neighbours in sorted order, so a lookup bisects a sorted list and
    compares twice. Before, every request compared its prompt with every prompt answered
    in the last 300 s: at 10,000 samples (about 8,000 in the window) the stand-in's
    replies went from 10 to 44 ms as the run went on, and the countTokens calls that
    waited behind them counted as the worker's overhead (issue 53).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arrived: collections.deque[tuple[float, bytes]] = collections.deque()
        self._sorted: list[bytes] = []

    def add(self, prompt: bytes, at: float | None = None) -> None:
        """``prompt`` answered at ``at`` (now if None); arrivals come in time order."""
        with self._lock:
            self._arrived.append((time.time() if at is None else at, prompt))
            bisect.insort(self._sorted, prompt)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sorted)

    def longest_prefix(self, data: bytes, window: float, now: float | None = None) -> int:
        """Bytes of ``data`` shared with a prompt answered within ``window`` seconds of now."""
        now = time.time() if now is None else now
        with self._lock:
            while self._arrived and now - self._arrived[0][0] > window:
                _, old = self._arrived.popleft()
                del self._sorted[bisect.bisect_left(self._sorted, old)]
            at = bisect.bisect_left(self._sorted, data)
            neighbours = self._sorted[max(0, at - 1) : at + 1]
        return max((_common_prefix(data, p) for p in neighbours), default=0)


def _cached_prefix_tokens(state: Any, prompt: str, model: str = "") -> int:
    """Tokens of ``prompt`` the modelled implicit cache serves, looked up on arrival.

    Vertex AI's context-cache overview (cloud.google.com/vertex-ai/generative-ai/docs/
    context-cache/context-cache-overview, read 2026-11-26): implicit caching is on by
    default, bills cache hits at a discount, needs at least 2,048 tokens (Gemini 4
    Argon: 6,144, its guide; ``standin_tiers.cache_min_tokens``, the stand-in's own), and hits
    when requests with a similar prefix come "in a short amount of time". The model:
    the longest prefix shared with a prompt already answered within the window (the
    window's length is not published; 300 s here), counted if at least the minimum.
    Optimistic: Vertex does not promise a hit.
    """
    config = state.config
    if not config["implicit_cache"]:
        return min(int(config["cached_tokens"]), len(prompt))
    data = prompt.encode()
    shared = state.cache.longest_prefix(data, float(config["cache_window_seconds"]))
    head = data[:shared].decode(errors="ignore")  # a cut inside a character drops it
    tokens = modelled_prompt_tokens(config, head)
    minimum = config["cache_min_tokens"]
    return tokens if tokens >= int(minimum or cache_min_tokens(model)) else 0
