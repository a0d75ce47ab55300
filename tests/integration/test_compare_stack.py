"""``niah compare`` on the local stack: whether a difference between two runs is noise.

Three small runs through the Vertex stand-in (one length, six depths, one sample per
point: 6 independent pairs, the fewest an exact McNemar test can call significant; six
pairs in two points would be clustered, issue 54, and could not be): two that differ
only in their needles' seed, which it must call "no significant difference", and one
whose every answer is wrong, which it must call significant against the first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from tests.integration.conftest import Stack
from tests.integration.test_local_stack import wait_complete
from tests.integration.test_tasks_run import submit

pytestmark = pytest.mark.integration

GRID = {
    "model_name": "gemini-3.8-flash",
    "context_lengths": [400],
    "document_depth_percents": [0, 20, 40, 60, 80, 100],
}


def test_noise_is_no_significant_difference_and_a_wrong_model_is_significant(
    stack: Stack, tmp_path: Path
) -> None:
    configure = f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config"
    first = submit(stack, GRID | {"seed": 41})
    again = submit(stack, GRID | {"seed": 42})
    for run_id in (first, again):
        wait_complete(run_id, timeout=300)
    wrong = {"answer": "The special magic number is: 0."}
    requests.post(configure, json=wrong, timeout=5).raise_for_status()
    try:
        worse = submit(stack, GRID | {"seed": 43, "label": "answers 0"})
        wait_complete(worse, timeout=300)
    finally:
        requests.post(configure, json={}, timeout=5).raise_for_status()

    out = tmp_path / "compare.html"
    result = stack.niah("compare", first, again, worse, "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    noise, real = document["paired"]
    assert (noise["second"], real["second"]) == (again, worse)
    # Runs are called by their labels: "model · task" by default, with the run ID where
    # two compared runs share one.
    assert real["second_label"] == "answers 0"
    assert noise["first_label"] == f"gemini-3.8-flash · single ({first})"
    assert noise["overall"]["pairs"] == real["overall"]["pairs"] == 6
    assert noise["overall"]["verdict"] == "no significant difference"
    assert noise["overall"]["p_value"] == 1.0 and noise["overall"]["effect"] == 0.0
    # Every answer of the third run wrong, every one of the first right: b = 6, c = 0,
    # p = 2 / 2^6.
    assert real["overall"]["discordant"] == [6, 0]
    assert real["overall"]["p_value"] == 0.03125 and real["overall"]["effect"] == -100.0
    assert real["by_length"]["400"]["verdict"] == "significant"
    page = out.read_text()
    assert "no significant difference" in page and ">significant<" in page

    text = stack.niah("compare", first, worse, "--out", str(out))
    assert text.returncode == 0, text.stderr
    assert "6 samples disagree" in text.stdout
    assert "400 tokens: -100 points (95 %: " in text.stdout
    assert text.stdout.rstrip().endswith("p = 0.031, 6 pairs: significant")
    assert "answers 0 minus gemini-3.8-flash · single (exact McNemar" in text.stdout
    status = stack.niah("status", worse)
    assert f"\nrun {worse} (answers 0): gemini-3.8-flash, task single" in status.stdout
