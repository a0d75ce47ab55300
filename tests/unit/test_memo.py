"""The one cache helper: made once per key under concurrency; nothing kept on failure."""

from __future__ import annotations

import threading
import time

import pytest

from niah.memo import ProcessCache


def test_concurrent_callers_share_one_make() -> None:
    cache: ProcessCache[str, object] = ProcessCache()
    made: list[object] = []

    def make() -> object:
        time.sleep(0.05)  # long enough that every thread arrives while it runs
        made.append(object())
        return made[-1]

    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(cache.get_or_make("k", make)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1
    assert all(result is made[0] for result in results)


def test_a_slow_key_does_not_hold_up_another() -> None:
    cache: ProcessCache[str, str] = ProcessCache()
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(30)
        return "slow"

    thread = threading.Thread(target=lambda: cache.get_or_make("slow", slow))
    thread.start()
    assert started.wait(5)
    fast: list[str] = []
    other = threading.Thread(target=lambda: fast.append(cache.get_or_make("fast", lambda: "f")))
    other.start()
    other.join(timeout=5)
    # Made while "slow" is still making (a lock held around make() would block it).
    assert fast == ["f"] and thread.is_alive()
    release.set()
    thread.join()


def test_none_and_errors_are_not_kept() -> None:
    cache: ProcessCache[str, str] = ProcessCache()
    assert cache.get("run", lambda: None) is None
    assert cache.get("run", lambda: "found") == "found"  # tried again, then kept
    assert cache.get("run", lambda: "other") == "found"
    with pytest.raises(RuntimeError):
        cache.get("boom", lambda: (_ for _ in ()).throw(RuntimeError("down")))
    assert cache.get_or_make("boom", lambda: "recovered") == "recovered"
    cache.clear()
    assert cache.get_or_make("run", lambda: "fresh") == "fresh"
