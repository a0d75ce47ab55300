"""Summary measures of a run: the depth x length score table and the run's figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ScoreTable:
    """Scores by (depth, length); None marks a failed or missing cell."""

    lengths: list[int]
    depths: list[float]
    scores: list[list[float | None]]

    def mean(self) -> float | None:
        """Mean over the cells that have a score."""
        values = [v for row in self.scores for v in row if v is not None]
        return sum(values) / len(values) if values else None


def score_table(cells: list[dict[str, Any]]) -> ScoreTable:
    """Pivot stored cells into a depth x length table of their reported score."""
    lengths = sorted({int(c["context_length"]) for c in cells})
    depths = sorted({float(c["depth_percent"]) for c in cells})
    by_point = {(float(c["depth_percent"]), int(c["context_length"])): c for c in cells}
    scores: list[list[float | None]] = []
    for depth in depths:
        row: list[float | None] = []
        for length in lengths:
            cell = by_point.get((depth, length))
            score = cell.get("score") if cell else None
            row.append(float(score) if score is not None else None)
        scores.append(row)
    return ScoreTable(lengths, depths, scores)


def format_table(table: ScoreTable) -> str:
    """The table as text: one row per depth, one column per length; '--' for errors."""
    width = max(8, *(len(str(length)) + 1 for length in table.lengths))
    header = "depth %".rjust(8) + "".join(str(n).rjust(width) for n in table.lengths)
    lines = [header]
    for depth, row in zip(table.depths, table.scores, strict=True):
        values = "".join(("--" if v is None else f"{v:g}").rjust(width) for v in row)
        lines.append(f"{depth:8g}{values}")
    return "\n".join(lines)


def summarize(run: dict[str, Any], cells: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's summary: counts, mean score, retrieval share, timings, the table."""
    table = score_table(cells)
    answered = [c for c in cells if c.get("status") == "answered"]
    retrieved = [c for c in answered if c.get("exact_score") == 10]
    model_seconds = [float(c.get("model_seconds", 0)) for c in answered]
    deviations = [
        int(c["prompt_token_deviation"])
        for c in answered
        if c.get("prompt_token_deviation") is not None
    ]
    judged = [c["judge_score"] for c in answered if c.get("judge_score") is not None]
    return {
        "run_id": run["run_id"],
        "model": run.get("model"),
        "version": run.get("version"),
        "haystack_uri": run.get("haystack_uri"),
        "scorer": run.get("scorer", "exact"),
        "cells": len(cells),
        "answered": len(answered),
        "failed": len(cells) - len(answered),
        "retrieved": len(retrieved),
        "retrieved_share": round(len(retrieved) / len(answered), 4) if answered else None,
        "mean_score": round(m, 3) if (m := table.mean()) is not None else None,
        "mean_model_seconds": _mean(model_seconds),
        "mean_exact_score": _mean([c["exact_score"] for c in answered if "exact_score" in c]),
        "mean_judge_score": _mean(judged),
        "totals": run.get("totals", {}),
        "cost_usd": round(float(run.get("totals", {}).get("cost_usd", 0.0)), 6),
        # The API's prompt token count minus the requested length: how honest the
        # lengths on the x axis are.
        "prompt_token_deviation": {
            "mean": _mean(deviations),
            "max_abs": max((abs(d) for d in deviations), default=None),
        },
        "errors": {
            c["cell_id"]: c.get("error", {}).get("message") for c in cells if c.get("error")
        },
        "table": {"lengths": table.lengths, "depths": table.depths, "scores": table.scores},
    }


def _mean(values: list[int] | list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None
