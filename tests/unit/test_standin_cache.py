"""The stand-in's implicit cache: the longest shared prefix, found without a scan.

The lookup bisects the prompts answered in the window and compares with the two
neighbours; these tests hold it to the scan it replaced (every prompt compared) and to
the window, and the call counter that replaced counting the request log.
"""

from __future__ import annotations

import random

from niah_devtools.standin_cache import PromptCache, _common_prefix


def _scan(data: bytes, prompts: list[bytes]) -> int:
    """The old way: every prompt compared."""
    return max((_common_prefix(data, p) for p in prompts), default=0)


def test_the_lookup_finds_what_comparing_every_prompt_finds() -> None:
    chance = random.Random(53)
    head = b"the haystack's shared start " * 20
    prompts: list[bytes] = []
    cache = PromptCache()
    for _ in range(400):
        # Prompts that share long heads and part at random places, as a grid's do.
        cut = chance.randrange(len(head))
        tail = bytes(chance.choice(b"abcd") for _ in range(chance.randrange(1, 30)))
        prompt = head[:cut] + tail
        assert cache.longest_prefix(prompt, window=300.0, now=1.0) == _scan(prompt, prompts)
        prompts.append(prompt)
        cache.add(prompt, at=1.0)
    assert len(cache) == 400
    assert cache.longest_prefix(head, window=300.0, now=1.0) == _scan(head, prompts)
    assert cache.longest_prefix(b"", window=300.0, now=1.0) == 0


def test_prompts_leave_the_cache_when_the_window_has_passed() -> None:
    cache = PromptCache()
    cache.add(b"an old prompt, answered long ago", at=0.0)
    cache.add(b"an older one? no, a newer prompt", at=200.0)
    assert cache.longest_prefix(b"an old prompt", window=300.0, now=250.0) == 13
    # At 301 s the first has left; the second still shares "an old".
    assert cache.longest_prefix(b"an old prompt", window=300.0, now=301.0) == 6
    assert len(cache) == 1
    assert cache.longest_prefix(b"an old prompt", window=300.0, now=501.0) == 0
    assert len(cache) == 0


def test_an_empty_cache_shares_nothing() -> None:
    assert PromptCache().longest_prefix(b"anything", window=300.0) == 0
