"""``niah plan``: the samples a point a comparison needs, its power, and what a run costs.

The power is ``niah.core.results.power``'s (the paired test ``niah compare`` runs); the
dollars are ``niah run --estimate``'s own figures for the grid at the planned samples a
point (``niah.cli.estimate.estimate_figures``), so one place prices a run. The
dispatcher has no estimate route: the estimate is computed where the command runs,
from the catalog's dated prices, calling nothing.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from niah.cli.estimate import check_request, estimate_figures
from niah.cli.output import count, to_json, usage_error
from niah.cli.run_options import run_payload
from niah.core.results.power import (
    DEFAULT_COUPLING,
    DEFAULT_EXPECTED_SCORE,
    DEFAULT_ICC,
    LEAST_CLUSTERED_POINTS,
    MOST_SAMPLES_PER_POINT,
    PlanAssumptions,
    comparison_power,
    plan_samples,
)

# The plan's own options, as the power model's refusals name them.
PLAN_OPTIONS = ("expected_score", "detect", "power", "icc", "coupling", "changed_points")
_NAMES = re.compile(rf"\b({'|'.join(PLAN_OPTIONS)})\b")
# Below this many points the closed form's power runs ahead of the flip test's (measured
# in tests/unit/test_power.py and docs/planning.md): a plan there says so.
FEW_POINTS = 8
TEST_NAMES = {
    "mcnemar": "exact McNemar test of the discordant pairs",
    "clustered": "sign-flip test over the grid points' summed differences",
}


def cmd_plan(args: argparse.Namespace) -> None:
    """Print the plan (``--json``: its figures) for the run options and the change asked.

    With ``--mode certify``, a certificate's plan instead (``niah.cli.plan_certify``).
    """
    if args.mode == "certify":
        from niah.cli.plan_certify import certificate_plan, format_certificate_plan

        planned = certificate_plan(args)
        print(to_json(planned) if args.json else format_certificate_plan(planned))
        return
    figures = plan_figures(_comparison_options(args))
    print(to_json(figures) if args.json else format_plan(figures))


def _comparison_options(args: argparse.Namespace) -> argparse.Namespace:
    """The options as a comparison's plan takes them: ``--detect``, one ``--expected_score``."""
    if args.effective_length is not None:
        usage_error(
            "--effective_length goes with --mode certify (a certificate's plan); a comparison "
            "assumes --expected_score"
        )
    if args.detect is None:
        usage_error(
            "plan: --detect is required to plan a comparison of two runs (or give --mode "
            "certify to plan a certificate)"
        )
    scores = args.expected_score
    if scores is not None and len(scores) > 1:
        usage_error(
            f"--expected_score takes one score for a comparison (the first run's mean), "
            f"not {len(scores)}"
        )
    return argparse.Namespace(**vars(args) | {"expected_score": scores[0] if scores else None})


def _refused(field: str, message: str) -> str:
    """A power-model refusal in the command line's words: ``--detect must be ...``."""
    text = _NAMES.sub(r"--\1", message)
    return f"--{field} {text}" if text.startswith("must ") else f"--{field}: {text}"


def plan_figures(args: argparse.Namespace) -> dict[str, Any]:
    """The plan's figures: the grid, the samples a point and their power, the estimate."""
    from niah.core.request.axes import variants
    from niah.errors import RequestError
    from niah.service.runs.request_body import parse_request

    payload = run_payload(args)
    check_request(payload)  # the run options' own mistakes, named as `niah run` names them
    spec = parse_request(payload)
    # The grid itself, at one sample a point (its lengths on this model, its output
    # budget): a refusal there no number of samples lifts.
    _admitted(parse_request(payload | {"samples_per_cell": 1}), refuse=True)
    depths = len(spec.depths()) * len(variants(spec))
    points = len(spec.lengths()) * depths
    assumed, sources, pilot_notes = resolve_assumptions(args)
    assumptions = PlanAssumptions(
        expected_score=assumed["expected_score"],
        detect=args.detect,
        change=args.change,
        icc=assumed["icc"],
        coupling=assumed["coupling"],
        changed_points=args.changed_points,
    )
    given = payload.get("samples_per_cell")
    try:
        if given is None:
            plan = plan_samples(assumptions, points, args.power / 100)
            per_point, power, method, reached = (
                plan.samples_per_point, plan.power, plan.method, plan.reached
            )  # fmt: skip
        else:
            per_point = int(given)
            power, method = comparison_power(assumptions, points, per_point)
            reached = power >= args.power / 100
        per_length = comparison_power(assumptions, depths, per_point)
    except RequestError as error:
        usage_error(_refused(error.field, error.message))
    planned = payload | {"samples_per_cell": per_point}
    limits = _admitted(parse_request(planned), refuse=False)
    estimate = estimate_figures(planned, within_limits=False)
    estimate.pop("per_cell")
    return {
        "question": {
            "detect_points": args.detect,
            "change": args.change,
            "expected_score": assumptions.expected_score,
            "second_score": assumptions.second_score,
            "target_power": args.power,
            "significance": 0.05,
            "samples_per_point_given": given is not None,
        },
        "assumptions": {
            "icc": assumptions.icc,
            "coupling": assumptions.coupling,
            "changed_points": args.changed_points,
            "scores": "right or wrong",
            # Where each came from: "given", "default", or the pilot run it was measured on.
            "from": sources,
        },
        "grid": {
            "points": points,
            "lengths": len(spec.lengths()),
            "points_per_length": depths,
            "model_name": spec.model_name,
            "tier": estimate["tier_row"],
        },
        "samples_per_point": per_point,
        "samples_per_run": points * per_point,
        "power": round(100 * power, 1),
        "reached": reached,
        "test": method,
        "power_per_length": {"power": round(100 * per_length[0], 1), "test": per_length[1]},
        "cost": {
            "cost_usd_at_most": estimate["cost_usd_at_most"],
            "cache_aware_usd": estimate["total"]["cache_aware_usd"],
            "batch_usd": estimate["batch"]["cost_usd"] if estimate["tier_row"] == "batch" else None,
        },
        "notes": _notes(points, per_point, reached) + limits + pilot_notes,
        "estimate": estimate,
    }


def resolve_assumptions(
    args: argparse.Namespace,
) -> tuple[dict[str, float], dict[str, str], list[str]]:
    """The score, icc and coupling: as given, else the pilot's, else the defaults.

    Also where each came from and what a pilot could not measure (and why).
    """
    defaults = {
        "expected_score": DEFAULT_EXPECTED_SCORE, "icc": DEFAULT_ICC, "coupling": DEFAULT_COUPLING
    }  # fmt: skip
    measured: dict[str, float | None] = {}
    notes: list[str] = []
    if args.pilot:
        measured, notes = _pilot(args.pilot)
    values, sources = {}, {}
    for name, default in defaults.items():
        given, found = getattr(args, name), measured.get(name)
        values[name] = given if given is not None else found if found is not None else default
        pilots = list(args.pilot or [])
        pilot = " and ".join(pilots) if name == "coupling" else pilots[0] if pilots else ""
        sources[name] = "given" if given is not None else pilot if found is not None else "default"
    return values, sources, notes


def _pilot(run_ids: list[str]) -> tuple[dict[str, float | None], list[str]]:
    """What one or two stored runs measure of the plan's assumptions (``core.results.pilot``)."""
    import sys

    from niah.cli.backend import result_store
    from niah.core.results.pilot import pilot_figures

    if len(run_ids) > 2:
        usage_error("--pilot takes one run, or two over the same grid")
    store = result_store()
    cells = []
    for run_id in run_ids:
        if store.get_run(run_id) is None:
            sys.exit(f"niah: no run {run_id}; `niah list` shows recent runs")
        cells.append(store.list_cells(run_id))
    found = pilot_figures(cells[0], cells[1] if len(cells) > 1 else None)
    score = found.expected_score
    if score is not None and not 0 < score < 100:
        usage_error(
            f"--pilot {run_ids[0]} scores {score:g} %, where no run can move one way: "
            "give --expected_score (e.g. 99 or 1)"
        )
    measured = {
        "expected_score": found.expected_score,
        "icc": found.icc,
        "coupling": found.coupling,
    }
    said = f"pilot {' and '.join(run_ids)}: {count(found.samples, 'scored sample')} in " + count(
        found.points, "point"
    )
    said += f", {count(found.pairs, 'pair')}" if len(run_ids) > 1 else ""
    return measured, [said] + [f"pilot: {why}" for why in found.why_not]


def _admitted(spec: Any, *, refuse: bool) -> list[str]:
    """Admission's grid checks on ``spec``: exit 2 on a refusal (``refuse``), else say it.

    The plan's samples may take a grid above this deployment's ceilings (cells, tokens a
    run): the plan still says what the question needs, and that one run cannot hold it.
    """
    from niah.cli.run_options import in_cli_words
    from niah.errors import RequestError
    from niah.service.runs.admission_checks import check_budget

    try:
        check_budget(spec)
    except RequestError as error:
        said = in_cli_words(error.field, error.message)
        if refuse:
            usage_error(said)
        return [f"one run of these samples is refused here: {said}"]
    return []


def _notes(points: int, per_point: int, reached: bool) -> list[str]:
    """What the reader of a plan must know beyond its figures: where it is weak."""
    notes = []
    if not reached:
        notes.append(
            f"the power asked is not reached within {MOST_SAMPLES_PER_POINT} samples a point "
            "(the most a run takes): add grid points (lengths, depths) or plan for a bigger change"
        )
    if per_point > 1 and points < LEAST_CLUSTERED_POINTS:
        notes.append(
            f"with {count(points, 'point')} the sign-flip test cannot reach p < 0.05 (its least "
            f"p is 2/2^{points}): use {LEAST_CLUSTERED_POINTS} points or more, or one sample "
            "a point"
        )
    elif per_point > 1 and points < FEW_POINTS:
        notes.append(
            f"with {count(points, 'point')} the flip test is coarse and this power is optimistic "
            "(docs/planning.md): add points"
        )
    if points == 1 and per_point > 1:
        notes.append(
            "one grid point: the service tests its samples as independent, though they share "
            "the point's haystack; this power is optimistic"
        )
    return notes


def _source(assumed: dict[str, Any], name: str) -> str:
    """The pilot a figure was measured on, as " (measured on run-...)"; else nothing."""
    source = assumed["from"][name]
    return "" if source in ("given", "default") else f" (measured on {source})"


def _usd(value: float | None) -> str:
    return "unknown (no price in the catalog)" if value is None else f"${value:.4f}"


def format_plan(figures: dict[str, Any]) -> str:
    """The plan as text: the same figures ``--json`` prints."""
    asked, grid, cost = figures["question"], figures["grid"], figures["cost"]
    assumed, per_length = figures["assumptions"], figures["power_per_length"]
    per_point = figures["samples_per_point"]
    verb = "at" if asked["samples_per_point_given"] else "for"
    lines = [
        f"plan: a {asked['detect_points']:g}-point {asked['change']} from "
        f"{asked['expected_score']:g} % (the second run at {asked['second_score']:g} %), "
        f"{verb} {asked['target_power']:g} % power, tested as `niah compare` tests two runs",
        f"grid: {count(grid['points'], 'point')} ({count(grid['lengths'], 'length')} x "
        f"{count(grid['points_per_length'], 'point')} a length) on {grid['model_name']}, tier "
        f"{grid['tier']}",
        f"samples per point: {per_point:,} ({figures['samples_per_run']:,} a run): power "
        f"{figures['power']:g} % ({TEST_NAMES[figures['test']]}, two-sided, p < 0.05); "
        f"per length ({count(grid['points_per_length'], 'point')}): {per_length['power']:g} %"
        + (
            f" (the flip test needs {LEAST_CLUSTERED_POINTS} points to reach p < 0.05)"
            if per_length["test"] == "clustered"
            and grid["points_per_length"] < LEAST_CLUSTERED_POINTS
            else ""
        ),
        f"one run: cost at most {_usd(cost['cost_usd_at_most'])}, cache-aware "
        f"{_usd(cost['cache_aware_usd'])}"
        + (f", batch {_usd(cost['batch_usd'])}" if cost["batch_usd"] is not None else "")
        + f" (`niah run --estimate --samples_per_cell {per_point}`'s figures); the comparison "
        "is two such runs (one, if the first is already run with these samples)",
        f"assumes: intra-cluster correlation {assumed['icc']:.2g}{_source(assumed, 'icc')} (how "
        f"alike a point's samples are); coupling {assumed['coupling']:.2g}"
        f"{_source(assumed, 'coupling')} (0: the two runs answer a pair independently "
        "given its point's chance, the cautious end; 1: alike wherever they can); the change "
        f"on {assumed['changed_points']:g} % of the points, each in proportion to its room; "
        "right/wrong scores (docs/planning.md)",
    ]
    lines += [f"note: {note}" for note in figures["notes"]]
    lines += [f"warning: {warning}" for warning in figures["estimate"]["warnings"]]
    return "\n".join(lines)
