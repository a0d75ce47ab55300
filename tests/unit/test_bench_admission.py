"""The benchmark's stack admits every grid it sends, at its documented size (issue 51).

``scripts/bench.sh`` stopped in its stack part: the 121-cell grid to 1M tokens may cost
$544 at Gemini's prices, and the stack ran with the default $300 daily ceiling. The
smoke run sends a 4-cell grid, so nothing caught it. Here the stack part's own requests
(``bench_pipeline``'s, at the size ``bench.sh`` runs) go through the dispatcher's
admission in-process, in the order the part sends them and into one day's window, under
the settings the benchmark's stacks run with. The full run takes minutes on the real
stack (docs/benchmarks.md gives the figure), too long for the suite.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from niah.errors import SpendRefusedError
from niah.settings import get_settings
from tests import REPO
from tests.fakes import MemoryBlobs
from tests.unit.test_spend_limits import World

sys.path.insert(0, str(REPO / "scripts"))


def published(world: World, payload: dict[str, Any]) -> int:
    """The cells the dispatcher publishes for ``payload`` (a refusal raises)."""
    return world.post(payload, caller="bench@niah.localhost").published


@pytest.fixture
def bench_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The settings every benchmark stack's functions get (``bench_stack``'s)."""
    from bench_pipeline import WORKER_ENV

    for name, value in WORKER_ENV.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield WORKER_ENV
    get_settings.cache_clear()


def stack_part_requests() -> list[dict[str, Any]]:
    """What the stack part sends, in order, at its documented (default) size."""
    from bench_pipeline import BIG_SIDE, WARM_UP, big_grid, overhead_grid

    assert BIG_SIDE == 11  # docs/benchmarks.md: "a 121-cell (11 x 11) grid up to 1M tokens"
    return [WARM_UP, big_grid(), overhead_grid()]


def test_the_stack_part_at_its_documented_size_is_admitted_on_the_benchmarks_stack(
    bench_settings: dict[str, str], essay_blobs: MemoryBlobs
) -> None:
    world = World(essay_blobs)
    assert [published(world, request) for request in stack_part_requests()] == [1, 121, 25]
    # Held at Gemini's list prices though the stand-in bills nothing: all three together
    # fit the ceilings the benchmark sets, the day's and the month's.
    held = sum(run["reserved"] for run in world.ledger.runs.values())
    assert held > 300  # over the default daily ceiling: why the benchmark sets its own
    assert held <= get_settings().daily_spend_ceiling_usd
    assert held <= get_settings().monthly_spend_ceiling_usd


def test_the_service_keeps_its_own_ceiling_the_benchmark_raises_only_its_stacks(
    essay_blobs: MemoryBlobs,
) -> None:
    """Without the benchmark's settings the same grid is refused, as the issue saw it."""
    get_settings.cache_clear()
    assert get_settings().daily_spend_ceiling_usd == 300.0
    world = World(essay_blobs)
    warm_up, big, _ = stack_part_requests()
    published(world, warm_up)
    with pytest.raises(SpendRefusedError, match=r"of the \$300\.00 ceiling for today"):
        published(world, big)
