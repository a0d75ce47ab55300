"""The CLI as a user types it: the harness's syntax, its options, typos, one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli_inprocess import niah


def test_the_harness_list_syntax_and_shell_words_both_work() -> None:
    harness = niah(
        "run",
        "--context_lengths",
        "[1000, 2000]",
        "--document_depth_percents",
        "[50]",
        "--estimate",
    )
    assert harness.returncode == 0, harness.stderr
    assert "2 cells (2 lengths x 1 depth)" in harness.stdout
    words = niah(
        "run", "--context_lengths", "1000", "2000", "--document_depth_percents", "50", "--estimate"
    )
    assert words.stdout == harness.stdout


def test_a_bad_list_names_the_option_and_both_ways_to_write_it() -> None:
    result = niah("run", "--context_lengths", "[1000, x]", "--estimate")
    assert result.returncode == 2
    assert "'[1000, x]' is not a list of numbers" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("option", "advice"),
    [
        ("--save_results", "results are always saved"),
        ("--print_ongoing_status", "progress is always shown"),
        ("--seconds_to_sleep_between_completions", "worker's parallelism"),
        ("--gcp_project_id", "the deployment's"),
    ],
)
def test_harness_options_without_meaning_here_say_what_replaces_them(
    option: str, advice: str
) -> None:
    result = niah("run", "--context_lengths", "1000", option, "x", "--estimate")
    assert result.returncode == 0, result.stderr
    assert advice in result.stderr and "ignored" in result.stderr


def test_a_renamed_harness_option_is_refused_naming_ours() -> None:
    result = niah("run", "--provider", "openai", "--estimate")
    assert result.returncode == 2  # a bad command line, as argparse's own mistakes
    assert result.stderr.strip() == (
        "niah: --provider is the harness's; here it is --model_provider (local, gemini or "
        "openai_compatible; inferred from the name)"
    )


def test_a_typo_gets_the_closest_option_not_a_guess() -> None:
    result = niah("run", "--context_length", "1000", "--estimate")
    assert result.returncode == 2
    assert "did you mean --context_lengths" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_default_grid_fits_the_cap() -> None:
    result = niah("run", "--estimate")
    assert result.returncode == 0, result.stderr
    assert "225 cells (15 lengths x 15 depths)" in result.stdout


def test_a_stopped_dispatcher_is_one_line_not_a_traceback() -> None:
    result = niah("run", "--context_lengths", "1000", "--url", "http://127.0.0.1:9/")
    assert result.returncode == 1
    assert result.stderr.startswith("niah: cannot reach the dispatcher at http://127.0.0.1:9/")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_stopped_firestore_emulator_is_one_line_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:9")
    for command in (["status", "run-x"], ["wait", "run-x"], ["export", "run-x", "--out", "/tmp/x"]):
        result = niah(*command)
        assert result.returncode == 1, command
        assert "the Firestore emulator at 127.0.0.1:9 does not answer" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_a_static_needle_says_which_two_options_to_add_without_a_circle() -> None:
    missing = niah(
        "run", "--no-dynamic_needle", "--needle", "Figs are on the perfect pizza.",
        "--context_lengths", "1000", "--estimate",
    )  # fmt: skip
    assert missing.returncode == 2
    assert missing.stderr.startswith("niah: --expected_answer: a static needle")
    assert "--evaluator_model_name" in missing.stderr
    exact = niah(
        "run", "--no-dynamic_needle", "--needle", "Figs are on the perfect pizza.",
        "--expected_answer", "figs", "--context_lengths", "1000", "--estimate",
    )  # fmt: skip
    assert exact.returncode == 0, exact.stderr


@pytest.mark.parametrize(
    "spelling", ["--dynamic_needle=False", "--dynamic_needle=false", "--dynamic_needle=0"]
)
def test_the_harness_readme_s_static_needle_flag_runs_alone(spelling: str) -> None:
    """The harness's README: `--dynamic_needle=False` reverts to its default needle."""
    result = niah(
        "run", spelling, "--context_lengths", "1000", "--document_depth_percents", "50",
        "--estimate",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_the_local_model_is_refused_as_a_judge() -> None:
    result = niah(
        "run", "--scorer", "both", "--evaluator_model_name", "gemma-3-270m-local",
        "--context_lengths", "1000", "--estimate",
    )  # fmt: skip
    assert result.returncode == 2
    assert "--evaluator_model_name: gemma-3-270m-local is a 270M base model" in result.stderr


def test_every_run_option_has_help_from_one_source() -> None:
    from niah.core.request.request_options import OPTION_HELP
    from niah.core.request.spec import RunRequest

    assert set(OPTION_HELP) == set(RunRequest.model_fields)
    result = niah("run", "--help")
    assert "multi_needle: needles (1-100, default 3)" in result.stdout


def test_the_estimate_prices_every_current_gemini_model_and_refuses_a_retired_one() -> None:
    from niah.catalog.availability import current_gemini_models
    from niah.catalog.prices import NO_PRICE_REASONS

    current = [name for name in current_gemini_models() if name not in NO_PRICE_REASONS]
    assert "gemini-3.8-flash" in current and "gemini-2.5-pro" not in current
    for name in current:
        result = niah("run", "--model_name", name, "--context_lengths", "1000", "--estimate")
        assert result.returncode == 0, result.stderr
        assert re.search(r"cost at most: \$\d+\.\d{4}", result.stdout), (name, result.stdout)
    retired = niah("run", "--model_name", "gemini-1.5-flash", "--estimate")
    assert retired.returncode == 2
    assert "model_name" in retired.stderr and "Google names gemini-2.5-flash" in retired.stderr


def test_report_compare_and_list_refuse_bad_paths_and_limits_before_reading(
    tmp_path: Path,
) -> None:
    twice = niah("compare", "run-a", "run-a", "--out", str(tmp_path / "c.html"))
    assert (twice.returncode, twice.stderr.strip()) == (
        2,
        "niah: compare: a run is named twice; name each run once",
    )
    png = niah("compare", "run-a", "run-b", "--out", str(tmp_path / "c.png"))
    assert png.returncode == 2 and "use .html" in png.stderr
    folder = niah("report", "run-a", "--html", str(tmp_path))
    assert (
        folder.returncode == 2
        and f"--html takes a file name; {tmp_path} is a folder" in folder.stderr
    )
    limit = niah("list", "--limit", "0")
    assert limit.returncode == 2 and "give a whole number of runs, 1 or more" in limit.stderr
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_estimate_in_json_has_the_figures_the_text_shows() -> None:
    import json

    args = ("run", "--model_name", "gemini-3.8-flash", "--context_lengths", "1000", "2000",
            "--document_depth_percents", "0", "50", "--estimate")  # fmt: skip
    text, data = niah(*args), niah(*args, "--json")
    assert text.returncode == data.returncode == 0, data.stderr
    figures = json.loads(data.stdout)
    assert (figures["cells"], figures["prompt_tokens"]) == (4, 6000)
    assert f"cost at most: ${figures['cost_usd_at_most']:.4f}" in text.stdout
    assert f"output tokens at most: {figures['output_tokens_at_most']:,}" in text.stdout


def test_distractors_and_haystack_order_take_lists_as_axes_on_the_command_line() -> None:
    args = ("run", "--model_name", "gemini-3.8-flash", "--context_lengths", "1000", "2000",
            "--document_depth_percents", "50", "--distractors", "0", "1", "4",
            "--haystack_order", "shuffled", "coherent", "--estimate")  # fmt: skip
    shown = niah(*args)
    assert shown.returncode == 0, shown.stderr
    assert "12 cells (2 lengths x 1 depth x 6 variants)" in shown.stdout
    wrong = niah(*args[:-4], "--haystack_order", "random", "--estimate")
    assert wrong.returncode == 2
    assert "--haystack_order must be 'coherent' or 'shuffled'" in wrong.stderr


def test_the_effective_length_rule_and_its_old_name_are_options() -> None:
    from niah.cli.parser import build_parser
    from niah.cli.run_options import run_payload

    for flag in ("--effective_length_rule", "--effective-length-rule", "--certify_rule"):
        args = build_parser().parse_args(["run", flag, "nolima"])
        assert run_payload(args)["effective_length_rule"] == "nolima"
    refused = niah("run", "--context_lengths", "2000", "4000", "--effective_length_rule",
                   "nolima", "--estimate")  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.startswith("niah: --effective_length_rule: nolima judges"), refused.stderr
    assert "add a length of 1,000 or less to --context_lengths" in refused.stderr
