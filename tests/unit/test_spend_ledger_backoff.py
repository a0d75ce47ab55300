"""Reservations that meet on a window's lock are retried until a deadline, not a count.

Twenty identical POSTs at once meet on one window document; each round one commits,
so the last may need twenty rounds. On a loaded machine 12 tries ran out for 16 of 20
(2026-12-06: "Failed to commit transaction in 1 attempts.", each a 503).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from google.api_core.exceptions import Conflict

import niah.cloud.spend_ledger as spend_ledger

pytestmark = pytest.mark.unit


class Clock:
    """Time that passes only when the backoff sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(spend_ledger.time, "monotonic", made.monotonic)
    monkeypatch.setattr(spend_ledger.time, "sleep", made.sleep)
    return made


def losing(times: int, error: Exception) -> tuple[list[int], Callable[[], str]]:
    tries: list[int] = []

    def attempt() -> str:
        tries.append(1)
        if len(tries) <= times:
            raise error
        return "reserved"

    return tries, attempt


def test_twenty_five_lost_locks_in_a_row_still_reserve(clock: Clock) -> None:
    tries, attempt = losing(25, ValueError("Failed to commit transaction in 1 attempts."))
    assert spend_ledger._with_backoff(attempt) == "reserved"
    assert len(tries) == 26 and clock.now < spend_ledger.RESERVE_SECONDS


def test_a_lock_lost_until_the_deadline_is_raised(clock: Clock) -> None:
    tries, attempt = losing(10**6, Conflict("Transaction lock timeout"))
    with pytest.raises(Conflict):
        spend_ledger._with_backoff(attempt)
    assert clock.now <= spend_ledger.RESERVE_SECONDS
    assert len(tries) > 20


def test_another_error_is_raised_at_once(clock: Clock) -> None:
    tries, attempt = losing(1, ValueError("not a lock"))
    with pytest.raises(ValueError, match="not a lock"):
        spend_ledger._with_backoff(attempt)
    assert len(tries) == 1 and clock.now == 0.0
