"""RULER's suite: one valid run per RULER task the service has, and RULER's table."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from niah.cli.suite import run_suite
from niah.core.results.comparison import compare_runs, render_comparison_page
from niah.core.results.ruler_table import format_ruler_table
from niah.core.runs import RunRecord
from niah.service.runs.request_body import parse_request
from niah.tasks.ruler_suite import (
    LEFT_OUT,
    RULER_RUNS,
    ruler_table,
    ruler_task_name,
    suite_requests,
)
from tests.fakes import run_records

USER = {"model_name": "gemini-2.5-flash", "context_lengths": [4000, 8000], "seed": 3}


def test_the_suite_is_one_valid_run_per_ruler_task_at_the_same_grid() -> None:
    requests = suite_requests("ruler", USER | {"samples_per_cell": 5})
    assert [name for name, _ in requests] == list(RULER_RUNS)
    # RULER's 13 tasks: the 9 run here and the 4 left out, each with its reason.
    assert len(RULER_RUNS) + len(LEFT_OUT) == 13
    tasks = set()
    for name, body in requests:
        spec = parse_request(body)  # the dispatcher accepts each as it is
        assert spec.lengths() == [4000, 8000]
        assert spec.samples_per_cell == 5
        assert ruler_task_name(spec.model_dump()) == name
        tasks.add(spec.task)
    assert {"variable_tracking", "common_words", "frequent_words"} <= tasks


@pytest.mark.parametrize("option", ["task", "num_values", "haystack_dir", "alpha"])
def test_an_option_the_suite_sets_is_refused_by_name(option: str) -> None:
    with pytest.raises(ValueError, match=f"sets {option}"):
        suite_requests("ruler", USER | {option: 1})


def cells_of(scores: dict[int, list[float]]) -> list[dict[str, Any]]:
    return [
        {"context_length": length, "task_score": score}
        for length, values in scores.items()
        for score in values
    ]


def suite_runs(scores: dict[str, dict[int, list[float]]]) -> list[Any]:
    return [
        (
            {"run_id": f"run-{name}", "spec": parse_request(body).model_dump()},
            cells_of(scores[name]),
        )
        for name, body in suite_requests("ruler", USER)
        if name in scores
    ]


def test_the_table_is_rulers_means_average_and_effective_length() -> None:
    table = ruler_table(
        run_records(
            suite_runs(
                {
                    "vt": {4000: [1.0, 0.8], 8000: [0.6, 0.6], 16000: [1.0]},
                    "cwe": {4000: [1.0, 1.0], 8000: [1.0, 1.0], 16000: [1.0]},
                    "fwe": {4000: [0.6667, 1.0], 8000: [1.0, 1.0], 16000: [1.0]},
                }
            )
        )
    )
    assert table is not None
    assert list(table.rows) == ["vt", "cwe", "fwe"]  # RULER's order
    assert table.rows["vt"] == {4000: 90.0, 8000: 60.0, 16000: 100.0}
    assert table.average == {4000: 91.11, 8000: 86.67, 16000: 100.0}
    # 8000 is above 85.6; so is 16000, and every length before it.
    assert table.effective_length == 16000
    text = format_ruler_table(table)
    assert "average" in text and "86.7" in text and "effective length: 16,000" in text


def test_the_effective_length_stops_at_the_first_average_at_or_below_85_6() -> None:
    table = ruler_table(
        run_records(
            suite_runs(
                {"vt": {1: [1.0], 2: [0.856], 3: [1.0]}, "cwe": {1: [1.0], 2: [0.856], 3: [1.0]}}
            )
        )
    )
    assert table is not None and table.effective_length == 1
    low = ruler_table(run_records(suite_runs({"vt": {1: [0.5]}, "cwe": {1: [0.5]}})))
    assert low is not None and low.effective_length is None


def test_runs_of_other_kinds_make_no_table() -> None:
    other: tuple[dict[str, Any], list[dict[str, Any]]] = (
        {"run_id": "x", "spec": parse_request({"task": "single"}).model_dump()},
        [],
    )
    assert ruler_table(run_records([other, *suite_runs({"vt": {1: [1.0]}})])) is None


def test_the_comparison_page_shows_rulers_table() -> None:
    runs = suite_runs({"vt": {4000: [1.0]}, "cwe": {4000: [0.5]}, "fwe": {4000: [1.0]}})
    for run, cells in runs:
        for cell in cells:
            cell |= {"depth_percent": 50.0, "cell_id": "L00004000-D050000", "outcome": "correct"}
        run |= {"model": "m", "scorer": "task"}
    page = render_comparison_page(compare_runs(run_records(runs), suite=RULER_RUNS))
    assert 'id="section-ruler"' in page
    assert "83.3" in page  # the average of 100, 50 and 100


def test_the_suite_submits_every_run_and_prints_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    submitted: list[dict[str, Any]] = []

    def submit(body: dict[str, Any]) -> dict[str, Any]:
        submitted.append(body)
        return {"run_id": f"run-{len(submitted)}", "cells": 2}

    class Store:
        def list_cells(self, run_id: str) -> list[dict[str, Any]]:
            return cells_of({4000: [1.0], 8000: [1.0]})

    specs = {
        f"run-{i + 1}": parse_request(b).model_dump()
        for i, (_, b) in enumerate(suite_requests("ruler", USER))
    }
    args = argparse.Namespace(
        suite="ruler", estimate=False, resume=None, json=False, wait=True, timeout=5
    )
    status = run_suite(
        args,
        dict(USER),
        submit=submit,
        wait=lambda run_id, timeout: RunRecord.from_document(
            {"spec": specs[run_id], "status": "complete"}, run_id
        ),
        store=Store,
    )
    assert status == 0
    assert len(submitted) == len(RULER_RUNS)
    out = capsys.readouterr().out
    assert "niah_multikey_2: left out" in out
    assert "effective length: 8,000" in out
    assert out.count("100.0") == 2 * (len(RULER_RUNS) + 1)
