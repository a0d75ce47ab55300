"""The grid a run request expands to: its cells, and how lengths and depths are spaced.

The spacing follows the NIAH harness (a linspace of lengths; depths linear or sigmoid),
so a user's grid carries over; a cell's ID is derived from its point, deterministically.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator

from niah.core.request.request_options import MAX_CONTEXT_LENGTH, MAX_INTERVALS

# Depths carry this many decimals (the harness's sigmoid precision), in cell IDs too.
DEPTH_DECIMALS = 3


@dataclass(frozen=True)
class Cell:
    """One sample of a grid point: a context length in tokens, a depth in percent.

    ``variant``: the cell's values of the run's extra axes (``niah.core.request.axes``),
    empty in a run without any.
    """

    context_length: int
    depth_percent: float
    sample: int = 0
    variant: str = ""

    @property
    def cell_id(self) -> str:
        """A sortable, deterministic document ID, e.g. ``L00004000-D050000`` for 4000 / 50 %.

        Depths carry three decimals (the harness's sigmoid precision), so distinct
        grid points never share an ID. Samples after the first add ``-S001``...; the
        first keeps the grid point's ID, as a one-sample run has always stored it. A
        variant adds ``-Xd4.shuffled``; a run without axes keeps the IDs it always had.
        """
        point = f"L{self.context_length:08d}-D{round(self.depth_percent * 1000):06d}"
        sampled = f"{point}-S{self.sample:03d}" if self.sample else point
        return f"{sampled}-X{self.variant}" if self.variant else sampled


def primer_cell(cells: Sequence[Cell]) -> Cell | None:
    """The cell cache-aware dispatch sends first (the dispatcher's and the estimate's pick).

    The deepest needle at the longest length: every other cell's prefix is a prefix of
    its. None for a one-cell run.
    """
    if len(cells) < 2:
        return None
    return max(
        cells, key=lambda c: (c.context_length * c.depth_percent, c.context_length, -c.sample)
    )


def linspace_ints(low: int, high: int, count: int) -> list[int]:
    """``np.round(np.linspace(low, high, count)).astype(int)``, deduplicated, sorted."""
    if count == 1:
        return [low]
    values = {round(low + (high - low) * i / (count - 1)) for i in range(count)}
    return sorted(int(v) for v in values)


def logistic(x: float, top: float = 100, midpoint: float = 50, steepness: float = 0.1) -> float:
    """The harness's sigmoid spacing of depths: dense near the ends, sparse in the middle."""
    if x in (0, 100):
        return float(x)
    return round(top / (1 + math.exp(-steepness * (x - midpoint))), 3)


def spread_depths(
    low: float, high: float, count: int, interval_type: Literal["linear", "sigmoid"]
) -> list[float]:
    """``count`` depths from ``low`` to ``high`` percent, linear or sigmoid as in the harness."""
    points = [low + (high - low) * i / (count - 1) for i in range(count)] if count > 1 else [low]
    if interval_type == "sigmoid":
        return sorted({round(logistic(x), DEPTH_DECIMALS) for x in points})
    return sorted({float(round(x)) for x in points})


def _lengths(value: list[int]) -> list[int]:
    if not value:
        raise ValueError("give at least one context length, or leave it out")
    if len(value) > MAX_INTERVALS:
        raise ValueError(f"at most {MAX_INTERVALS} context lengths")
    for length in value:
        if not 1 <= length <= MAX_CONTEXT_LENGTH:
            raise ValueError(
                f"each context length must be between 1 and {MAX_CONTEXT_LENGTH} tokens"
            )
    return sorted(set(value))


def _depths(value: list[float]) -> list[float]:
    if not value:
        raise ValueError("give at least one depth, or leave it out")
    if len(value) > MAX_INTERVALS:
        raise ValueError(f"at most {MAX_INTERVALS} depths")
    for depth in value:
        if not (math.isfinite(depth) and 0 <= depth <= 100):
            raise ValueError("each depth must be a percent between 0 and 100")
    return sorted({round(depth, DEPTH_DECIMALS) for depth in value})


# The request's explicit lengths and depths: checked, sorted, each once.
Lengths = Annotated[list[int], AfterValidator(_lengths)]
Depths = Annotated[list[float], AfterValidator(_depths)]


def sample_rng(seed: int, cell: Cell, task: str) -> random.Random:
    """A generator seeded by the run's ``seed``, the task, the grid point and the sample.

    With the cells, the one way a sample is seeded: a task draws its sample from it, and
    admission draws what the task will draw (GraphWalks' planted question) to size it.
    """
    key = f"{seed}:{task}:{cell.context_length}:{cell.depth_percent:.3f}:{cell.sample}"
    return random.Random(hashlib.sha256(key.encode()).digest())
