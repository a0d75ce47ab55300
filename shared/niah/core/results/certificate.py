"""A certify run's certificate as its summary carries it, and the effective length it gives.

The certificate replaces the grid's effective length on every surface of a certify run
(``niah.core.results.effective``): the planner's answer, with the lengths that decided
it, the samples and tokens it took and what the grid would have taken.
"""

from __future__ import annotations

from typing import Any

from niah.core.request.spec import RunRequest
from niah.core.results.certify import CONFIDENCE
from niah.core.results.certify_run import certify_plan, certify_progress, grid_tokens, grid_usd
from niah.core.results.uncertainty import interval
from niah.settings import get_settings

METHOD = (
    "Wilson interval per round t at 1 - alpha_t, alpha_t = 0.05 x 6 / (pi^2 t^2): "
    "time-uniform by the union bound (Howard, Ramdas, McAuliffe and Sekhon 2021)"
)


def service_interval(scores: Any, level: float) -> tuple[float, float] | None:
    """The service's interval (Wilson, or the bootstrap for graded scores), as a pair."""
    found = interval(scores, confidence=level)
    return (found.low, found.high) if found else None


def certificate_summary(
    run: dict[str, Any], cells: list[dict[str, Any]], *, max_cells: int | None = None
) -> dict[str, Any] | None:
    """The certificate of a certify run whose rounds are done; None for a grid run.

    A certify run cut short (cancelled mid-round) gets the certificate of what was
    stored: its bracket so far, not determined.
    """
    spec_fields = run.get("spec") or {}
    if spec_fields.get("mode") != "certify":
        return None
    spec = RunRequest.model_validate(spec_fields)
    if max_cells is None:  # the limit the rounds were planned under
        max_cells = get_settings().max_cells_per_run
    progress, _ = certify_progress(
        spec, run, cells, max_cells=max_cells, interval_of=service_interval
    )
    plan = certify_plan(spec, max_cells)
    priced = grid_usd(spec)
    costs = {
        "threshold": spec.certify_threshold,
        "confidence": CONFIDENCE,
        "budget_usd": plan.budget,
        "budget_tokens": plan.max_tokens,
        "grid_tokens": grid_tokens(spec),
        "grid_usd": round(priced, 4) if priced is not None else None,
        "method": METHOD,
    }
    found = progress.certificate
    if found is None:  # rounds were still to come: what the stored ones say
        return costs | {
            "length": None,
            "below": None,
            "determined": False,
            "reason": "unfinished",
            "open_lengths": [],
            "samples": len(cells),
            "tokens": None,
            "usd": None,
            "share_of_grid": None,
            "looks": [look.__dict__ for look in progress.looks],
        }
    kept = found.as_dict()
    spent = kept.pop("cost")
    grid = priced if priced is not None else costs["grid_tokens"]
    return (
        costs
        | kept
        | {
            "usd": round(spent, 4) if priced is not None else None,
            # Of the model cost where the catalog prices it, else of the prompt tokens.
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
        "base": None,
        "certified": True,
        "below": certificate["below"],
        "open_lengths": certificate["open_lengths"],
        "reason": certificate["reason"],
        "determined": certificate["determined"],
    }
    return effective | {"text": effective_length_text(effective)}
