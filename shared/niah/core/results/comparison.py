"""Runs side by side: their scores on the grid points they share, and where they differ.

Every run is read on one scale, the task's score in percent (``task_score`` x 100), so a
``single`` run (1-10 on its own heatmap) sits beside a multi-needle run. Only the
(length, depth) points every run has are compared; runs that share none are refused.
Every run after the first is tested against the first, sample by sample
(``niah.core.results.paired``): whether a difference is more than noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from niah.core.pages.environment import page_shell, render
from niah.core.pages.heatmap import DIFFERENCE_SCALE, PERCENT_SCALE, heatmap_figure, percent_table
from niah.core.results.certificate import certificate_summary, certified_effective_length
from niah.core.results.curves import curve_figure, measures_curve
from niah.core.results.effective import effective_length_text
from niah.core.results.measures import basis_of, measures
from niah.core.results.paired import (
    NO_DIFFERENCE,
    PairedComparison,
    PairedTest,
    paired_comparison,
    round_points,
)
from niah.core.results.paired_text import METHOD_NAMES, p_figure, points_text
from niah.core.results.ruler_table import RulerTable, Suite, suite_table
from niah.core.results.served_models import model_shown, runs_answered_by_others, served_versions
from niah.core.results.summary import ScoreTable, cost_summary, format_cost, score_table
from niah.core.results.uncertainty import with_interval
from niah.core.runs import RunRecord
from niah.errors import ComparisonError, DifferentModelsError

Point = tuple[int, float]
# A table as the ``table`` macro writes it: {"headers": [...], "rows": [[...], ...]}.
Table = dict[str, list[Any]]


@dataclass(frozen=True)
class ComparedRun:
    """One run, cut to the shared grid: its cells there and their percent table."""

    run_id: str
    run: RunRecord
    cells: list[dict[str, Any]]
    table: ScoreTable
    # Its label (``niah run --label``, else "model · task"), with the run ID when two
    # compared runs share a label.
    name: str = ""
    # A certify run's certificate as its effective length (from all of its cells, as
    # its own report says it); None for a grid run, measured on the shared grid.
    certified: dict[str, Any] | None = None


@dataclass(frozen=True)
class Comparison:
    """The runs on their shared grid, the second minus the first, and where they disagree."""

    runs: list[ComparedRun]
    difference: ScoreTable
    disagreements: list[dict[str, Any]]
    dropped_points: dict[str, int]
    # Samples of the first two runs at a shared point that the other run lacks (a
    # point sampled 2 times in one and once in the other): means, not pairs, there.
    unpaired_samples: int
    # Each later run tested against the first, overall and per length.
    paired: list[PairedComparison]
    # RULER's table, where the runs are two or more of a suite's (``compare_runs``'s).
    ruler: RulerTable | None = None


def compare_runs(
    runs: list[tuple[RunRecord, list[dict[str, Any]]]],
    *,
    allow_different_models: bool = False,
    suite: Suite | None = None,
) -> Comparison:
    """Compare two or more (run, cells) pairs on the grid points they all have.

    ``suite``: the runs of a suite (RULER's, ``niah.tasks.ruler_suite``), whose table the
    comparison shows where the runs are its.

    Raises ``ComparisonError`` naming each run's grid when they share no point, and
    ``DifferentModelsError`` naming the models when a run was answered by a model it
    did not ask for (``niah.core.results.served_models``), unless ``allow_different_models``.
    """
    if len(runs) < 2:
        raise ComparisonError("compare needs two runs or more")
    answered_by_others = runs_answered_by_others(runs)
    if answered_by_others and not allow_different_models:
        raise DifferentModelsError(
            f"{answered_by_others}: compared by the models asked for, one model would be "
            "credited with another's answers"
        )
    grids = {run.run_id: {_point(c) for c in cells} for run, cells in runs}
    for run_id, points in grids.items():
        if not points:
            raise ComparisonError(f"run {run_id} has no stored cells to compare")
    shared = set.intersection(*grids.values())
    if not shared:
        described = "; ".join(f"{run_id}: {_describe(points)}" for run_id, points in grids.items())
        raise ComparisonError(
            "these runs share no (context length, depth) grid point, so nothing can be "
            f"compared: {described}. Compare runs over the same lengths and depths."
        )
    compared = [
        ComparedRun(
            run.run_id,
            run,
            kept := [c for c in cells if _point(c) in shared],
            percent_table(score_table(kept, field="task_score")),
            certified=(
                certified_effective_length(found)
                if (found := certificate_summary(run, cells))
                else None
            ),
        )
        for run, cells in runs
    ]
    labels = [c.run.label for c in compared]
    compared = [
        replace(c, name=label if labels.count(label) == 1 else f"{label} ({c.run_id})")
        for c, label in zip(compared, labels, strict=True)
    ]
    first, second = compared[0], compared[1]
    ruler = suite_table([(c.run, c.cells) for c in compared], suite) if suite else None
    return Comparison(
        ruler=ruler,
        runs=compared,
        difference=_difference(first.table, second.table),
        disagreements=_disagreements(first, second),
        dropped_points={
            run_id: len(points - shared) for run_id, points in grids.items() if points - shared
        },
        unpaired_samples=len(
            {str(c["cell_id"]) for c in first.cells} ^ {str(c["cell_id"]) for c in second.cells}
        ),
        paired=[
            paired_comparison(
                (first.run_id, first.cells),
                (other.run_id, other.cells),
                names=(first.name, other.name),
            )
            for other in compared[1:]
        ],
    )


def _point(cell: dict[str, Any]) -> Point:
    return int(cell["context_length"]), float(cell["depth_percent"])


def _describe(points: set[Point]) -> str:
    lengths = sorted({length for length, _ in points})
    depths = sorted({depth for _, depth in points})
    shown_lengths = ", ".join(f"{n:,}" for n in lengths)
    return f"lengths {shown_lengths}; depths {', '.join(f'{d:g}' for d in depths)}"


def _difference(first: ScoreTable, second: ScoreTable) -> ScoreTable:
    """The second table minus the first, point by point; None where either has no score.

    Rounded to a tenth of a point (``round_points``): two means of the same samples can
    differ in their last bits, and a map of such noise (``5e-05``) says nothing.
    """
    scores = [
        [
            None if a is None or b is None else round_points(b - a)
            for a, b in zip(row_a, row_b, strict=True)
        ]
        for row_a, row_b in zip(first.scores, second.scores, strict=True)
    ]
    counts = [
        [min(a, b) for a, b in zip(row_a, row_b, strict=True)]
        for row_a, row_b in zip(first.counts, second.counts, strict=True)
    ]
    empty: list[list[float | None]] = [[None] * len(first.lengths) for _ in first.depths]
    return ScoreTable(first.lengths, first.depths, scores, empty, counts)


def _disagreements(first: ComparedRun, second: ComparedRun) -> list[dict[str, Any]]:
    """Samples (same cell ID) whose outcome or score differs between the two runs."""
    theirs = {str(c["cell_id"]): c for c in second.cells}
    found = []
    for cell in sorted(first.cells, key=lambda c: str(c["cell_id"])):
        other = theirs.get(str(cell["cell_id"]))
        if other is None:
            continue
        if (cell.get("outcome"), cell.get("task_score")) != (
            other.get("outcome"),
            other.get("task_score"),
        ):
            found.append(
                {
                    "cell_id": cell["cell_id"],
                    "context_length": cell["context_length"],
                    "depth_percent": cell["depth_percent"],
                    "a": _side(cell),
                    "b": _side(other),
                }
            )
    return found


def _side(cell: dict[str, Any]) -> dict[str, Any]:
    error = cell.get("error") or {}
    return {
        "outcome": cell.get("outcome") or "unscored",
        "task_score": cell.get("task_score"),
        "answer": cell.get("model_response") or error.get("message"),
    }


def render_comparison_page(comparison: Comparison) -> str:
    """The comparison as one HTML page: heatmaps on one scale, the difference, the table."""
    first, second = comparison.runs[0], comparison.runs[1]
    # Each run under the rule it chose; the effective length's text names it.
    measured = {
        c.run_id: measures(c.cells, rule=c.run.effective_length_rule) for c in comparison.runs
    }
    overview = table_of(
        comparison.runs,
        [
            ("label", lambda c: c.name),
            ("run", lambda c: c.run_id),
            ("model", lambda c: model_shown(c.run.model, served_versions(c.cells))),
            ("task", lambda c: c.run.spec.task),
            ("scorer", lambda c: c.run.scorer or "exact"),
            ("samples compared", lambda c: len(c.cells)),
            (
                "mean on the shared grid (%)",
                lambda c: with_interval(
                    measured[c.run_id]["mean"],
                    measured[c.run_id]["mean_interval"],
                    basis=basis_of(measured[c.run_id], "mean"),
                ),
            ),
            (
                "effective length",
                lambda c: effective_length_text(
                    c.certified or measured[c.run_id]["effective_length"]
                ),
            ),
            (
                "cost of the run",
                lambda c: format_cost(cost_summary(dict(c.run.totals))).removeprefix("cost "),
            ),
        ],
    )
    tested = comparison.paired[0]
    curves = [measures_curve(c.name, measured[c.run_id]) for c in comparison.runs]
    ruler = comparison.ruler
    return render(
        "comparison.html",
        **page_shell(f"Comparison: {' · '.join(c.name for c in comparison.runs)}"),
        runs=[
            {
                "name": c.name,
                "run_id": c.run_id,
                "heatmap": heatmap_figure(c.table, PERCENT_SCALE, label=f"heatmap of {c.run_id}"),
            }
            for c in comparison.runs
        ],
        overview=overview,
        notes=_notes(comparison),
        significance=[_significance(paired) for paired in comparison.paired],
        curves=curve_figure(curves, label="mean score against context length, one curve per run"),
        ruler=_ruler(ruler) if ruler else None,
        first=first.name,
        second=second.name,
        difference=heatmap_figure(
            comparison.difference,
            DIFFERENCE_SCALE,
            label=f"difference {second.name} minus {first.name}",
            marked=frozenset(n for n, test in tested.by_length.items() if test.significant),
        ),
        disagreements_count=len(comparison.disagreements),
        disagreements=_disagreement_table(comparison) if comparison.disagreements else None,
    )


def table_of(items: Sequence[Any], columns: Sequence[tuple[str, Callable[[Any], Any]]]) -> Table:
    """A table for the ``table`` macro: the headers, and a row per item (None as nothing)."""
    return {
        "headers": [name for name, _ in columns],
        "rows": [
            ["" if (v := value(item)) is None else v for _, value in columns] for item in items
        ],
    }


def _notes(comparison: Comparison) -> list[str]:
    """What the reader must know of the runs before reading their scores side by side."""
    first, second = comparison.runs[0], comparison.runs[1]
    notes = []
    if answered_by_others := runs_answered_by_others([(c.run, c.cells) for c in comparison.runs]):
        notes.append(f"Answered by other models than asked for: {answered_by_others}.")
    if comparison.dropped_points:
        left_out = ", ".join(f"{run_id} {n}" for run_id, n in comparison.dropped_points.items())
        notes.append(f"Points outside the shared grid were left out: {left_out}.")
    if comparison.unpaired_samples:
        notes.append(
            f"{comparison.unpaired_samples} samples of {first.name} and {second.name} have no "
            "partner in the other run (different samples per point): their points are "
            "compared by mean, and they are not in the table of disagreements."
        )
    return notes


def _significance(paired: PairedComparison) -> dict[str, Any]:
    """A later run against the first: the paired tests, overall and per length."""
    first, second = paired.names()
    if paired.overall is None:
        return {"first": first, "second": second, "table": None}
    rows = [("all lengths", paired.overall)] + [
        (f"{length:,}", test) for length, test in paired.by_length.items()
    ]
    return {
        "first": first,
        "second": second,
        "table": table_of(
            rows,
            [
                ("length (tokens)", lambda row: row[0]),
                ("pairs", lambda row: row[1].pairs),
                (f"{first} (%)", lambda row: f"{row[1].mean_first:.1f}"),
                (f"{second} (%)", lambda row: f"{row[1].mean_second:.1f}"),
                ("difference (points)", lambda row: points_text(row[1].effect)),
                ("95 % interval", lambda row: _bounds_text(row[1])),
                ("p", lambda row: p_figure(row[1].p_value)),
                ("verdict", lambda row: row[1].verdict),
            ],
        ),
        "method": METHOD_NAMES[paired.overall.method],
        "no_difference": NO_DIFFERENCE,
        "unscored_pairs": paired.unscored_pairs,
    }


def _bounds_text(test: PairedTest) -> str:
    if test.low is None or test.high is None:
        return "none (one pair)"
    return f"{points_text(test.low)} to {points_text(test.high)}"


def _ruler(table: RulerTable) -> dict[str, Any]:
    """RULER's table of the compared runs that are RULER's tasks (``niah run --suite``)."""
    rows: list[tuple[str, dict[int, float | None]]] = [
        *table.rows.items(),
        ("average", table.average),
    ]

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    columns = [("task", lambda row: row[0])] + [
        (f"{length:,}", lambda row, length=length: shown(row[1][length]))
        for length in table.lengths
    ]
    return {
        "table": table_of(rows, columns),
        "tasks": len(table.rows),
        "effective_length": f"{table.effective_length:,}" if table.effective_length else "none",
        "threshold": table.threshold,
    }


def _disagreement_table(comparison: Comparison) -> Table:
    first, second = comparison.runs[0].name, comparison.runs[1].name
    return table_of(
        comparison.disagreements,
        [
            ("cell", lambda d: d["cell_id"]),
            ("length", lambda d: f"{d['context_length']:,}"),
            ("depth %", lambda d: f"{d['depth_percent']:g}"),
            (f"{first} outcome", lambda d: d["a"]["outcome"]),
            (f"{first} score", lambda d: d["a"]["task_score"]),
            (f"{first} answer", lambda d: str(d["a"]["answer"] or "")[:300]),
            (f"{second} outcome", lambda d: d["b"]["outcome"]),
            (f"{second} score", lambda d: d["b"]["task_score"]),
            (f"{second} answer", lambda d: str(d["b"]["answer"] or "")[:300]),
        ],
    )
