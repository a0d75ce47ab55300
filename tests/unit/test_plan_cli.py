"""``niah plan``: the samples a comparison needs, its power, and ``--estimate``'s dollars."""

from __future__ import annotations

import json
from typing import Any

import pytest

from niah.core.results.power import PlanAssumptions, comparison_power, plan_samples
from tests.cli_inprocess import niah

# 4 lengths x 3 depths on a priced model, on the flex tier (half price, 3.8 Flash only).
GRID = (
    "--model_name", "gemini-3.8-flash", "--tier", "flex", "--context_lengths", "1000", "2000",
    "4000", "8000", "--document_depth_percent_intervals", "3",
)  # fmt: skip
QUESTION = ("--detect", "10", "--expected_score", "85")


def plan_json(*words: str) -> dict[str, Any]:
    """``niah plan ... --json``, parsed; the command must succeed."""
    done = niah("plan", *words, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def planned() -> dict[str, Any]:
    return plan_json(*GRID, *QUESTION)


def test_the_plan_is_the_power_model_s_on_the_grid_s_points(planned: dict[str, Any]) -> None:
    expected = plan_samples(PlanAssumptions(expected_score=85, detect=10), 12, 0.8)
    assert planned["grid"]["points"] == 12 and planned["grid"]["points_per_length"] == 3
    assert planned["samples_per_point"] == expected.samples_per_point
    assert planned["samples_per_run"] == 12 * expected.samples_per_point
    assert planned["power"] == round(100 * expected.power, 1) >= 80
    assert planned["test"] == "clustered" and planned["reached"]
    # A length's 3 points: the flip test cannot reach p < 0.05 there.
    assert planned["power_per_length"] == {"power": 0.0, "test": "clustered"}
    assert planned["assumptions"] == {
        "icc": 0.3, "coupling": 0.0, "changed_points": 100.0, "scores": "right or wrong",
        "from": {"expected_score": "given", "icc": "default", "coupling": "default"},
    }  # fmt: skip


def test_the_dollars_are_what_run_estimate_says_for_the_same_grid_model_and_tier(
    planned: dict[str, Any],
) -> None:
    per_point = str(planned["samples_per_point"])
    done = niah("run", *GRID, "--samples_per_cell", per_point, "--estimate", "--json")
    assert done.returncode == 0, done.stderr
    estimate = json.loads(done.stdout)
    estimate.pop("per_cell")
    assert planned["estimate"] == estimate
    assert planned["grid"]["tier"] == estimate["tier_row"] == "flex"
    assert planned["cost"]["cost_usd_at_most"] == estimate["cost_usd_at_most"] > 0
    assert planned["cost"]["cache_aware_usd"] == estimate["total"]["cache_aware_usd"]


def test_the_text_says_the_samples_the_power_the_dollars_and_the_assumptions(
    planned: dict[str, Any],
) -> None:
    done = niah("plan", *GRID, *QUESTION)
    assert done.returncode == 0, done.stderr
    per_point, cost = planned["samples_per_point"], planned["cost"]
    for shown in (
        "plan: a 10-point drop from 85 % (the second run at 75 %), for 80 % power",
        f"samples per point: {per_point} ({12 * per_point} a run): power {planned['power']:g} %",
        "per length (3 points): 0 % (the flip test needs 6 points to reach p < 0.05)",
        f"one run: cost at most ${cost['cost_usd_at_most']:.4f}, cache-aware "
        f"${cost['cache_aware_usd']:.4f}",
        f"`niah run --estimate --samples_per_cell {per_point}`'s figures",
        "intra-cluster correlation 0.3",
        "coupling 0 (0: the two runs answer a pair independently",
        "the change on 100 % of the points",
    ):
        assert shown in done.stdout, shown


def test_given_samples_a_point_the_plan_says_their_power() -> None:
    planned = plan_json(*GRID, *QUESTION, "--samples_per_cell", "1", "--coupling", "0.5")
    assumptions = PlanAssumptions(expected_score=85, detect=10, coupling=0.5)
    power, test = comparison_power(assumptions, 12, 1)
    assert planned["samples_per_point"] == 1 and planned["test"] == test == "mcnemar"
    assert planned["power"] == round(100 * power, 1) and not planned["reached"]
    assert planned["question"]["samples_per_point_given"]


def test_samples_above_the_deployment_s_ceiling_are_planned_and_the_ceiling_said() -> None:
    planned = plan_json(*GRID, "--detect", "3", "--expected_score", "85")
    assert planned["samples_per_run"] > 500
    assert any("NIAH_MAX_CELLS_PER_RUN" in note for note in planned["notes"])
    assert planned["cost"]["cost_usd_at_most"] is not None
    given = plan_json(*GRID, *QUESTION, "--samples_per_cell", "60")
    assert given["samples_per_run"] == 720 and given["power"] > 95
    assert any("720 cells" in note for note in given["notes"])


def test_a_grid_no_samples_can_run_is_refused_as_run_estimate_refuses_it() -> None:
    done = niah("plan", *GRID[:4], "--context_lengths", "5000000", *QUESTION)
    assert done.returncode == 2
    assert "5000000 tokens is above gemini-3.8-flash's input limit" in done.stderr


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (("--detect", "0"), "argument --detect: '0': give the change to detect in points"),
        (("--detect", "100"), "between 0 and 100"),
        (
            ("--detect", "90", "--expected_score", "85"),
            "niah: --detect: a 90-point drop from 85 % leaves 0-100 %: give at most 85 points, "
            "or another --expected_score",
        ),
        (
            ("--detect", "20", "--expected_score", "85", "--change", "rise"),
            "give at most 15 points",
        ),
        (("--detect", "5", "--changed_points", "0"), "--changed_points must be more than 0"),
        (("--detect", "5", "--icc", "1"), "argument --icc: '1': give an intra-cluster"),
        (("--detect", "5", "--power", "100"), "argument --power: '100': give a power"),
        (("--detect", "5", "--mode", "certify"), "--detect plans a comparison of two runs"),
        (("--expected_score", "85"), "--detect is required to plan a comparison of two runs"),
        (("--detect", "5", "--expected_score", "85", "80"), "one score for a comparison"),
        (("--detect", "5", "--effective_length", "4000"), "--effective_length goes with --mode"),
    ],
)
def test_a_bad_plan_is_refused_in_one_line_naming_the_option(
    words: tuple[str, ...], said: str
) -> None:
    done = niah("plan", *GRID, *words)
    assert done.returncode == 2, done.stdout
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_documented_plan_prints_what_the_page_shows() -> None:
    """docs/planning.md's commands and their outputs, in order, but the dollars (dated)."""
    import re
    import shlex

    from tests.docs_commands import REPO, blocks

    page = REPO / "docs" / "planning.md"
    commands = [c for block in blocks(page) for c in block if c.startswith("niah plan")]
    outputs = re.findall(r"^```text\n(.*?)^```", page.read_text(), re.S | re.M)
    assert len(commands) == len(outputs) == 2  # a comparison's plan and a certificate's
    dollars = re.compile(r"\$[\d,.]+")
    for command, output in zip(commands, outputs, strict=True):
        shown = output.splitlines()
        done = niah(*shlex.split(command)[1:])
        assert done.returncode == 0, done.stderr
        printed = done.stdout.splitlines()
        assert [dollars.sub("$", line) for line in printed[: len(shown)]] == [
            dollars.sub("$", line) for line in shown
        ]
