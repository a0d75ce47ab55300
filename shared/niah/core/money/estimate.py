"""What a run will cost before it runs: prompt tokens per cell, caching, the judge, budgets.

Every figure is per call, from what the worker would send (each cell's call is
``niah.core.money.estimate_cells``'s; the warnings and notes beside the figures
``estimate_warnings``'; a batch job that ends partway ``estimate_batch``'s):

- **Prompt tokens.** A generated sample's prompt is built to exactly ``context_length -
  final_context_length_buffer`` tokens of our tokenizer (``niah.core.prompts.prompt_builder``
  lands on it or refuses the cell), so that count is exact. A conversational prompt
  (MRCR) is sent as turns, which the API counts its own way: it gets ``TURN_ALLOWANCE``
  tokens a turn on top (an allowance, not a bound: Google does not publish how it
  counts turns). A published MRCR v2 row is priced at its ``context_len``, Google's
  count. The long-context tier is decided on each cell's own count.
- **Naive**: nothing cached. **Cache-aware**: the dispatcher's primer first, then the
  rest, each sharing with it the template's head and the haystack before its first
  insertion; that prefix is billed at the cached rate when it reaches the model's
  minimum (``niah.catalog.tiers.cache_min_tokens``; the benchmark's stand-in uses the
  same), and no primer is counted where no prefix can (``cache_primer.primer_pays``).
- **The judge**: one call per cell, its prompt bounded by bytes (every byte of UTF-8
  text is at most one Gemma 3 token) plus the answer's room, its output by its budget.

Pure arithmetic: the caller hands over each cell's sample, a tokenizer if one is at
hand, and where the haystack's sentences end if it read the haystack.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from niah.catalog.prices import prices_for
from niah.catalog.tiers import cache_min_tokens
from niah.core.interfaces import Tokenizer
from niah.core.money.estimate_batch import partial_job_figures, partial_job_note
from niah.core.money.estimate_cells import TURN_ALLOWANCE as TURN_ALLOWANCE
from niah.core.money.estimate_cells import (
    CellEstimate,
    cell_estimate,
    same_haystack,
    with_cache,
    with_judge_prompt,
)
from niah.core.money.estimate_warnings import estimate_notes, estimate_warnings
from niah.core.money.pricing import Cost
from niah.core.money.tier_prices import CallTokens as CallTokens
from niah.core.money.tier_prices import price_calls as price_calls
from niah.core.money.tier_prices import tier_figures
from niah.core.prompts.answer_budget import CallBudget, call_budget, least_thinking_budget
from niah.core.prompts.sample import Sample
from niah.core.prompts.texts import JUDGE_MAX_OUTPUT_TOKENS
from niah.core.request.axes import variants
from niah.core.request.cache_primer import primer_pays
from niah.core.request.grid import Cell, primer_cell
from niah.core.request.spec import RunRequest
from niah.settings import get_settings


@dataclass(frozen=True)
class RunEstimate:
    """A run's calls, priced naively, cache-aware and with the judge's, and why to worry."""

    spec: RunRequest
    cells: list[CellEstimate]
    primer_cell_id: str | None
    budget: CallBudget
    judge_budget: CallBudget | None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def model_calls(self, *, cached: bool) -> list[CallTokens]:
        """The model's calls, with the cache-aware cached prefixes or none."""
        return [
            CallTokens(c.prompt_tokens, c.cached_tokens if cached else 0, c.max_output_tokens)
            for c in self.cells
        ]

    def judge_calls(self) -> list[CallTokens]:
        """The judge's calls, one per cell, at their most."""
        if self.judge_budget is None:
            return []
        output = self.judge_budget.max_output_tokens
        return [CallTokens(c.judge_prompt_tokens, 0, output) for c in self.cells]


def estimate_run(
    spec: RunRequest,
    cells: Sequence[Cell],
    samples: Sequence[Sample],
    *,
    default_template: str,
    tokenizer: Tokenizer | None = None,
    sentence_start: Callable[[int], int] | None = None,
) -> RunEstimate:
    """Every call of the run, at its most, and the cached prefixes cache-aware dispatch gets.

    ``tokenizer`` counts the template's head and the insertions (without it their UTF-8
    bytes bound them, which only makes the cached prefixes shorter); ``sentence_start``
    (the haystack's ``sentence_start_at_or_before``) moves each insertion back to its
    sentence end as the builder does (without it the prefix runs to the nominal depth).
    """
    budget = call_budget(spec, max((s.answer_tokens for s in samples), default=0))
    judged = spec.scorer_name() in ("judge", "both") and spec.evaluator_model_name
    judge_budget = (
        least_thinking_budget(spec.evaluator_model_name, JUDGE_MAX_OUTPUT_TOKENS)
        if judged and spec.evaluator_model_name
        else None
    )
    estimates = [
        cell_estimate(spec, cell, sample, default_template, tokenizer, sentence_start)
        for cell, sample in zip(cells, samples, strict=True)
    ]
    if judge_budget is not None:
        estimates = [
            with_judge_prompt(estimate, sample)
            for estimate, sample in zip(estimates, samples, strict=True)
        ]
    primer = primer_cell([e.cell for e in estimates if e.prefix_tokens is not None])
    if primer is not None and not primer_pays(spec, [e.cell for e in estimates], primer):
        primer = None  # the dispatcher sends none: no prefix reaches the cache's minimum
    if primer is not None:
        minimum = cache_min_tokens(spec.model_name)
        estimates = with_cache(same_haystack(spec, estimates, primer), primer, minimum)
    run = RunEstimate(
        spec,
        estimates,
        primer.cell_id if primer else None,
        budget,
        judge_budget,
    )
    run.warnings.extend(estimate_warnings(spec, budget))
    run.notes.extend(estimate_notes(estimates, tokenizer, sentence_start))
    return run


def _usd(cost: Cost) -> float | None:
    """Dollars, or None where a price is unknown (never $0)."""
    return round(cost.usd, 6) if cost.priced else None


def estimate_figures(run: RunEstimate) -> dict[str, Any]:
    """Every figure of the estimate, for ``niah run --estimate`` (text and ``--json``)."""
    spec = run.spec
    model = spec.model_name
    tier = spec.call_tier()
    naive = price_calls(model, run.model_calls(cached=False), tier=tier)
    aware = price_calls(model, run.model_calls(cached=True), tier=tier)
    # Batch: no order to count on, so nothing is taken as cached (prefixes that do hit
    # Vertex's implicit cache in a batch only lower it).
    batch = price_calls(model, run.model_calls(cached=False), batch=True)
    judge_name = spec.evaluator_model_name if run.judge_budget is not None else None
    judge = price_calls(judge_name, run.judge_calls()) if judge_name else Cost(0.0, True)
    prices = prices_for(model)
    threshold = prices.long_context_threshold if prices else None
    long_cells = [c for c in run.cells if threshold is not None and c.prompt_tokens > threshold]
    naive_usd, aware_usd, judge_usd = _usd(naive), _usd(aware), _usd(judge)
    output_tokens = sum(c.max_output_tokens for c in run.cells)
    cached = sum(c.cached_tokens for c in run.cells)
    prompt_tokens = sum(c.prompt_tokens for c in run.cells)
    both = naive_usd is not None and judge_usd is not None
    batch_row: dict[str, object] = {
        "prompt_tokens": prompt_tokens, "cached_tokens": 0, "cost_usd": _usd(batch)
    }  # fmt: skip
    notes = list(run.notes)
    if spec.is_batch():  # what a job that ends partway adds, beside the batch figure
        partial = partial_job_figures(spec, run.model_calls(cached=False))
        batch_row["partial_job"] = partial
        notes.append(partial_job_note(partial))
    return {
        "model_name": model,
        "task": spec.task,
        "cells": len(run.cells),
        "lengths": len(spec.lengths()),
        "depths": len(spec.depths()),
        # The values of the run's axes beyond length and depth (distractors, order).
        "variants": len(variants(spec)),
        "samples_per_cell": spec.samples_per_cell,
        "prompt_tokens": prompt_tokens,
        "prompt_tokens_basis": dict(Counter(c.basis for c in run.cells)),
        "output_tokens_at_most": output_tokens,
        "per_call": {
            "max_output_tokens": run.budget.max_output_tokens,
            "answer_tokens": run.budget.answer_tokens,
            "thinking_tokens": run.budget.thinking_tokens,
        },
        "long_context_threshold": threshold,
        "long_context_cells": len(long_cells),
        "naive": {"prompt_tokens": prompt_tokens, "cached_tokens": 0, "cost_usd": naive_usd},
        "cache_aware": {
            "primer_cell_id": run.primer_cell_id,
            "prompt_tokens": prompt_tokens,
            "cached_tokens": cached,
            "cells_with_cache_hits": sum(1 for c in run.cells if c.cached_tokens),
            "cost_usd": aware_usd,
            "saving_usd": round(naive.usd - aware.usd, 6) if naive.priced else None,
            "saving_share": round(1 - aware.usd / naive.usd, 4)
            if naive.priced and naive.usd
            else None,
        },
        "batch": batch_row,
        # The tier the run asks for, the least shared prefix the cache serves, and the
        # model's calls on every tier (niah.catalog.tiers).
        "tier": tier,
        # The row of ``tiers`` this run pays: batch for a batch run, else its tier.
        "tier_row": "batch" if spec.is_batch() else tier,
        "cache_min_tokens": cache_min_tokens(model),
        "tiers": tier_figures(
            model,
            run.model_calls(cached=False),
            run.model_calls(cached=True),
            location=get_settings().vertex_location,
        ),
        "judge": {
            "model_name": judge_name,
            "calls": len(run.cells),
            "prompt_tokens_at_most": sum(c.judge_prompt_tokens for c in run.cells),
            "max_output_tokens": run.judge_budget.max_output_tokens,
            "output_tokens_at_most": len(run.cells) * run.judge_budget.max_output_tokens,
            "cost_usd": judge_usd,
        }
        if judge_name and run.judge_budget is not None
        else None,
        "total": {
            "naive_usd": round(naive.usd + judge.usd, 6) if both else None,
            "cache_aware_usd": round(aware.usd + judge.usd, 6) if both else None,
        },
        # The most the run can cost: every call naive, the judge's included.
        "cost_usd_at_most": round(naive.usd + judge.usd, 6) if both else None,
        "warnings": run.warnings,
        "notes": notes,
        "per_cell": [
            {
                "cell_id": c.cell.cell_id,
                "prompt_tokens": c.prompt_tokens,
                "basis": c.basis,
                "cached_tokens": c.cached_tokens,
                "max_output_tokens": c.max_output_tokens,
                "long_context": threshold is not None and c.prompt_tokens > threshold,
                **({"judge_prompt_tokens": c.judge_prompt_tokens} if judge_name else {}),
            }
            for c in run.cells
        ],
    }
