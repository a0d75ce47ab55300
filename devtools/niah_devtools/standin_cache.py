"""The stand-in's model of Vertex's implicit cache: which prefix of a prompt it serves.

Apart from ``niah_devtools.standin`` (the HTTP server) so that module stays one job;
prompts are counted by ``niah_devtools.standin_tokens`` (countTokens, promptTokenCount,
the input limit and the cached share all use ``modelled_prompt_tokens``).
"""

from __future__ import annotations

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
    now = time.time()
    with state.lock:
        window = float(config["cache_window_seconds"])
        state.cache = [(t, p) for t, p in state.cache if now - t <= window]
        answered = [p for _, p in state.cache]
    data = prompt.encode()
    shared = max((_common_prefix(data, p) for p in answered), default=0)
    head = data[:shared].decode(errors="ignore")  # a cut inside a character drops it
    tokens = modelled_prompt_tokens(config, head)
    minimum = config["cache_min_tokens"]
    return tokens if tokens >= int(minimum or cache_min_tokens(model)) else 0
