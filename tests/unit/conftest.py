"""Unit tests dispatch every cell at once unless a test asks for cache-aware order."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from niah.settings import get_settings


@pytest.fixture(autouse=True)
def naive_dispatch(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("NIAH_DISPATCH_ORDER", "naive")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def cold_fit_starts() -> None:
    """Each test's fitted prompts start cold, as a new worker's do.

    FIT_STARTS is per process: another test's stand-in may count otherwise, and a test
    may count the probe's calls.
    """
    from niah.service.cells.prompt import FIT_STARTS

    FIT_STARTS.clear()


@pytest.fixture
def short_leases(monkeypatch: pytest.MonkeyPatch) -> float:
    """A one-second cell lease, renewed every third of a second.

    ``naive_dispatch`` clears the settings cache again after the test.
    """
    monkeypatch.setenv("NIAH_CELL_LEASE_SECONDS", "1")
    get_settings.cache_clear()
    return 1.0
