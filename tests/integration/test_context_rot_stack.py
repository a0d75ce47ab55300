"""Issue 38 on the local stack: distractors and haystack order as axes, and their suite.

Every retrieval task runs on the Vertex stand-in with 1 and 4 distractors, on a coherent
and a shuffled haystack (one run each, both axes): every answer right, each distractor
in the saved prompt where its recorded depth puts it. A run of 0, 1 and 4 distractors
shows three heatmaps, three plots and a headline row per value (looked at in Chromium
at 1280 px), and `niah
compare` pairs its cells across the axis; `niah run --suite context-rot --wait` ends in
Context Rot's table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah.tasks import DISTRACTOR_TASKS
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import wait_complete
from tests.integration.test_report_browser import browser, open_page  # noqa: F401 (fixture)
from tests.integration.test_tasks_run import submit

pytestmark = pytest.mark.integration

MODEL = "gemini-3.8-flash"
VARIANTS = {"d1.coherent", "d1.shuffled", "d4.coherent", "d4.shuffled"}


@pytest.fixture(scope="module")
def axis_runs(stack: Stack) -> dict[str, str]:
    requests.post(f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config", json={}, timeout=5)
    return {
        task: submit(
            stack,
            {
                "model_name": MODEL,
                "task": task,
                "context_lengths": [3000],
                "document_depth_percents": [40],
                "distractors": [1, 4],
                "haystack_order": ["coherent", "shuffled"],
                "save_contexts": True,
                "seed": 38,
            },
        )
        for task in DISTRACTOR_TASKS
    }


def saved_prompt(stack: Stack, cell: dict[str, Any]) -> str:
    name = cell["context_uri"].split("/", 3)[3]
    return GcsBlobStore(stack.env["NIAH_BUCKET"]).read(name).decode()


@pytest.mark.parametrize("task", DISTRACTOR_TASKS)
def test_every_retrieval_task_runs_with_distractors_on_either_haystack(
    stack: Stack, axis_runs: dict[str, str], task: str
) -> None:
    run = wait_complete(axis_runs[task], timeout=300)
    cells = FirestoreStore().list_cells(axis_runs[task])
    assert {c["variant"] for c in cells} == VARIANTS
    assert run["outcomes"] == {"correct": 4, "wrong": 0, "unscored": 0, "truncated": 0}
    prompts = {}
    for cell in cells:
        assert cell["cell_id"].endswith(f"-X{cell['variant']}")
        assert (cell["outcome"], cell["task_score"]) == ("correct", 1.0), cell["model_response"]
        distractors = cell["distractors"]
        assert len(distractors) == int(cell["variant"][1])
        prompt = prompts[cell["variant"]] = saved_prompt(stack, cell)
        # In the prompt once each, in the order their recorded depths say.
        first_needle = cell["needle"].split("\n")[0]
        placed = [(cell["insertion_depth_percent"], prompt.index(first_needle))]
        for item in distractors:
            assert prompt.count(item["text"]) == 1
            placed.append((item["depth_percent"], prompt.index(item["text"])))
        by_depth = [at for _, at in sorted(placed)]
        assert by_depth == sorted(by_depth), placed
    # The shuffled haystack is another text around the same needles.
    assert prompts["d4.coherent"] != prompts["d4.shuffled"]


@pytest.fixture(scope="module")
def distractor_run(stack: Stack) -> str:
    requests.post(f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config", json={}, timeout=5)
    run_id = submit(
        stack,
        {
            "model_name": MODEL,
            "context_lengths": [1000, 2000, 3000],
            "document_depth_percents": [20, 80],
            "distractors": [0, 1, 4],
            "seed": 38,
        },
    )
    wait_complete(run_id, timeout=300)
    return run_id


def test_a_run_of_0_1_and_4_distractors_shows_three_heatmaps_and_three_curves(
    stack: Stack,
    distractor_run: str,
    browser: Any,  # noqa: F811 (the fixture imported above)
) -> None:
    store = FirestoreStore()
    run = store.get_run(distractor_run, counts=False)
    url = run["report"]["html_url"]
    page, requested = open_page(browser, url, "report-distractors.png")
    assert requested == [url]
    figures = page.locator("#section-heatmaps figure")
    assert figures.count() == 3
    assert [figures.nth(i).get_attribute("data-variant") for i in range(3)] == [
        "0 distractors",
        "1 distractor",
        "4 distractors",
    ]
    assert page.locator("#section-heatmaps svg.heatmap").count() == 3
    # Small multiples: a plot per value, each with its own band only.
    curves = page.locator("#section-score-against-length svg.curves")
    assert curves.count() == 3
    for index, label in enumerate(("0 distractors", "1 distractor", "4 distractors")):
        assert label in (curves.nth(index).text_content() or "")
        assert curves.nth(index).locator("g.band").count() == 1
    # The headline is each value and its paired difference: no pooled mean or length.
    assert page.locator('header [data-fact="mean (%)"]').count() == 0
    assert page.locator('header [data-fact="effective length"]').count() == 0
    assert "every value of the axis (%)" not in page.content()
    values = page.locator("#headline-values tbody tr")
    assert values.count() == 3
    assert (values.nth(0).text_content() or "").endswith("the baseline")
    assert "pairs: " in (values.nth(2).text_content() or "")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.close()


def test_compare_pairs_the_run_s_cells_across_its_axis(
    stack: Stack, distractor_run: str, tmp_path: Path
) -> None:
    out = tmp_path / "axis.html"
    shown = stack.niah("compare", distractor_run, "--out", str(out), "--json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    paired = document["paired"]
    assert [p["second"] for p in paired] == [f"{distractor_run}/d1", f"{distractor_run}/d4"]
    assert all(p["overall"]["pairs"] == 6 for p in paired)
    assert document["unpaired_samples"] == 0  # each value's cells under the grid's IDs
    assert out.exists() and out.with_suffix(".png").exists()


def test_the_context_rot_suite_ends_in_its_table(stack: Stack) -> None:
    requests.post(f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config", json={}, timeout=5)
    shown = stack.niah(
        "run", "--suite", "context-rot", "--model_name", MODEL,
        "--context_lengths", "1000", "2000", "--document_depth_percents", "50", "--wait",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("condition"))
    rows = lines[header + 1 : header + 7]
    assert [row.split("  ")[0].strip() for row in rows] == [
        "0 distractors · coherent",
        "0 distractors · shuffled",
        "1 distractor · coherent",
        "1 distractor · shuffled",
        "4 distractors · coherent",
        "4 distractors · shuffled",
    ]
    for row in rows:  # the stand-in answers every condition right
        assert re.findall(r"\d+\.\d", row) == ["100.0", "100.0", "100.0"], row
    # Each condition's effective length, under the run's rule (RULER's: the default).
    assert "effective length" in lines[header]
    assert "effective length per condition, rule ruler" in shown.stdout
    refused = stack.niah("run", "--suite", "context-rot", "--distractors", "1")
    assert refused.returncode != 0 and "sets distractors itself" in refused.stderr
    no_needle = stack.niah("run", "--suite", "context-rot", "--task", "common_words")
    assert no_needle.returncode != 0 and "task common_words has none" in no_needle.stderr
