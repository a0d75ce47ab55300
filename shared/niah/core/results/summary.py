"""Summary measures of a run: the depth x length score table and the run's figures.

A grid point holds one or more samples; its value is the mean of the samples that were
scored (an unscored sample never counts as a miss), with their standard deviation.
``task_score`` is in [0, 1] for every task and drives the run's measures: the mean per
length, per depth and overall, the effective length and the area under the curve.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from niah.core.money.pricing import spend_summary
from niah.core.prompts.count_fit import fit_note, fit_summary
from niah.core.prompts.token_fit import token_count_note
from niah.core.results.certificate import certificate_summary, certified_effective_length
from niah.core.results.measures import mean_percent, measures
from niah.core.results.served_models import answered_by_text, served_versions
from niah.core.results.uncertainty import interval
from niah.core.results.variants import (
    axis_effective_length,
    has_axis,
    task_rates,
    variant_differences,
    variant_summaries,
)
from niah.core.runs import RunRecord

# A sample's outcomes: scored right or wrong, unscored (failed, blocked, no judge score),
# or truncated (the reply hit its output budget: never scored, never wrong).
OUTCOMES = ("correct", "wrong", "unscored", "truncated")


@dataclass(frozen=True)
class ScoreTable:
    """Mean scores by (depth, length), their spread and sample counts.

    None marks a point with nothing scored (failed, unscored or missing): grey.
    """

    lengths: list[int]
    depths: list[float]
    scores: list[list[float | None]]
    stds: list[list[float | None]]
    counts: list[list[int]]
    # Each point's 95 % interval of ``task_score``'s mean, in percent (None: none).
    intervals: list[list[list[float] | None]] | None = None

    def mean(self) -> float | None:
        """Mean over the points that have a score."""
        values = [v for row in self.scores for v in row if v is not None]
        return sum(values) / len(values) if values else None


def score_table(cells: list[dict[str, Any]], field: str = "score") -> ScoreTable:
    """Pivot stored samples into a depth x length table of ``field``'s mean."""
    lengths = sorted({int(c["context_length"]) for c in cells})
    depths = sorted({float(c["depth_percent"]) for c in cells})
    values: dict[tuple[float, int], list[float]] = {}
    task_scores: dict[tuple[float, int], list[float]] = {}
    for cell in cells:
        point = (float(cell["depth_percent"]), int(cell["context_length"]))
        score = cell.get(field)
        values.setdefault(point, [])
        if score is not None:
            values[point].append(float(score))
        if cell.get("task_score") is not None:
            task_scores.setdefault(point, []).append(float(cell["task_score"]))
    scores, stds, counts, intervals = [], [], [], []
    for depth in depths:
        found = [values.get((depth, length), []) for length in lengths]
        scores.append([statistics.fmean(v) if v else None for v in found])
        stds.append([statistics.pstdev(v) if v else None for v in found])
        counts.append([len(v) for v in found])
        intervals.append(
            [
                i.as_list() if (i := interval(task_scores.get((depth, length), []))) else None
                for length in lengths
            ]
        )
    return ScoreTable(lengths, depths, scores, stds, counts, intervals)


def format_table(table: ScoreTable) -> str:
    """The table as text: one row per depth, one column per length; '--' for nothing scored.

    With repeats, each value is the mean, followed by its standard deviation.
    """
    if not table.lengths:
        return "no cells stored yet"
    repeats = any(n > 1 for row in table.counts for n in row)

    def show(mean: float | None, std: float | None) -> str:
        if mean is None:
            return "--"
        return f"{mean:.3g}±{std:.2g}" if repeats and std is not None else f"{mean:.3g}"

    width = max(8, *(len(str(length)) + 1 for length in table.lengths)) + (6 if repeats else 0)
    header = "depth %".rjust(8) + "".join(str(n).rjust(width) for n in table.lengths)
    lines = [header]
    for depth, row, spread in zip(table.depths, table.scores, table.stds, strict=True):
        values = "".join(show(m, s).rjust(width) for m, s in zip(row, spread, strict=True))
        lines.append(f"{depth:8g}{values}")
    return "\n".join(lines)


def mrcr_bins(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """MRCR v2's figures, as the model cards report them (percent of the mean score).

    Samples are binned by their transcript's token count into (4K, 8K], (8K, 16K], ...
    (google-deepmind/eval_hub mrcr_v2/mrcr_utils.py ``get_contexts`` at 67b7fd2; at most
    4K is its own bin here); ``cumulative_128k`` is the mean over every sample up to
    131,072 tokens and ``at_1m`` the mean of the (524,288, 1,048,576] bin.
    """
    scored = [c for c in cells if c.get("task_score") is not None]
    bins: dict[str, list[float]] = {}
    for cell in sorted(scored, key=lambda c: int(c["context_length"])):
        bins.setdefault(_mrcr_bin(int(cell["context_length"])), []).append(
            float(cell["task_score"])
        )
    up_to_128k = [float(c["task_score"]) for c in scored if int(c["context_length"]) <= 131_072]
    at_1m = [
        float(c["task_score"]) for c in scored if 524_288 < int(c["context_length"]) <= 1_048_576
    ]
    return {
        "bins": {name: mean_percent(values) for name, values in bins.items()},
        "samples_per_bin": {name: len(values) for name, values in bins.items()},
        "cumulative_128k": mean_percent(up_to_128k),
        "at_1m": mean_percent(at_1m),
    }


GENERATED_MRCR_NOTE = (
    "generated samples, not Google's MRCR v2 files: not comparable to the model cards"
)


def _mrcr_provenance(run: RunRecord) -> dict[str, Any]:
    """Whose samples these are: Google's files, or generated here (and so not comparable)."""
    if run.source_files:
        return {"samples": "Google's published MRCR v2 files", "files": list(run.source_files)}
    return {"samples": GENERATED_MRCR_NOTE}


def mrcr_bin_upper(tokens: int) -> int:
    """The upper end of the MRCR v2 bin a transcript of ``tokens`` falls in (4K, 8K...)."""
    upper = 4096
    while tokens > upper:
        upper *= 2
    return upper


def _mrcr_bin(tokens: int) -> str:
    upper = mrcr_bin_upper(tokens)
    return "<=4K" if upper == 4096 else f"{_k(upper // 2)}-{_k(upper)}"


def _k(tokens: int) -> str:
    return f"{tokens // 1_048_576}M" if tokens >= 1_048_576 else f"{tokens // 1024}K"


def summarize(
    run: RunRecord,
    cells: list[dict[str, Any]],
    calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run's summary: counts, outcomes, scores, measures, timings, spend, the table."""
    table = score_table(cells)
    task = run.spec.task
    answered = [c for c in cells if c.get("status") == "answered"]
    retrieved = [c for c in answered if c.get("exact_score") == 10]
    model_seconds = [float(c.get("model_seconds", 0)) for c in answered]
    deviations = [
        int(c["prompt_token_deviation"])
        for c in answered
        if c.get("prompt_token_deviation") is not None
    ]
    judged = [c["judge_score"] for c in answered if c.get("judge_score") is not None]
    outcomes = {name: 0 for name in OUTCOMES}
    for cell in cells:
        outcomes[str(cell.get("outcome") or "unscored")] += 1
    served = served_versions(cells)
    rule = run.effective_length_rule
    measured = measures(cells, rule=rule)
    certificate = certificate_summary(run, cells)
    if certificate:  # a certify run: its certificate is the effective length everywhere
        measured["effective_length"] = certified_effective_length(certificate)
    axis: dict[str, Any] = {}
    if has_axis(cells):
        # Each value of the axis apart, and the later ones against the first: a mean or a
        # length pooled over 0 and 4 distractors is no one's answer. The pooled figures
        # stay in the JSON for scripts, marked, and no page shows them.
        variants = variant_summaries(cells, rule=rule)
        measured["effective_length"] = axis_effective_length(variants, rule)
        measured["pooled_over_variants"] = True
        axis = {"variants": variants, "variant_differences": variant_differences(cells)}
    return {
        "run_id": run.run_id,
        "model": run.model or None,
        # What answered (each reply's modelVersion, with its samples), and a sentence
        # when that is not the model asked for: Google routes some IDs to others.
        "served_models": served,
        "answered_by": answered_by_text(run.model, served),
        "task": task,
        "version": run.version,
        "haystack_uri": run.haystack_uri or None,
        "scorer": run.scorer or "exact",
        # The heatmap's scale: the harness's 1-10 for single, a fraction for the others.
        "score_scale": "1-10" if task == "single" else "fraction",
        "cells": len({(c["context_length"], c["depth_percent"], c.get("variant")) for c in cells}),
        "samples": len(cells),
        "answered": len(answered),
        "failed": len(cells) - len(answered),
        "outcomes": outcomes,
        "retrieved": len(retrieved),
        "retrieved_share": round(len(retrieved) / len(answered), 4) if answered else None,
        "mean_score": round(m, 3) if (m := table.mean()) is not None else None,
        "measures": measured,
        **({"certificate": certificate} if certificate else {}),
        **({"mrcr": mrcr_bins(cells) | _mrcr_provenance(run)} if task == "mrcr" else {}),
        # What guessing scores on this task (MRCR v2, multi_needle), shown beside the score.
        **({"chance_floor": floor} if (floor := run.spec.task_options.chance_floor()) else {}),
        **task_rates(cells),
        **axis,
        "mean_model_seconds": _mean(model_seconds),
        "mean_exact_score": _mean([c["exact_score"] for c in answered if "exact_score" in c]),
        "mean_judge_score": _mean(judged),
        "totals": dict(run.totals),
        **cost_summary(dict(run.totals)),
        "spend": spend_summary(calls or [], run.model, run.tier),
        # The API's prompt token count minus the requested length: how honest the
        # lengths on the x axis are.
        "prompt_token_deviation": {
            "mean": _mean(deviations),
            "max_abs": max((abs(d) for d in deviations), default=None),
        },
        # How the model counts the haystack against the local tokenizer (measured once by
        # countTokens; niah.core.prompts.token_fit), each cell's own share, and the report's line.
        "token_count": dict(run.token_count) if run.token_count else None,
        "token_count_deviation_percent": _mean(
            [
                float(c["token_count_deviation_percent"])
                for c in answered
                if c.get("token_count_deviation_percent") is not None
            ]
        ),
        "token_count_note": token_count_note(dict(run.token_count) if run.token_count else None),
        # Cells fitted to countTokens (a model whose tokenizer we do not hold): how close.
        "count_fit": (fit := fit_summary(answered)),
        "count_fit_note": fit_note(fit),
        "errors": {
            c["cell_id"]: c.get("error", {}).get("message") for c in cells if c.get("error")
        },
        "table": {
            "lengths": table.lengths,
            "depths": table.depths,
            "scores": table.scores,
            "stds": table.stds,
            "samples": table.counts,
            "intervals": table.intervals,
        },
    }


def cost_summary(totals: dict[str, Any]) -> dict[str, Any]:
    """The run's cost as billed, or None (unknown) when any cell had no known price.

    Never $0 for an unknown price: the priced part and the unpriced count are given
    beside it. The cached share is the part of the prompt tokens served from cache.
    """
    unpriced = int(totals.get("unpriced_cells", 0))
    priced = round(float(totals.get("cost_usd", 0.0)), 6)
    prompt = float(totals.get("prompt_tokens", 0.0))
    cached = float(totals.get("cached_tokens", 0.0))
    return {
        "cost_usd": None if unpriced else priced,
        "cost_priced_part_usd": priced,
        "unpriced_cells": unpriced,
        "cost_without_cache_usd": round(float(totals.get("cost_without_cache_usd", 0.0)), 6),
        "cached_share": round(cached / prompt, 4) if prompt else None,
    }


def format_spend(spend: dict[str, Any]) -> str:
    """The spend line: every call paid for, and what is estimated or unknown."""
    usd = "unknown" if spend["usd"] is None else f"${spend['usd']:.4f}"
    cut = spend["cut_off_calls"]
    estimated = (
        f"; {cut} cut off mid-call, input estimated at ${spend['estimated_usd']:.4f}"
        if cut and spend["estimated_usd"] is not None
        else (f"; {cut} cut off mid-call, unpriced" if cut else "")
    )
    return (
        f"spend: {spend['calls']} model calls ({spend['answered_calls']} answered, "
        f"{spend['error_calls']} errors){estimated}: {usd}"
    )


def format_cost(summary: dict[str, Any]) -> str:
    """The cost as a person should read it: dollars, or unknown with what is known."""
    if summary["cost_usd"] is not None:
        return f"cost ${summary['cost_usd']:.4f}"
    unpriced = summary["unpriced_cells"]
    known = summary["cost_priced_part_usd"]
    priced_part = f"; the priced cells ${known:.4f}" if known else ""
    return f"cost unknown ({unpriced} cell{'s' * (unpriced != 1)} without a price{priced_part})"


def failure_reasons(cells: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Failed, unscored and truncated samples grouped by reason, the commonest first."""
    reasons: dict[str, list[str]] = {}
    for cell in cells:
        error = cell.get("error") or {}
        if error:
            reason = f"failed ({error.get('kind')}): {str(error.get('message'))[:160]}"
        elif cell.get("outcome") in ("unscored", "truncated"):
            reason = f"{cell['outcome']}: {str(cell.get('unscored_reason'))[:200]}"
        else:
            continue
        reasons.setdefault(reason, []).append(str(cell.get("cell_id")))
    return dict(sorted(reasons.items(), key=lambda item: -len(item[1])))


def _mean(values: list[int] | list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None
