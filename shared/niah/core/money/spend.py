"""A run's worst-case cost, the spend windows it counts in, and budget alerts.

The worst case is what admission reserves against the spend ceilings
(``niah.service.runs.admission``), so it must bound the bill, not guess it. Per cell:

- **The model's calls**: ``calls_per_cell`` of them (the worker's retry allowance,
  ``NIAH_MAX_CELL_FAILURES``: a cell is asked at most that many times before it is
  stored failed, and a failed call may still be billed, e.g. one cut off by a timeout),
  each at the cell's ``context_length`` prompt tokens (a generated prompt is built to
  ``context_length - final_context_length_buffer``; a published MRCR v2 row is Google's
  count) and the call's whole output budget (answer plus thinking room, or the run's
  ``max_output_tokens``), none of it cached, at online rates (a batch run's failed lines
  fall back to online calls), at today's prices, the run's pricing tier (``tier``:
  Flex or Priority PayGo, ``niah.catalog.tiers``) and the long-context tier where the
  prompt reaches it. A batch run's cell adds its batch line (at the batch rate, in case
  a line that failed is billed): the line, then up to every online call of its fallback.
- **The judge** (scorer ``judge`` or ``both``): one call per cell (a failed judge is not
  retried; an answer is judged once), its prompt the judge's template and rubric around
  the cell's own question and reference needle (their UTF-8 bytes, each at most one
  token) and the whole reply, which may take the call's whole ``max_output_tokens``
  (a reply cut off there is not judged, but one a token short is); its whole output
  budget.

Not included: calls of a worker that died mid-call (each lapsed lease may have paid one;
the worker gives the cell up after ``NIAH_MAX_CELL_FAILURES`` lapses), the SDK's own
retries of 429 and 5xx replies (unbilled: an error reply has no usage), the few tokens a
turn the API adds to an MRCR conversation, and countTokens calls (free).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from niah.catalog.prices import prices_for
from niah.core.money.pricing import call_cost
from niah.core.prompts.answer_budget import CallBudget, least_thinking_budget
from niah.core.prompts.needles import needle_for
from niah.core.prompts.texts import JUDGE_MAX_OUTPUT_TOKENS, judge_prompt
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest


@dataclass(frozen=True)
class WorstCase:
    """A run's most possible cost in USD, and what it rests on (None: a model unpriced)."""

    usd: float | None
    cells: int
    calls_per_cell: int
    prompt_tokens: int
    output_tokens: int
    judge_usd: float
    unpriced: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The figures a refusal or the run document states."""
        return {
            "usd": None if self.usd is None else round(self.usd, 6),
            "cells": self.cells,
            "calls_per_cell": self.calls_per_cell,
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "judge_usd": round(self.judge_usd, 6),
        }


def worst_case(
    spec: RunRequest,
    cells: Sequence[Cell],
    budget: CallBudget,
    *,
    calls_per_cell: int,
    when: dt.datetime | None = None,
) -> WorstCase:
    """The most ``cells`` of ``spec`` can cost: each call in full, ``calls_per_cell`` times."""
    prices = prices_for(spec.model_name, when, entry=spec.catalog_model())
    tier = spec.call_tier()
    output = budget.max_output_tokens
    usd = 0.0
    for cell in cells:
        usd += call_cost(prices, cell.context_length, output, tier=tier).usd * calls_per_cell
        if spec.is_batch():  # its batch line first, then up to every call online
            usd += call_cost(prices, cell.context_length, output, batch=True).usd
    judge_name = spec.evaluator_model_name if spec.scorer_name() in ("judge", "both") else None
    judge_usd = 0.0
    judge_prices = prices_for(judge_name, when) if judge_name else None
    if judge_name and judge_prices is not None:
        judge_output = least_thinking_budget(judge_name, JUDGE_MAX_OUTPUT_TOKENS).max_output_tokens
        judge_usd = sum(
            call_cost(judge_prices, judge_prompt_tokens(spec, cell, budget), judge_output).usd
            for cell in cells
        )
    unpriced = tuple(
        name
        for name, found in ((spec.model_name, prices), (judge_name, judge_prices))
        if name and found is None
    )
    return WorstCase(
        None if unpriced else usd + judge_usd,
        len(cells),
        calls_per_cell,
        sum(cell.context_length for cell in cells) * calls_per_cell,
        output * len(cells) * calls_per_cell,
        judge_usd,
        unpriced,
    )


def judged_texts(spec: RunRequest, cell: Cell) -> tuple[str, str]:
    """The question and the reference needle the judge is shown for ``cell``.

    The judge grades task ``single`` (the cell's needle) and the user's own needles where
    a task takes them (``retrieval_question``; the needles, one a line, as the sample's
    ``needle`` joins them).
    """
    own = spec.task_options.own_needles()
    if own is not None:
        return spec.retrieval_question, "\n".join(text.strip() for text in own)
    needle = needle_for(spec, cell)
    return needle.question, needle.text


def judge_prompt_tokens(spec: RunRequest, cell: Cell, budget: CallBudget) -> int:
    """The most tokens the judge's prompt for ``cell`` may take.

    Its template, rubric, question and reference as UTF-8 bytes (each at most one token),
    and the whole reply: at most the call's ``max_output_tokens``.
    """
    question, reference = judged_texts(spec, cell)
    empty = judge_prompt(question=question, reference=reference, answer="")
    return len(empty.encode()) + budget.max_output_tokens


def day_window(now: dt.datetime) -> str:
    """The UTC day's window, e.g. ``day-2026-11-27``."""
    return f"day-{now.astimezone(dt.UTC):%Y-%m-%d}"


def month_window(now: dt.datetime) -> str:
    """The UTC month's window, e.g. ``month-2026-11``."""
    return f"month-{now.astimezone(dt.UTC):%Y-%m}"


def caller_window(now: dt.datetime, caller: str) -> str:
    """One caller's UTC day, e.g. ``caller-2026-11-27-ada@example.com``.

    Firestore document IDs may hold anything but ``/``; an e-mail address has none.
    """
    return f"caller-{now.astimezone(dt.UTC):%Y-%m-%d}-{caller.replace('/', '_')}"


@dataclass(frozen=True)
class BudgetAlert:
    """What a Cloud Billing budget notification says, and whether it trips the switch."""

    cost_usd: float
    budget_usd: float
    currency: str
    budget_name: str
    trips: bool


def read_budget_alert(data: Any, *, trip_share: float) -> BudgetAlert | None:
    """A budget notification's figures; None if it holds none (it is then ignored).

    Google's format (cloud.google.com/billing/docs/how-to/budgets-programmatic-
    notifications, "Notification format", read 2026-11-27): a JSON object with
    ``budgetDisplayName``, ``costAmount``, ``costIntervalStart``, ``budgetAmount``,
    ``budgetAmountType``, ``currencyCode`` and, once a threshold rule is passed,
    ``alertThresholdExceeded`` (``forecastThresholdExceeded`` for a forecast). Sent
    several times a day whatever the thresholds. Only the two amounts are needed: the
    switch trips when ``costAmount >= trip_share x budgetAmount`` (actual spend, not a
    forecast); every other field, and any Google adds, is ignored.
    """
    if not isinstance(data, dict):
        return None
    cost, budget = data.get("costAmount"), data.get("budgetAmount")
    if not _amount(cost) or not _amount(budget):
        return None
    assert isinstance(cost, int | float) and isinstance(budget, int | float)
    return BudgetAlert(
        float(cost),
        float(budget),
        str(data.get("currencyCode", "")),
        str(data.get("budgetDisplayName", "")),
        trips=budget > 0 and cost >= trip_share * budget,
    )


def _amount(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
