"""Chance floors beside the scores: MRCR v2's published ones, multi_needle's derived one."""

from __future__ import annotations

import random
from typing import Any

import pytest

from niah.core.pages.report_page import render_run_page
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.chance import SEEDED_NUMBERS
from niah.core.results.summary import summarize
from niah.core.runs import RunRecord
from niah.tasks import get_task
from tests.unit.test_report_page import cell, run_doc

pytestmark = pytest.mark.unit


def chance_floor(fields: dict[str, Any]) -> dict[str, Any] | None:
    """The floor a run of these request fields is shown beside (its task's options')."""
    return RunRequest.model_validate(fields).task_options.chance_floor()


@pytest.mark.parametrize(("needles", "floor"), [(2, 51.0), (4, 27.0), (8, 15.0), (None, 15.0)])
def test_mrcr_shows_eval_hubs_published_floor_for_its_needles(
    needles: int | None, floor: float
) -> None:
    spec = {"task": "mrcr"} | ({"num_needles": needles} if needles else {})
    found = chance_floor(spec)
    assert found is not None and found["percent"] == floor
    assert "approximate for these generated samples" in found["text"]
    assert "eval_hub/mrcr_v2/README.md" in found["source"] and "67b7fd2" in found["source"]
    published = chance_floor(spec | {"mrcr_source": "gs://b/mrcr_v2/"})
    assert published is not None and "approximate" not in published["text"]


def test_the_multi_needle_floor_is_what_blind_guesses_score_under_its_scorer() -> None:
    """The derivation in niah.core.results.chance, checked by guessing: 0 %, as stated."""
    spec = RunRequest(task="multi_needle", num_needles=5, context_lengths=[1000],
                      document_depth_percents=[50], seed=11)  # fmt: skip
    task = get_task("multi_needle")
    rng = random.Random(0)
    scores = []
    for index in range(200):
        sample = task.sample(spec, Cell(1000, 50.0, sample=index))
        guesses = " ".join(str(rng.randint(1_000_000, 9_999_999)) for _ in range(100))
        scores.append(task.score(sample, guesses).score)
    # 200 answers of 100 guesses against 5 needles: 100,000 chances of 1 in 9,000,000.
    assert sum(scores) == 0.0
    floor = chance_floor(spec.model_dump(mode="json"))
    assert floor is not None and floor["percent"] == 0.0
    assert f"g / {SEEDED_NUMBERS:,}" in floor["text"]
    own = chance_floor(
        {
            "task": "multi_needle",
            "needles": ["a.", "b."],
            "expected_answers": ["a", "b"],
            "retrieval_question": "What are a and b?",
        }
    )
    assert own is not None and own["percent"] is None and "your own needles" in own["text"]
    assert chance_floor({"task": "single"}) is None


def test_the_report_and_the_summary_put_the_floor_beside_the_score() -> None:
    run = run_doc("run-floor") | {"spec": {"task": "multi_needle", "num_needles": 3}}
    cells = [cell(1000, 50.0, True), cell(2000, 50.0, False)]
    summary = summarize(RunRecord.from_document(run), cells)
    assert summary["chance_floor"]["percent"] == 0.0
    header = render_run_page(RunRecord.from_document(run), cells, summary).split("</header>", 1)[0]
    named = [fact.split('"', 1)[0] for fact in header.split('data-fact="')[1:]]
    assert named[2:4] == ["mean (%)", "chance floor"]
    assert "0 %: a guess of g numbers finds a needle" in header


def test_an_mrcr_report_shows_the_floor_with_its_bins() -> None:
    run = run_doc("run-mrcr") | {"spec": {"task": "mrcr", "num_needles": 4}}
    cells = [cell(n, 0.0, ok) for n, ok in ((3000, True), (6000, False), (9000, True))]
    summary = summarize(RunRecord.from_document(run), cells)
    page = render_run_page(RunRecord.from_document(run), cells, summary)
    bins = page.split("<h3>MRCR v2 bins</h3>", 1)[1].split("</section>", 1)[0]
    assert "<dt>chance floor</dt><dd>about 27 %: one of the 4 replies" in bins
    assert 'data-fact="chance floor">about 27 %' in page.split("</header>", 1)[0]
