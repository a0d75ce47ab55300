"""A certify run's cells and certificate: the planner (``certify``) applied to a run.

A certify run keeps on its document how many samples each candidate length has been
given (``certify.samples``); its cells follow from that alone. Sample ``k`` of a length
goes to the grid's depths in turn (from an offset seeded by the run and the length),
so every depth is asked about equally and the mean over samples is the mean over
depths; its cell is the grid point's sample ``k // depths``, named as any grid cell.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from niah.core.money.pricing import cost_of
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.certify import CertifyPlan, IntervalOf, Progress, plan_progress

# The grid a certification is measured against: every length and depth, 5 samples each.
GRID_SAMPLES = 5
# The default budget: this share of that grid's prompt tokens.
BUDGET_SHARE = 0.25


def grid_tokens(spec: RunRequest) -> int:
    """The prompt tokens of the run's grid with ``GRID_SAMPLES`` samples a point."""
    return GRID_SAMPLES * len(spec.depths()) * sum(spec.lengths())


def sample_usd(spec: RunRequest) -> dict[int, float] | None:
    """One prompt's model cost at each length; None for a model the catalog does not price.

    The catalog's price, its long-context tier included. A free model (the local one)
    is budgeted in tokens, as an unpriced one.
    """
    priced = {n: cost_of(spec.model_name, n, 0) for n in spec.lengths()}
    if not all(cost.priced and cost.usd > 0 for cost in priced.values()):
        return None
    return {n: cost.usd for n, cost in priced.items()}


def grid_usd(spec: RunRequest) -> float | None:
    """The prompts' model cost of the grid with ``GRID_SAMPLES`` a point (None: unpriced)."""
    usd = sample_usd(spec)
    return None if usd is None else GRID_SAMPLES * len(spec.depths()) * sum(usd.values())


def certify_plan(spec: RunRequest, max_samples_total: int | None = None) -> CertifyPlan:
    """The planner's settings for a certify run: its lengths, threshold and budgets.

    The budget is in dollars of model cost (the prompts') where the catalog prices the
    model: ``certify_max_usd``, else a quarter of the grid's; for an unpriced model (the
    local one) in prompt tokens, a quarter of the grid's. ``certify_max_tokens`` caps
    the prompt tokens besides.
    """
    grid = grid_usd(spec)
    if grid is not None:
        budget = spec.certify_max_usd or BUDGET_SHARE * grid
        tokens = spec.certify_max_tokens
    else:
        budget = None
        tokens = spec.certify_max_tokens or int(BUDGET_SHARE * grid_tokens(spec))
    return CertifyPlan(
        lengths=tuple(spec.lengths()),
        threshold=spec.certify_threshold,
        budget=budget,
        max_total_samples=max_samples_total,
        max_tokens=tokens,
    )


def sample_cost(spec: RunRequest) -> Callable[[int], float]:
    """What the budget counts for one sample at a length: its dollars, or its tokens."""
    usd = sample_usd(spec)
    return float if usd is None else usd.__getitem__


def certify_cells(spec: RunRequest, samples: Mapping[int, int]) -> list[Cell]:
    """The cells of ``samples[length]`` samples at each length, in sample order."""
    return [
        cell for length in sorted(samples) for cell in length_cells(spec, length, samples[length])
    ]


def length_cells(spec: RunRequest, length: int, count: int) -> list[Cell]:
    """A length's first ``count`` samples: depths in turn from a seeded offset."""
    depths = spec.depths()
    seed = f"{spec.seed}:{length}".encode()
    offset = int.from_bytes(hashlib.sha256(seed).digest()[:4], "big") % len(depths)
    return [
        Cell(length, depths[(k + offset) % len(depths)], k // len(depths)) for k in range(count)
    ]


def certify_samples_per_point(spec: RunRequest) -> int:
    """The most samples a certify run can ask of one (length, depth) point."""
    depths = len(spec.depths())
    return -(-certify_plan(spec).max_samples // depths)


def stored_samples(run: Mapping[str, Any]) -> dict[int, int]:
    """The samples per length a certify run's document says it has asked for."""
    kept = (run.get("certify") or {}).get("samples") or {}
    return {int(length): int(count) for length, count in kept.items()}


def certify_progress(
    spec: RunRequest,
    run: Mapping[str, Any],
    cells: list[dict[str, Any]],
    *,
    max_cells: int | None,
    interval_of: IntervalOf,
) -> tuple[Progress, dict[int, int]]:
    """Where the run's certification stands, and the samples per length it then asks for.

    Each length's scores in sample order, its unscored samples (failed, truncated) left
    out: the next round asks for as many more cells as it wants scores, so a failed
    call is replaced by a new sample, never counted as right or wrong.
    """
    samples = stored_samples(run)
    by_id = {str(c["cell_id"]): c for c in cells}
    scores: dict[int, list[float]] = {}
    for length, count in samples.items():
        stored = [by_id.get(cell.cell_id) for cell in length_cells(spec, length, count)]
        scores[length] = [
            float(c["task_score"]) for c in stored if c and c.get("task_score") is not None
        ]
    progress = plan_progress(certify_plan(spec, max_cells), scores, interval_of, sample_cost(spec))
    if progress.next_round is not None:
        wanted = progress.next_round
        scored = len(scores.get(wanted.length, []))
        asked = samples.get(wanted.length, 0) + (wanted.samples - scored)
        samples = samples | {wanted.length: asked}
    return progress, samples


def first_samples(spec: RunRequest, max_cells: int | None) -> dict[int, int]:
    """A new certify run's first round: nothing is looked at, so no interval is needed."""

    def unused(scores: object, level: float) -> None:
        raise AssertionError("the first round looks at no scores")

    return certify_progress(spec, {}, [], max_cells=max_cells, interval_of=unused)[1]
