"""A certify run's worst case: what its budget can cost, every call in full, every retry.

A certify run's rounds are chosen by its answers, so admission cannot list its cells.
Its planner stops when the budget is spent (``niah.core.results.certify``): prompt
dollars (``budget_usd``, one prompt a scored sample), the local model's estimated model
seconds (``budget_seconds``) or prompt tokens (``max_tokens``),
and gives a length at most ``most_samples`` scored samples; the run's cells are capped
(``max_cells``). A sample whose worst case (``niah.core.money.spend``:
``calls_per_cell`` calls, whole output budgets, the judge) is ``w(n)`` and which the
budget counts as ``c(n)``: the most the scored samples can cost is the fractional
knapsack, lengths taken by ``w(n) / c(n)``, dearest first, each up to its cap, until
the budget is spent. Each budget (dollars, seconds, tokens, cells) gives a bound; admission holds
the least.

Samples the budget does not count (an unscored sample is replaced by a new one) can take
a run past it; each round then holds the rest before it is published
(``niah.service.runs.certify_rounds``), so the run's published cells never cost more than
what it holds.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import Any

from niah.core.money.spend import WorstCase, worst_case
from niah.core.prompts.answer_budget import CallBudget
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.certify_run import most_samples, plan_record
from niah.settings import get_settings


def run_worst_case(
    spec: RunRequest, cells: Sequence[Cell], budget: CallBudget, *, now: dt.datetime
) -> WorstCase:
    """What admitting ``cells`` holds: a certify run's whole budget, else the cells'.

    Each cell asked the worker's retry allowance of times (``NIAH_MAX_CELL_FAILURES``).
    The dispatcher holds it (``niah.service.runs.admission``); ``niah run --estimate`` says it.
    """
    settings = get_settings()
    calls = settings.max_cell_failures
    if spec.is_certify():
        plan = plan_record(spec, settings.max_cells_per_run)
        return certify_worst_case(spec, plan, budget, calls_per_cell=calls, when=now)
    return worst_case(spec, cells, budget, calls_per_cell=calls, when=now)


def certify_worst_case(
    spec: RunRequest,
    plan: Mapping[str, Any],
    budget: CallBudget,
    *,
    calls_per_cell: int,
    when: dt.datetime | None = None,
) -> WorstCase:
    """The most a certify run under ``plan`` (``plan_record``) can cost before a top-up."""
    per_length = {
        n: worst_case(spec, [Cell(n, 0.0)], budget, calls_per_cell=calls_per_cell, when=when)
        for n in spec.lengths()
    }
    some = next(iter(per_length.values()))
    if any(w.usd is None for w in per_length.values()):
        return some  # unpriced: admission refuses or holds nothing, as for a grid
    usd = {n: float(w.usd or 0.0) for n, w in per_length.items()}
    most = most_samples(spec, plan)
    bounds: list[tuple[float, int]] = []  # (dollars, cells) each budget allows at most
    sample_usd = plan.get("sample_usd")
    if plan.get("budget_usd") is not None and sample_usd:
        cost = {n: float(sample_usd[str(n)]) for n in usd}
        bounds.append(_knapsack(usd, cost, most, float(plan["budget_usd"])))
    sample_seconds = plan.get("sample_seconds")
    if plan.get("budget_seconds") is not None and sample_seconds:
        seconds = {n: float(sample_seconds[str(n)]) for n in usd}
        bounds.append(_knapsack(usd, seconds, most, float(plan["budget_seconds"])))
    if plan.get("max_tokens"):
        bounds.append(_knapsack(usd, {n: float(n) for n in usd}, most, plan["max_tokens"]))
    if plan.get("max_cells"):
        dearest = max(usd.values())
        bounds.append((int(plan["max_cells"]) * dearest, int(plan["max_cells"])))
    if not bounds:  # admission refuses a plan without a budget: never here
        raise ValueError("a certify plan with no budget, no token cap and no cell cap")
    total, cells = min(bounds)
    return WorstCase(
        total,
        cells,
        calls_per_cell,
        max(spec.lengths()) * cells * calls_per_cell,  # at most: every sample the longest
        some.output_tokens * cells,  # one cell's, as every length's call budget is the same
        some.judge_usd * cells,
    )


def _knapsack(
    usd: dict[int, float], cost: dict[int, float], most: dict[int, int], budget: float
) -> tuple[float, int]:
    """The most ``usd`` samples costing ``cost`` can add up to within ``budget``, and how many.

    Fractional, so an upper bound of any whole choice: the dearest per unit of budget
    first, each length up to ``most`` samples.
    """
    total, cells, left = 0.0, 0, budget
    for n in sorted(usd, key=lambda n: usd[n] / cost[n], reverse=True):
        take = min(float(most[n]), left / cost[n])
        total += take * usd[n]
        cells += math.ceil(take)
        left -= take * cost[n]
        if left <= 0:
            break
    return total, cells
