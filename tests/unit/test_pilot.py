"""Issue 54: a plan's assumptions measured on pilot runs (``niah plan --pilot``).

The pilots are drawn from the plan's own outcome model (``test_power.draw_runs``) with
known icc and coupling, stored as cells, and read back as ``niah plan`` reads them.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from niah.cli import backend
from niah.core.results.pilot import pilot_figures, point_icc
from niah.core.results.power import PlanAssumptions
from tests.cli_inprocess import niah
from tests.fake_store import MemoryStore
from tests.unit.test_plan_cli import GRID, QUESTION
from tests.unit.test_power import draw_runs

LENGTHS = (1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000, 1000000)


def as_cells(outcomes: np.ndarray) -> list[dict[str, Any]]:
    """One run's outcomes (points x samples) as stored cells: 11 lengths x 5 depths."""
    return [
        {
            "context_length": LENGTHS[point // 5],
            "depth_percent": float(point % 5 * 25),
            "sample": sample,
            "task_score": float(outcomes[point, sample]),
        }
        for point in range(outcomes.shape[0])
        for sample in range(outcomes.shape[1])
    ]


def pilots(icc: float, coupling: float, seed: int) -> tuple[list[dict[str, Any]], ...]:
    """Two runs of 55 points x 10 samples, the second 5 points below an 85 % first."""
    assumptions = PlanAssumptions(expected_score=85, detect=5, icc=icc, coupling=coupling)
    first, second = draw_runs(assumptions, 55, 10, 1, np.random.default_rng(seed))
    return as_cells(first[0]), as_cells(second[0])


@pytest.mark.parametrize(("icc", "coupling"), [(0.3, 0.6), (0.1, 0.0), (0.5, 0.9)])
def test_a_pilot_reads_back_the_icc_and_coupling_it_was_drawn_with(
    icc: float, coupling: float
) -> None:
    found = [pilot_figures(*pilots(icc, coupling, seed)) for seed in range(10)]
    mean_icc = float(np.mean([f.icc for f in found if f.icc is not None]))
    mean_coupling = float(np.mean([f.coupling for f in found if f.coupling is not None]))
    assert abs(mean_icc - icc) < 0.06, mean_icc
    assert abs(mean_coupling - coupling) < 0.06, mean_coupling
    assert all(f.points == 55 and f.samples == f.pairs == 550 for f in found)
    assert abs(float(np.mean([f.expected_score for f in found])) - 85) < 2.5


def test_one_sample_a_point_measures_no_icc_and_says_why() -> None:
    cells = [c for c in pilots(0.3, 0.5, 1)[0] if c["sample"] == 0]
    assert point_icc(cells) is None
    found = pilot_figures(cells)
    assert found.icc is None and found.coupling is None and found.expected_score is not None
    assert "--samples_per_cell 2 or more" in found.why_not[0]


def test_graded_scores_measure_no_coupling() -> None:
    first, second = pilots(0.3, 0.5, 2)
    second = [c | {"task_score": 0.5} for c in second]
    found = pilot_figures(first, second)
    assert found.coupling is None and "graded" in found.why_not[0]


def test_plan_takes_the_pilot_s_figures_where_none_are_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    for run_id, cells in zip(("run-a", "run-b"), pilots(0.3, 0.6, 3), strict=True):
        store.runs[run_id] = {"spec": {}}
        store.cells[run_id] = {f"c{i}": cell for i, cell in enumerate(cells)}
    monkeypatch.setattr(backend, "result_store", lambda: store)
    done = niah("plan", *GRID, "--detect", "10", "--pilot", "run-a", "run-b", "--json")
    assert done.returncode == 0, done.stderr
    planned = json.loads(done.stdout)
    measured = pilot_figures(store.list_cells("run-a"), store.list_cells("run-b"))
    assumed = planned["assumptions"]
    assert (assumed["icc"], assumed["coupling"]) == (measured.icc, measured.coupling)
    assert planned["question"]["expected_score"] == measured.expected_score
    assert assumed["from"] == {
        "expected_score": "run-a", "icc": "run-a", "coupling": "run-a and run-b"
    }  # fmt: skip
    assert "pilot run-a and run-b: 550 scored samples in 55 points, 550 pairs" in planned["notes"]
    text = niah("plan", *GRID, "--detect", "10", "--pilot", "run-a", "run-b")
    assert f"intra-cluster correlation {measured.icc:.2g} (measured on run-a)" in text.stdout
    assert f"coupling {measured.coupling:.2g} (measured on run-a and run-b)" in text.stdout
    # A figure given on the command line wins over the pilot's.
    given = niah("plan", *GRID, *QUESTION, "--icc", "0.2", "--pilot", "run-a")
    assert given.returncode == 0, given.stderr
    assert "intra-cluster correlation 0.2 (how alike" in given.stdout
    assert "coupling 0 (0: the two runs" in given.stdout  # one pilot: no coupling measured
    missing = niah("plan", *GRID, *QUESTION, "--pilot", "run-zzz")
    assert missing.returncode == 1 and "no run run-zzz" in missing.stderr
