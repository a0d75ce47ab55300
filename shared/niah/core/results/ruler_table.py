"""RULER's table of a suite's runs: per task and length the mean score, the averages, the rule.

The suite (which runs are RULER's tasks, under which names) is the caller's: its runs are
made of the tasks' options (``niah.tasks.ruler_suite``); this module reads stored runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from niah.core.results.effective import RULER_THRESHOLD
from niah.core.runs import RunRecord

# A suite: each of its runs by name, as the run options that make it.
Suite = Mapping[str, Mapping[str, Any]]


def suite_run_name(spec: Mapping[str, Any], suite: Suite) -> str | None:
    """Which of the suite's runs a run's stored spec is, or None."""
    for name, options in suite.items():
        if all(spec.get(key) == value for key, value in options.items()):
            return name
    return None


@dataclass(frozen=True)
class RulerTable:
    """RULER's table: per task and length the mean score (percent), the averages, the rule."""

    lengths: list[int]
    rows: dict[str, dict[int, float | None]]
    average: dict[int, float | None]
    effective_length: int | None
    threshold: float = RULER_THRESHOLD


def suite_table(
    runs: list[tuple[RunRecord, list[dict[str, Any]]]], suite: Suite
) -> RulerTable | None:
    """RULER's table of the runs that are the suite's; None when fewer than two are.

    Each (task, length) is the mean of its scored samples' ``task_score`` x 100 (RULER's
    recall averaged over samples); unscored and truncated samples are left out, as in
    the run's own measures. A task run twice keeps its first run.
    """
    named: dict[str, list[dict[str, Any]]] = {}
    for run, cells in runs:
        name = suite_run_name(run.spec_fields, suite)
        if name is not None and name not in named:
            named[name] = cells
    if len(named) < 2:
        return None
    lengths = sorted({int(c["context_length"]) for cells in named.values() for c in cells})
    rows = {
        name: {length: _mean(named[name], length) for length in lengths}
        for name in suite
        if name in named
    }
    average: dict[int, float | None] = {}
    for length in lengths:
        values = [value for row in rows.values() if (value := row[length]) is not None]
        average[length] = round(statistics.fmean(values), 2) if values else None
    effective = None
    for length in lengths:
        value = average[length]
        if value is None or value <= RULER_THRESHOLD:
            break
        effective = length
    return RulerTable(lengths, rows, average, effective)


def _mean(cells: list[dict[str, Any]], length: int) -> float | None:
    scores = [
        float(c["task_score"])
        for c in cells
        if int(c["context_length"]) == length and c.get("task_score") is not None
    ]
    return round(100 * statistics.fmean(scores), 2) if scores else None


def format_ruler_table(table: RulerTable) -> str:
    """The table as text: a row per task, a column per length, the average, the rule."""
    width = max(len(name) for name in [*table.rows, "average"])

    def line(label: str, values: dict[int, float | None]) -> str:
        cells = "".join(
            f"{'-' if values[length] is None else f'{values[length]:.1f}':>10}"
            for length in table.lengths
        )
        return f"{label:<{width}}{cells}"

    header = f"{'task':<{width}}" + "".join(f"{length:>10,}" for length in table.lengths)
    lines = [header, *(line(name, row) for name, row in table.rows.items())]
    lines.append(line("average", table.average))
    effective = f"{table.effective_length:,}" if table.effective_length else "none"
    lines.append(
        f"effective length: {effective} (the longest length up to which every average is "
        f"above {table.threshold}, Llama-2-7B's; the average of {len(table.rows)} of "
        "RULER's 13 tasks)"
    )
    return "\n".join(lines)
