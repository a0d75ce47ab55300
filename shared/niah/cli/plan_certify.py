"""``niah plan --mode certify``: what a certificate reaches on an assumed curve, and its dollars.

Issue 54's planner for a certificate to reach. It takes ``niah certify``'s run options
and an assumed curve (the share right at each candidate length: ``--expected_score``,
one for every length or one per length, 100 by default; ``--effective_length``: never
right beyond it) and says, calling nothing:

- the budget and the grid it is a share of: ``niah certify --estimate``'s figures, from
  the same function (``niah.cli.estimate.certify_figures``), so the two never differ;
- per candidate length, the samples that certify it (pass it, fail the next): an
  oracle's fixed tests (``niah.core.results.certify_oracle``) and the service's own
  always-valid tests at the length's share of the 5 % (``certify_tests.samples_to_decide``);
- the certificate the service's planner gives on answers right at exactly the assumed
  shares (``certify_forecast``), under the plan the dispatcher would admit
  (``certify_run.plan_record``, the cell limit included): the longest length the budget
  reaches;
- and a budget that reaches the true effective length, checked by the same forecast.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import replace
from typing import Any

from niah.cli.output import count, usage_error

# ``niah plan``'s options for a comparison of two runs, refused with --mode certify.
COMPARISON_ONLY = {
    "detect": "a certificate has no change to detect: leave --detect out and give the curve "
    "to assume (--expected_score, one for every length or one per length; --effective_length)",
    "pilot": "leave --pilot out and give each length's score as --expected_score (a grid "
    "run's per-length means: `niah status RUN_ID`)",
    "icc": "a certificate tests each length on its own samples: leave --icc out",
    "coupling": "a certificate is one run, not a pair: leave --coupling out",
}
# The fixed tests' cap, in samples: past it a length is left as undecidable.
FIXED_MOST = 100_000
# How far the budget search goes: this many times the grid's cost (a certificate past
# it costs more than the grid it is meant to save).
SEARCH_GRIDS = 2.0


def certificate_plan(args: argparse.Namespace) -> dict[str, Any]:
    """The certificate's plan: budget, per-length samples, forecast and the budget to reach."""
    from niah.cli.estimate import certify_figures, check_request
    from niah.cli.run_options import run_payload
    from niah.core.results.certify_oracle import truth
    from niah.core.results.certify_run import certify_plan, plan_record, sample_cost
    from niah.service.runs.request_body import parse_request
    from niah.settings import get_settings

    _refuse_comparison_options(args)
    payload = run_payload(args)
    check_request(payload)  # the run options' own mistakes, named as `niah certify` names them
    spec = parse_request(payload)
    if spec.rule() != "ruler":
        usage_error(
            "--effective_length_rule nolima: niah plan --mode certify plans RULER's rule, "
            "whose threshold is fixed before the run (NoLiMa's follows the base's 1,024 "
            "samples); leave the rule out to plan at 85.6 %"
        )
    lengths = tuple(spec.lengths())
    shares = _assumed_shares(args, lengths)
    record = plan_record(spec, get_settings().max_cells_per_run)  # what admission keeps
    plan, cost = certify_plan(spec, record=record), sample_cost(record)
    unit = _unit(record)
    known = truth([shares[n] for n in lengths], plan.threshold, plan.zone)
    target = -1 if known.length is None else known.length  # an index, as ``truth`` gives
    rows = [_row(plan, cost, shares, i) for i in range(len(lengths))]
    from niah.core.results.certify_forecast import forecast

    found = forecast(plan, shares, cost)
    # Without the run's cell limit: where it binds before the budget, the plan says so.
    unlimited = forecast(replace(plan, max_total_samples=None), shares, cost)
    budget = plan.budget if unit != "prompt tokens" else plan.max_tokens
    return {
        "certify": certify_figures(spec),  # `niah certify --estimate`'s, to the digit
        "model_name": spec.model_name,
        "tier": spec.tier or "standard",
        "unit": unit,
        "budget": budget,
        "max_cells": plan.max_total_samples,
        "max_samples": plan.max_samples,  # a length's most, past which it is left open
        "fixed_most": FIXED_MOST,
        "threshold": plan.threshold,
        "zone": plan.zone,
        "assumed": {
            "scores": [round(100 * shares[n], 4) for n in lengths],
            # As given: one score for every length (up to the effective length), or none.
            "expected_score": (args.expected_score or [100.0])[0]
            if len(args.expected_score or [100.0]) == 1
            else None,
            "effective_length": args.effective_length,
        },
        "truth": {
            "effective_length": lengths[target] if target >= 0 else None,
            "allowed": [lengths[i] if i >= 0 else None for i in known.allowed],
        },
        "lengths": rows,
        "oracle_usd": _oracle(shares, lengths, cost, plan),
        "forecast": _certificate(found),
        "forecast_without_cell_limit": _certificate(unlimited),
        "to_reach": _to_reach(record, spec, shares, cost, known, target, rows, found),
        "notes": _notes(spec, shares, rows, target),
    }


def _refuse_comparison_options(args: argparse.Namespace) -> None:
    """Exit 2 on a comparison's option given with --mode certify, naming it and the fix."""
    for name, why in COMPARISON_ONLY.items():
        if getattr(args, name) is not None:
            usage_error(f"--{name} plans a comparison of two runs, not a certificate: {why}")


def _assumed_shares(args: argparse.Namespace, lengths: tuple[int, ...]) -> dict[int, float]:
    """Each candidate length's assumed share right (a fraction), from the options."""
    scores = args.expected_score or [100.0]
    if len(scores) not in (1, len(lengths)):
        usage_error(
            f"--expected_score takes one score (every length) or one per length "
            f"({len(lengths)} here), not {len(scores)}"
        )
    if args.effective_length is not None and len(scores) > 1:
        usage_error(
            "--effective_length and one --expected_score per length say two things: give one"
        )
    each = scores if len(scores) > 1 else scores * len(lengths)
    longest = args.effective_length
    return {
        n: (score if longest is None or n <= longest else 0.0) / 100
        for n, score in zip(lengths, each, strict=True)
    }


def _row(plan: Any, cost: Any, shares: dict[int, float], index: int) -> dict[str, Any]:
    """Certifying candidate ``index``: pass it and fail the next, by fixed and by service tests."""
    from niah.core.results.certify_oracle import answer_tests
    from niah.core.results.certify_plan import FAIL, PASS
    from niah.core.results.certify_tests import length_alphas, samples_to_decide

    lengths = plan.lengths
    length, following = lengths[index], lengths[index + 1 : index + 2]
    tests = answer_tests(
        [shares[n] for n in lengths],
        index,
        plan.threshold,
        plan.zone,
        most=lambda _: FIXED_MOST,
    )
    fixed = {"pass": tests[0].samples} | ({"fail_next": tests[1].samples} if following else {})
    fixed_level = tests[0].level
    service = {"pass": samples_to_decide(plan, cost, length, shares[length], verdict=PASS)} | (
        {
            "fail_next": samples_to_decide(
                plan, cost, following[0], shares[following[0]], verdict=FAIL
            )
        }
        if following
        else {}
    )
    return {
        "length": length,
        "sample_cost": cost(length),
        "assumed_score": round(100 * shares[length], 4),
        "fixed": fixed | {"level": fixed_level, "cost": _priced(fixed, length, following, cost)},
        "service": service
        | {
            "level": length_alphas(plan, cost)[index],
            "cost": _priced(service, length, following, cost),
        },
    }


# The plan record's budget in each unit (``certify_run.plan_record``).
BUDGET_KEYS = {"usd": "budget_usd", "seconds": "budget_seconds", "prompt tokens": "max_tokens"}


def _unit(record: dict[str, Any]) -> str:
    """The unit of the plan's budget: dollars, the local model's seconds, or prompt tokens."""
    if record["budget_usd"] is not None:
        return "usd"
    return "seconds" if record["budget_seconds"] is not None else "prompt tokens"


def _priced(samples: dict[str, int | None], length: int, following: Any, cost: Any) -> Any:
    """Both tests' samples priced; None if either cannot decide."""
    passing, failing = samples["pass"], samples.get("fail_next")
    if passing is None or (following and failing is None):
        return None
    return passing * cost(length) + (failing or 0) * (cost(following[0]) if following else 0.0)


def _oracle(shares: dict[int, float], lengths: tuple[int, ...], cost: Any, plan: Any) -> Any:
    """The oracle's reach on the assumed curve, whatever the budget (None: none decides)."""
    from niah.core.results.certify_oracle import reach

    ceiling = FIXED_MOST * max(cost(n) for n in lengths)
    return reach(
        [shares[n] for n in lengths],
        lambda i: cost(lengths[i]),
        plan.threshold,
        plan.zone,
        budget=ceiling,
    )


def _certificate(found: Any) -> dict[str, Any]:
    """A forecast certificate's figures as a run stores them, its rounds counted, not listed."""
    stored = found.as_dict()
    return {name: value for name, value in stored.items() if name != "looks"} | {
        "rounds": len(found.looks)
    }


def _to_reach(
    record: dict[str, Any],
    spec: Any,
    shares: dict[int, float],
    cost: Any,
    known: Any,
    target: int,
    rows: list[dict[str, Any]],
    found: Any,
) -> dict[str, Any]:
    """The true effective length: what its tests take, and a budget whose forecast reaches it."""
    from niah.core.results.certify_forecast import budget_to_reach
    from niah.core.results.certify_run import certify_plan, grid_seconds, grid_tokens, grid_usd

    lengths = tuple(spec.lengths())
    key = BUDGET_KEYS[_unit(record)]
    start = float(record[key])
    grid = {
        "budget_usd": grid_usd(spec, record["sample_usd"]),
        "budget_seconds": grid_seconds(spec, record["sample_seconds"]),
    }.get(key)
    ceiling = SEARCH_GRIDS * (grid or grid_tokens(spec))

    def reached(certificate: Any) -> bool:
        at = -1 if certificate.length is None else lengths.index(certificate.length)
        if at == -1 and certificate.below != lengths[0]:
            return False  # nothing failed or passed: not "below the shortest"
        return at >= target and at in known.allowed

    def plan_at(budget: float) -> Any:
        value = int(budget) if key == "max_tokens" else budget
        return certify_plan(spec, record=record | {key: value})

    figures: dict[str, Any] = {
        "length": lengths[target] if target >= 0 else None,
        "row": rows[target] if target >= 0 else None,
        "reached": reached(found),
        "budget_key": key,
        "search_most": ceiling,
    }
    if not figures["reached"]:
        # A user's budget to the cent; a small one (below $10) to the hundredth of a cent.
        step = (0.01 if start >= 10 else 0.0001) if key == "budget_usd" else 1.0
        hit = budget_to_reach(plan_at, shares, cost, reached, start=start, most=ceiling, step=step)
        figures["needed"] = (
            None if hit is None else {"budget": hit.budget} | _certificate(hit.certificate)
        )
    return figures


def _notes(
    spec: Any, shares: dict[int, float], rows: list[dict[str, Any]], target: int
) -> list[str]:
    """What the reader must know beyond the figures: where the forecast is weak."""
    notes = []
    values = [shares[row["length"]] for row in rows]
    if any(later > earlier for earlier, later in itertools.pairwise(values)):
        notes.append(
            "the assumed curve rises with length somewhere: bisection assumes it does not, "
            "and a certificate may then miss the truth (docs/certify.md)"
        )
    if any(0 < share < 1 for share in values):
        notes.append(
            "answers at exactly the assumed shares are one path: a real run's answers vary, "
            "and its certificate with them"
        )
    if target != -1:
        row = rows[target]
        fixed, service = row["fixed"]["pass"], row["service"]["pass"]
        if fixed is not None and (service is None or service > fixed):
            notes.append(
                f"passing {row['length']:,} takes the service's test "
                + (f"{count(service, 'sample')}" if service is not None else "more than its cap")
                + f" where one fixed test of {count(fixed, 'sample')} would do: the service "
                "looks after every round (an always-valid test at the length's share of the "
                "5 %), which a fixed test may not (docs/certify.md, 'Not yet')"
            )
    return notes


def format_certificate_plan(planned: dict[str, Any]) -> str:
    """The certificate's plan as text: the same figures ``--json`` prints."""
    from niah.cli.plan_certify_text import certificate_plan_lines

    return "\n".join(certificate_plan_lines(planned))
