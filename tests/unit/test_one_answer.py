"""Issue 37: every surface says the same effective length, with how sure it is.

The heatmap PNG's notes once printed "effective length 4,000" for a run whose HTML report
said "not determined: ... the 95 % intervals allow none to 4,000". Here one run of each
kind (determined, resting on noise, none passing) is shown on every surface (the PNG's
notes, the HTML report, ``niah status``, the runs index, ``niah compare`` and the
exported summary) and each must carry the one sentence, word for word.
"""

from __future__ import annotations

import html

import pytest

from niah.cli.results import measures_lines
from niah.core.pages.report_page import render_run_page
from niah.core.pages.run_index import index_entry
from niah.core.results.comparison import compare_runs, render_comparison_page
from niah.core.results.summary import summarize
from niah.core.runs import ListedRun, RunRecord
from niah.service.reports.png import heatmap_notes
from tests.fakes import run_records
from tests.unit.test_report_page import cell, run_doc

pytestmark = pytest.mark.unit


def samples(length: int, right: int, wrong: int) -> list[dict]:
    """``right`` correct and ``wrong`` wrong samples at one point (depth 50)."""
    oks = [True] * right + [False] * wrong
    return [cell(length, 50.0, ok, sample=n) for n, ok in enumerate(oks)]


CASES = {
    # 30 of 30 at 2,000 (Wilson low 88.6 %) clears RULER's 85.6 surely; 4,000 scores 0.
    "determined": (
        samples(2000, 30, 0) + samples(4000, 0, 30),
        "2,000 tokens, 95 % confident (threshold 85.6 %, rule ruler: fixed, as in RULER)",
    ),
    # 2 of 2 at 2,000 passes by the mean, but its interval (34.2-100 %) straddles 85.6.
    "resting on noise": (
        samples(2000, 2, 0) + samples(4000, 0, 2),
        "not determined: 2,000 tokens by the means, but the 95 % intervals allow none to "
        "2,000 (threshold 85.6 %, rule ruler: fixed, as in RULER; more samples per point "
        "narrow them)",
    ),
    "none passing": (
        samples(2000, 0, 3) + samples(4000, 0, 3),
        "not determined (no length scored 85.6 % or more; rule ruler: fixed, as in RULER)",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_every_surface_says_the_one_effective_length_sentence(case: str) -> None:
    cells, sentence = CASES[case]
    run = run_doc("run-e")
    summary = summarize(RunRecord.from_document(run), cells)
    measures = summary["measures"]
    assert measures["effective_length"]["text"] == sentence  # the exported summary's
    assert f"effective length {sentence} · " in heatmap_notes(
        summary, RunRecord.from_document(run)
    )  # PNG
    assert f"<dd>{html.escape(sentence)}</dd>" in render_run_page(
        RunRecord.from_document(run), cells, summary
    )
    reported = run | {"measures": measures, "outcomes": summary["outcomes"]}
    assert f"; effective length {sentence}; " in "\n".join(
        measures_lines(RunRecord.from_document(reported))
    )
    assert index_entry(ListedRun.from_document(reported))["effective_length_text"] == sentence
    twin = run_doc("run-f")
    page = render_comparison_page(compare_runs(run_records([(run, cells), (twin, cells)])))
    assert page.count(html.escape(sentence)) == 2  # one cell per run
