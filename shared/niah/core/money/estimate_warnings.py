"""What an estimate warns of: a model the catalog lacks, a tight budget, a price change.

Apart from ``niah.core.money.estimate`` (the arithmetic); the estimate lists these
beside its figures.
"""

from __future__ import annotations

import datetime as dt

from niah.catalog.availability import lifecycle_notes
from niah.catalog.models import find_model, model_notice
from niah.catalog.prices import next_price_change, prices_for
from niah.core.prompts.answer_budget import CallBudget, budget_warning
from niah.core.request.spec import RunRequest

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
