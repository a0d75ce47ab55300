"""The report: a heatmap PNG and a JSON summary of a finished run, in Cloud Storage."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

from niah.blobs import BlobStore, gs_uri
from niah.errors import ReportPendingError
from niah.logs import log
from niah.settings import get_settings
from niah.store import ResultStore

# Longer than rendering takes (seconds), shorter than Pub/Sub keeps redelivering.
REPORT_LEASE_SECONDS = 300.0

# The harness's red-yellow-green scale.
HARNESS_COLOURS = ("#F0496E", "#EBB839", "#0CD79F")
ERROR_COLOUR = "#BDBDBD"


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


def render_heatmap(table: ScoreTable, *, title: str) -> bytes:
    """The harness's heatmap: x context length, y depth, red-yellow-green, grey errors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.patches import Patch

    data = np.array(
        [[np.nan if v is None else v for v in row] for row in table.scores], dtype=float
    )
    cmap = LinearSegmentedColormap.from_list("niah", list(HARNESS_COLOURS)).with_extremes(
        bad=ERROR_COLOUR
    )
    figure, axes = plt.subplots(figsize=(max(6.0, 0.9 * len(table.lengths) + 3), 5.5))
    image = axes.imshow(np.ma.masked_invalid(data), cmap=cmap, vmin=1, vmax=10, aspect="auto")
    axes.set_xticks(range(len(table.lengths)), [f"{n:,}" for n in table.lengths], rotation=45)
    axes.set_yticks(range(len(table.depths)), [f"{d:g}" for d in table.depths])
    axes.set_xlabel("Context length (tokens)")
    axes.set_ylabel("Depth percent")
    axes.set_title(title)
    if len(table.lengths) * len(table.depths) <= 200:
        for (row, col), value in np.ndenumerate(data):
            if not np.isnan(value):
                axes.text(col, row, f"{value:g}", ha="center", va="center", fontsize=8)
    figure.colorbar(image, ax=axes, label="Score")
    if np.isnan(data).any():
        axes.legend(
            handles=[Patch(color=ERROR_COLOUR, label="error")],
            loc="upper left",
            bbox_to_anchor=(1.25, 1.0),
            frameon=False,
        )
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()


def render_report(run_id: str, *, store: ResultStore, blobs: BlobStore) -> dict[str, str] | None:
    """Render and store the run's report once every cell is in; rendered once.

    Returns the report's location, or None if the run is unknown or not finished.
    Raises ``ReportPendingError`` (retry) while another instance holds the report.
    """
    run = store.get_run(run_id)
    if run is None:
        log("report for an unknown run dropped", severity="WARNING", run_id=run_id)
        return None
    cells = store.list_cells(run_id)
    if len(cells) < int(run.get("total", 0)):
        log("report requested before the last cell", run_id=run_id, stored=len(cells))
        return None
    claim = store.claim_report(run_id, REPORT_LEASE_SECONDS)
    if claim == "done":
        log("duplicate report request suppressed", run_id=run_id)
        return dict((store.get_run(run_id) or {}).get("report") or {})
    if claim == "held":
        # Another renderer is at work; if it dies its lease expires and a redelivery of
        # this message renders the report.
        raise ReportPendingError(f"the report of {run_id} is being rendered elsewhere")
    summary = summarize(run, cells)
    scorer = summary["scorer"]
    title = (
        f"{run.get('model')} · {scorer} score · mean {summary['mean_score']}"
        f" · {summary['failed']} errors · ${summary['cost_usd']:.4f}"
    )
    prefix = f"{get_settings().reports_prefix}{run_id}/"
    blobs.write(
        prefix + "heatmap.png",
        render_heatmap(score_table(cells), title=title),
        content_type="image/png",
    )
    blobs.write(
        prefix + "summary.json",
        json.dumps(summary, indent=2).encode(),
        content_type="application/json",
    )
    location = {
        "heatmap_uri": gs_uri(blobs.bucket, prefix + "heatmap.png"),
        "summary_uri": gs_uri(blobs.bucket, prefix + "summary.json"),
    }
    store.update_run(
        run_id,
        {
            "status": "complete",
            "report": location,
            "mean_score": summary["mean_score"],
            "retrieved_share": summary["retrieved_share"],
            "prompt_token_deviation": summary["prompt_token_deviation"],
        },
    )
    log("report written", run_id=run_id, **location)
    return location
