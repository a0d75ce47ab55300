"""What an estimate warns of, and what its figures rest on where they are not exact.

Warnings: a model the catalog lacks, a tight budget, a price change, a certification
whose budget cannot pass any length. Notes: prompts
fitted to Google's count or built at a ratio, turns' allowance, prefixes counted short.
Apart from ``niah.core.money.estimate`` (the arithmetic); the estimate lists these
beside its figures.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable

from niah.catalog.availability import lifecycle_notes
from niah.catalog.models import find_model, model_notice
from niah.catalog.prices import next_price_change, prices_for
from niah.core.interfaces import Tokenizer
from niah.core.money.estimate_cells import TURN_ALLOWANCE, CellEstimate, PromptBasis
from niah.core.prompts.answer_budget import CallBudget, budget_warning
from niah.core.request.spec import RunRequest
from niah.core.results.certify_run import unreachable_warning

# A price change within this many days is told with the estimate (a run may span it).
PRICE_CHANGE_WARNING_DAYS = 60


def estimate_warnings(spec: RunRequest, budget: CallBudget) -> list[str]:
    """Where a reply may end MAX_TOKENS, or a figure rests on an assumption."""
    warnings = []
    warnings.extend(lifecycle_notes(spec.model_name, spec.evaluator_model_name))
    known = find_model(spec.model_name)
    if known is None or known.assumed:
        notice = model_notice(spec.model_name) or f"{spec.model_name} is not in the catalog"
        warnings.append(f"{notice}; a reply may end MAX_TOKENS (truncated, never scored)")
    tight = budget_warning(spec)
    if tight:
        warnings.append(tight)
    starved = unreachable_warning(spec)
    if starved:
        warnings.append(starved)
    judge = spec.evaluator_model_name if spec.scorer_name() in ("judge", "both") else None
    if judge and find_model(judge) is None:
        warnings.append(
            f"judge {judge} is not in the catalog: its thinking is assumed off, so its "
            "score may end MAX_TOKENS (unscored)"
        )
    for name in (spec.model_name, spec.evaluator_model_name):
        if name and prices_for(name) is None:
            warnings.append(f"no price for {name}: its cost is unknown (set NIAH_PRICE_TABLE)")
        today = dt.datetime.now(dt.UTC).date()  # the day prices are dated by
        change = next_price_change(name, today) if name else None
        if change and (change[0] - today).days <= PRICE_CHANGE_WARNING_DAYS:
            day, rates = change
            warnings.append(
                f"{name}'s rates change on {day} (to ${rates.input:g} input, "
                f"${rates.output:g} output per 1M tokens): calls from that day are priced "
                "at them (this estimate is at today's)"
            )
    return warnings


BASIS_NOTES: dict[PromptBasis, str] = {
    "fitted": (
        "prompts fitted to Vertex's countTokens (Google: an estimate), each at most "
        "max(8, 0.1 %) tokens under its length; priced at the length"
    ),
    "ratio": (
        "batch prompts built at the run's measured token ratio, not fitted per cell: "
        "Google's count may differ from the length"
    ),
    "local_count": (
        "generated prompts built to their length in Gemma 3, not fitted: the model "
        "counts them in its own tokenizer"
    ),
}


def estimate_notes(
    estimates: list[CellEstimate],
    tokenizer: Tokenizer | None,
    sentence_start: Callable[[int], int] | None,
) -> list[str]:
    """What each figure rests on, where it is not exact."""
    bases = Counter(e.basis for e in estimates)
    notes = []
    if bases["turns_allowance"]:
        notes.append(
            f"{bases['turns_allowance']} conversational prompts: exact as text, plus "
            f"{TURN_ALLOWANCE} tokens a turn for the API's own count of turns (unpublished)"
        )
    if bases["published"]:
        notes.append(
            f"{bases['published']} published MRCR v2 rows: at Google's context_len; "
            "not cache-aware (runs of published rows have no primer)"
        )
    for basis, note in BASIS_NOTES.items():
        if bases[basis]:
            notes.append(f"{bases[basis]} {note}")
    if tokenizer is None:
        notes.append("no tokenizer: the cached prefixes are counted short, by bytes")
    if sentence_start is None and any(e.cached_tokens for e in estimates):
        notes.append(
            "cached prefixes run to each needle's nominal depth; the builder moves it back "
            "to a sentence end, so cache-aware counts up to a sentence a cell as cached "
            "that may not be"
        )
    return notes
