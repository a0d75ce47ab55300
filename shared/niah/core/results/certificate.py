"""A certify run's certificate as its summary carries it, and the effective length it gives.

The certificate replaces the grid's effective length on every surface of a certify run
(``niah.core.results.effective``): the planner's answer, with the lengths that decided
it, the samples, tokens and dollars it took and what the grid would have taken.
"""

from __future__ import annotations

from typing import Any

from niah.core.results.certify import CONFIDENCE, NOLIMA
from niah.core.results.certify_run import (
    certify_plan,
    certify_progress,
    grid_seconds,
    grid_tokens,
    kept_plan,
)
from niah.core.results.certify_run import grid_usd as run_grid_usd
from niah.core.runs import RunRecord
from niah.settings import get_settings

METHOD = (
    "an always-valid test per length, each side (Robbins' beta-binomial mixture over one "
    "side of the threshold; Howard, Ramdas, McAuliffe and Sekhon 2021) at 1 - 0.05 / K "
    "for K candidate lengths"
)
# Design 2 (issue 54): the zone, and the 5 % split by price.
METHOD_ZONE = (
    "an always-valid test per length, each side (Robbins' beta-binomial mixture over one "
    "side; Howard, Ramdas, McAuliffe and Sekhon 2021): a pass shows the share above the "
    "threshold less the zone, a fail below it plus the zone; the 5 % split over the K "
    "candidate lengths in proportion to a sample's price at each"
)


def certificate_summary(
    run: RunRecord, cells: list[dict[str, Any]], *, max_cells: int | None = None
) -> dict[str, Any] | None:
    """The certificate of a certify run whose rounds are done; None for a grid run.

    Its plan (budgets, prices) is the one the run was admitted with. A certify run cut
    short (cancelled mid-round) gets the certificate of what was stored: "unfinished".
    """
    if not run.is_certify:
        return None
    spec = run.spec
    if max_cells is None:
        max_cells = get_settings().max_cells_per_run
    certify = run.certify
    record = kept_plan(spec, certify, max_cells)
    progress, _ = certify_progress(spec, certify, cells, max_cells=max_cells)
    plan = certify_plan(spec, record=record)
    grid_usd = run_grid_usd(spec, record["sample_usd"]) if record["sample_usd"] else None
    timed = record.get("sample_seconds")
    grid_time = grid_seconds(spec, timed) if timed else None
    unscored = sum(1 for c in cells if c.get("task_score") is None)
    costs = {
        "rule": plan.rule,
        "threshold": spec.certify_threshold,
        "threshold_text": f"threshold {spec.certify_threshold:g} %"
        + (f" give or take {plan.zone:g} points" if plan.zone else "")
        + ", rule ruler",
        "zone": plan.zone,
        "confidence": CONFIDENCE,
        "budget_usd": record["budget_usd"],
        "budget_seconds": record.get("budget_seconds"),
        "budget_tokens": plan.max_tokens,
        "grid_tokens": grid_tokens(spec),
        "grid_usd": round(grid_usd, 4) if grid_usd is not None else None,
        "grid_seconds": round(grid_time, 1) if grid_time is not None else None,
        "unscored_samples": unscored,
        "method": METHOD_ZONE if plan.by_price() else METHOD,
    }
    found = progress.certificate
    if found is None:  # rounds were still to come: what the stored ones say
        return costs | {
            "length": None,
            "below": None,
            "determined": False,
            # A round the spend ceilings or the kill switch refused says why.
            "reason": ((certify or {}).get("refused") or {}).get("message") or "unfinished",
            "open_lengths": [],
            "samples": len(cells),
            "tokens": None,
            "usd": None,
            "seconds": None,
            "share_of_grid": None,
            "looks": [look.__dict__ for look in progress.looks],
        }
    kept = found.as_dict()
    spent = kept.pop("cost")
    if plan.rule == NOLIMA:  # the threshold was a band: 85 % of the base's bounds
        base = found.looks[0]
        costs |= {
            "threshold": kept["pass_at"],
            "threshold_text": (
                f"threshold 85 % of the base {base.mean:g} % at {base.length:,} tokens: "
                f"pass above {kept['pass_at']:g} %, fail below {kept['fail_at']:g} % "
                "(rule nolima)"
            ),
        }
    grid = next(g for g in (grid_usd, grid_time, costs["grid_tokens"]) if g is not None)
    return (
        costs
        | kept
        | {
            "usd": round(spent, 4) if grid_usd is not None else None,
            "seconds": round(spent, 1) if grid_time is not None else None,
            # Of the model cost where the catalog prices it, of the estimated model time
            # where it times the model (the local one), else of the prompt tokens.
            "share_of_grid": round(spent / grid, 4) if grid else None,
        }
    )


def certified_effective_length(certificate: dict[str, Any]) -> dict[str, Any]:
    """The effective length a certificate gives, in the grid's form plus ``certified``."""
    from niah.core.results.effective import effective_length_text

    effective = {
        "length": certificate["length"],
        "threshold": certificate["threshold"],
        "rule": f"certify: {certificate['threshold']:g}",
        # The rule the certificate was planned by: what a grid of it is judged by too.
        "effective_length_rule": certificate.get("rule", "ruler"),
        "threshold_text": certificate.get("threshold_text"),
        "base": None,
        "certified": True,
        "below": certificate["below"],
        "open_lengths": certificate["open_lengths"],
        "reason": certificate["reason"],
        "determined": certificate["determined"],
    }
    return effective | {"text": effective_length_text(effective)}
