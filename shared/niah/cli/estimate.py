"""``niah run --estimate``: a grid's tokens and cost, calling no model."""

from __future__ import annotations

from typing import Any

from niah.cli.backend import blob_store
from niah.cli.output import count, usage_error
from niah.cli.run_options import in_cli_words
from niah.core.request.request_options import BATCH_TURNAROUND


def check_request(payload: dict[str, Any]) -> None:
    """Exit 2 in the CLI's words if the request's own checks refuse it.

    The dispatcher checks again, with its deployment's budgets and bucket; these are
    the checks of the request alone, the same wherever they run.
    """
    from niah.errors import RequestError
    from niah.service.runs.request_body import parse_request

    try:
        parse_request(payload)
    except RequestError as error:
        usage_error(in_cli_words(error.field, error.message))


def _usd(value: float | None, model_name: str | None) -> str:
    return f"${value:.4f}" if value is not None else f"unknown (no price for {model_name})"


def format_estimate(figures: dict[str, Any]) -> str:
    """The estimate's figures as text: the same figures ``--json`` prints."""
    samples = figures["samples_per_cell"]
    model, call = figures["model_name"], figures["per_call"]
    naive, aware, judge = figures["naive"], figures["cache_aware"], figures["judge"]
    bases = ", ".join(f"{count} {basis}" for basis, count in figures["prompt_tokens_basis"].items())
    lines = [
        f"{model}, task {figures['task']}: {count(figures['cells'], 'cell')} "
        f"({count(figures['lengths'], 'length')} x {count(figures['depths'], 'depth')}"
        + (f" x {count(samples, 'sample')}" if samples > 1 else "")
        + (f" x {figures['variants']} variants)" if figures.get("variants", 1) > 1 else ")"),
        f"prompt tokens: {figures['prompt_tokens']:,} ({bases}); output tokens at most: "
        f"{figures['output_tokens_at_most']:,}",
        f"per call: max_output_tokens {call['max_output_tokens']:,} = answer room "
        f"{call['answer_tokens']:,} + thinking room {call['thinking_tokens']:,}",
    ]
    if figures["long_context_threshold"] is not None:
        lines.append(
            f"long-context rate (prompt above {figures['long_context_threshold']:,} tokens): "
            f"{count(figures['long_context_cells'], 'cell')}"
        )
    lines.append(f"model calls, naive (nothing cached): {_usd(naive['cost_usd'], model)}")
    saving = (
        f", saving {_usd(aware['saving_usd'], model)} ({aware['saving_share']:.1%})"
        if aware["saving_share"] is not None
        else ""
    )
    primer = aware["primer_cell_id"]
    first = (
        f"primer {primer} first"
        if primer
        else "one cell, no primer"
        if figures["cells"] == 1
        else f"no primer: no shared prefix reaches {figures['cache_min_tokens']:,} tokens"
    )
    lines.append(
        f"model calls, cache-aware ({first}; "
        f"{count(aware['cached_tokens'], 'cached token')} in "
        f"{count(aware['cells_with_cache_hits'], 'cell')}): "
        f"{_usd(aware['cost_usd'], model)}{saving}"
    )
    lines.append(
        "model calls, batch (--batch: half the online rates, nothing taken as cached; "
        f"{BATCH_TURNAROUND}): {_usd(figures['batch']['cost_usd'], model)}"
    )
    lines += tier_lines(figures)
    if judge:
        lines.append(
            f"judge {judge['model_name']}: {count(judge['calls'], 'call')}, prompt tokens at most "
            f"{judge['prompt_tokens_at_most']:,}, output tokens at most "
            f"{judge['output_tokens_at_most']:,}: {_usd(judge['cost_usd'], judge['model_name'])}"
        )
    total = figures["total"]
    if figures["cost_usd_at_most"] is not None:
        lines.append(
            f"cost at most: ${figures['cost_usd_at_most']:.4f}"
            + (" (judge included)" if judge else "")
            + f"; cache-aware: ${total['cache_aware_usd']:.4f}"
        )
    else:
        lines.append("cost: unknown (set NIAH_PRICE_TABLE)")
    if figures.get("held_usd") is not None:
        lines.append(
            f"held against the spend ceilings while it runs: ${figures['held_usd']:.4f} (every "
            "cell asked NIAH_MAX_CELL_FAILURES times with its whole output budget; settled to "
            "what it spent when it ends; docs/limits.md)"
        )
    if "certify" in figures:
        lines += certify_lines(figures["certify"])
    if "margin" in figures:
        lines += margin_lines(figures["margin"])
    lines += [f"note: {note}" for note in figures["notes"]]
    lines += [f"warning: {warning}" for warning in figures["warnings"]]
    return "\n".join(lines)


def tier_lines(figures: dict[str, Any]) -> list[str]:
    """The model's calls on each tier (naive / cache-aware), batch beside; why not, if not."""
    model, chosen = figures["model_name"], figures["tier_row"]
    # The hint names only the tiers this model is offered on here (not batch: --batch).
    offered = [t for t, row in figures["tiers"].items() if t != "batch" and row["offered"]]
    choices = ", ".join(offered[:-1]) + (" or " if len(offered) > 1 else "") + offered[-1]
    lines = [
        f"implicit cache: prefixes of {figures['cache_min_tokens']:,} tokens or more; "
        f"this run's tier: {chosen} (--tier {choices})"
    ]
    for tier, row in figures["tiers"].items():
        mark = " (this run)" if tier == chosen else ""
        if not row["offered"]:
            lines.append(f"  {tier}: not offered: {row['reason']}")
        elif tier == "batch":
            lines.append(
                f"  batch{mark}: {_usd(row['naive_usd'], model)} (nothing taken as cached)"
            )
        else:
            lines.append(
                f"  {tier}{mark}: {_usd(row['naive_usd'], model)} naive, "
                f"{_usd(row['cache_aware_usd'], model)} cache-aware"
            )
    return lines


def estimate_figures(payload: dict[str, Any], *, within_limits: bool = True) -> dict[str, Any]:
    """What ``estimate`` says, as figures: ``niah run --estimate --json`` prints them.

    ``within_limits`` False: priced even where admission would refuse the grid (``niah
    plan`` prices the samples a question needs, and says where the limits stand).
    """
    from niah.core.money import estimate as estimating
    from niah.core.prompts.sample import Sample
    from niah.errors import ConfigurationError, RequestError
    from niah.models.providers import provider_class
    from niah.service.runs.admission_checks import check_budget
    from niah.service.runs.request_body import parse_request
    from niah.service.runs.sources import resolve_published_rows, source_cells
    from niah.tasks import make_sample

    try:
        spec = parse_request(payload)
        published = spec.task_options.published_source() is not None
        source = resolve_published_rows(spec, blob_store()) if published else None
        cells = source_cells(source.rows) if source else spec.cells()
        if within_limits:
            check_budget(spec, cells)
    except RequestError as error:
        usage_error(in_cli_words(error.field, error.message))
    if source:
        # Published rows are sent whole; their text stays in the bucket (megabytes a row).
        samples = [
            Sample((), "", (), answer_tokens=source.reply_tokens, prompt="",
                   prompt_tokens=cell.context_length)
            for cell in cells
        ]  # fmt: skip
    else:
        samples = [make_sample(spec, cell) for cell in cells]
    try:
        from niah.models.tokenizer import get_tokenizer

        tokenizer = get_tokenizer()
    except (ConfigurationError, ImportError):
        tokenizer = None  # without the developer set-up: bytes bound the template
    run = estimating.estimate_run(
        spec,
        cells,
        samples,
        default_template=provider_class(spec.provider()).default_template,
        tokenizer=tokenizer,
    )
    figures = estimating.estimate_figures(run)
    if spec.is_certify():
        figures["certify"] = certify_figures(spec)
    figures["held_usd"] = held_usd(spec, cells, run.budget)
    return figures


def held_usd(spec: Any, cells: list[Any], budget: Any) -> float | None:
    """What admission holds against the spend ceilings while the run runs (its worst case).

    The same figure the dispatcher holds (``niah.core.money.certify_spend.run_worst_case``): a
    certify run's budget's worst case, else the cells', each asked the worker's retry
    allowance of times with its whole output budget. None: the model is unpriced.
    """
    import datetime as dt

    from niah.core.money.certify_spend import run_worst_case

    worst = run_worst_case(spec, cells, budget, now=dt.datetime.now(dt.UTC))
    return None if worst.usd is None else round(worst.usd, 6)


def certify_figures(spec: Any) -> dict[str, Any]:
    """A certification's budget: what it may spend, against the grid it replaces.

    The figures above it are the grid's with one sample a point; a certification asks
    round by round, so only its ceiling is known before it runs.
    """
    from niah.core.results.certify_run import (
        GRID_SAMPLES,
        grid_seconds,
        grid_tokens,
        grid_usd,
        plan_record,
    )

    record = plan_record(spec, None)
    return {
        "budget_usd": record["budget_usd"],
        "budget_seconds": record["budget_seconds"],
        "budget_tokens": record["max_tokens"],
        "grid_usd": grid_usd(spec),
        "grid_seconds": grid_seconds(spec),
        "grid_tokens": grid_tokens(spec),
        "grid_samples_per_point": GRID_SAMPLES,
        "threshold": spec.certify_threshold,
    }


def certify_lines(certify: dict[str, Any]) -> list[str]:
    """The certification's ceiling in words."""
    grid = f"{certify['grid_tokens']:,} prompt tokens"
    if certify["grid_usd"] is not None:
        grid = f"${certify['grid_usd']:.4f}, " + grid
    elif certify.get("grid_seconds") is not None:
        grid = f"about {certify['grid_seconds']:,.0f} s of model time, " + grid
    ceiling = [
        f"${certify['budget_usd']:.4f}" if certify["budget_usd"] is not None else "",
        f"{certify['budget_seconds']:,.0f} s of model time (estimated from the catalog's "
        "measured speed)"
        if certify.get("budget_seconds") is not None
        else "",
        f"{certify['budget_tokens']:,} prompt tokens" if certify["budget_tokens"] else "",
    ]
    return [
        f"certify (threshold {certify['threshold']:g} %): at most "
        f"{' and '.join(c for c in ceiling if c)}, against the grid with "
        f"{certify['grid_samples_per_point']} samples a point ({grid}); the rounds decide "
        "how much of it they take (docs/certify.md)"
    ]


def margin_figures(
    margin: float, expected: float | None, figures: dict[str, Any]
) -> dict[str, Any]:
    """``--margin``: samples per point for a ± ``margin`` interval, and this grid's margins.

    At the worst case (a 50 % score) and at ``expected`` if given; the grid's margins
    are for a mean per point, per length (its depths' samples) and over the run.
    """
    from niah.core.results.uncertainty import (
        CONFIDENCE,
        margin_for_samples,
        samples_for_margin,
        z_value,
    )

    per_point = int(figures["samples_per_cell"])
    per_length = per_point * int(figures["depths"])
    score = 50.0 if expected is None else expected
    return {
        "margin_points": margin,
        "confidence": CONFIDENCE,
        "z": round(z_value(), 6),
        "method": "normal approximation: n = z² p (1 - p) / margin², rounded up, every "
        "sample taken as independent",
        "worst_case": {"score_percent": 50.0, "samples_per_point": samples_for_margin(margin)},
        "expected": None
        if expected is None
        else {"score_percent": expected, "samples_per_point": samples_for_margin(margin, expected)},
        "this_grid": {
            "score_percent": score,
            "samples_per_point": per_point,
            "samples_per_length": per_length,
            "samples": int(figures["cells"]),
            "margin_per_point": round(margin_for_samples(per_point, score), 1),
            "margin_per_length": round(margin_for_samples(per_length, score), 1),
            "margin_overall": round(margin_for_samples(int(figures["cells"]), score), 1),
        },
    }


def margin_lines(margin: dict[str, Any]) -> list[str]:
    """The ``--margin`` figures as text."""
    worst, expected, grid = margin["worst_case"], margin["expected"], margin["this_grid"]
    at_expected = (
        f"; {count(expected['samples_per_point'], 'sample')} at an expected "
        f"{expected['score_percent']:g} %"
        if expected
        else ""
    )
    return [
        f"samples per point for a 95 % interval of ± {margin['margin_points']:g} points: "
        f"{count(worst['samples_per_point'], 'sample')} at the worst case (a 50 % score)"
        f"{at_expected} (normal approximation, z = {margin['z']:.6g})",
        f"this grid, at {grid['score_percent']:g} %: ± {grid['margin_per_point']:g} points per "
        f"point ({count(grid['samples_per_point'], 'sample')}), "
        f"± {grid['margin_per_length']:g} per length ({grid['samples_per_length']:,}), "
        f"± {grid['margin_overall']:g} over the run ({grid['samples']:,}), every sample taken "
        "as independent (a point's samples share its haystack: where they agree, the report's "
        "intervals, clustered by grid point, are wider)",
    ]
