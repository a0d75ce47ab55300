"""The harness user's habits on ``niah run``: each spelling accepted or refused, exit codes.

Run in the test's process (``main`` with the words), so each case costs milliseconds;
``test_cli.py`` runs the command as a user types it in a shell.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from niah.cli.main import main
from niah.cli.parser import parse_command_line
from niah.cli.run_options import run_payload
from niah.core.request.spec import RunRequest
from tests.fakes import json_server

BOOLEAN_OPTIONS = [
    name for name, field in RunRequest.model_fields.items() if field.annotation is bool
]
SMALL_GRID = ("--context_lengths", "1000", "--document_depth_percents", "50")


def cli(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    """The exit status, stdout and stderr of ``niah WORDS``."""
    code: int = 0
    try:
        main(list(words))
    except SystemExit as exit_:
        if isinstance(exit_.code, str):  # sys.exit("niah: ...") prints it on the way out
            print(exit_.code, file=sys.stderr)
            code = 1
        else:
            code = exit_.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def payload(*words: str) -> dict[str, Any]:
    return run_payload(parse_command_line(["run", *words]))


def test_every_boolean_option_is_found() -> None:
    assert {"dynamic_needle", "save_contexts", "count_tokens_check"} <= set(BOOLEAN_OPTIONS)


@pytest.mark.parametrize("option", BOOLEAN_OPTIONS)
@pytest.mark.parametrize(
    ("words", "value"),
    [
        (["{o}"], True),
        (["{o}", "True"], True),
        (["{o}=True"], True),
        (["{o}", "true"], True),
        (["{o}=1"], True),
        (["{o}", "yes"], True),
        (["{O}", "YES"], True),
        (["{o}", "False"], False),
        (["{o}=False"], False),
        (["{o}", "false"], False),
        (["{o}", "0"], False),
        (["{o}=no"], False),
        (["--no-{n}"], False),
        (["--no-{N}"], False),
    ],
)
def test_every_boolean_takes_the_harness_s_spellings_and_ours(
    option: str, words: list[str], value: bool
) -> None:
    spelt = [
        w.format(o=f"--{option}", O=f"--{option.replace('_', '-')}", n=option,
                 N=option.replace("_", "-"))
        for w in words
    ]  # fmt: skip
    assert payload(*spelt, *SMALL_GRID)[option] is value


def test_harness_booleans_run_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(
        capsys, "run", "--save_contexts", "True", "--dynamic_needle", "False",
        "--expected_answer", "sandwich", *SMALL_GRID, "--estimate",
    )  # fmt: skip
    assert code == 0, err
    assert "1 cell (1 length x 1 depth)" in out


@pytest.mark.parametrize("words", [["--save_contexts", "maybe"], ["--dynamic_needle=perhaps"]])
def test_a_boolean_with_another_word_is_refused_naming_the_option(
    capsys: pytest.CaptureFixture[str], words: list[str]
) -> None:
    code, _, err = cli(capsys, "run", *words, "--estimate")
    assert code == 2
    option = words[0].split("=")[0]
    assert f"argument {option}: takes True or False" in err
    assert len(err.strip().splitlines()) == 1


def test_the_command_s_own_flags_take_them_too_and_a_run_id_stays_a_run_id() -> None:
    args = parse_command_line(["run", "--wait", "True", "--estimate=false", "--json", "no"])
    assert (args.wait, args.estimate, args.json) == (True, False, False)
    # A word after --json that is no boolean is the run ID, as before.
    assert parse_command_line(["status", "--json", "run-x"]).run_id == "run-x"
    assert parse_command_line(["status", "run-x", "--json", "True"]).json is True


PIZZA = [
    "Figs are one of the secret ingredients needed to build the perfect pizza.",
    "Prosciutto is one of the secret ingredients needed to build the perfect pizza.",
    "Goat cheese is one of the secret ingredients needed to build the perfect pizza.",
]
PIZZA_QUESTION = ("--retrieval_question", "What are the secret ingredients of the perfect pizza?")
PIZZA_ANSWERS = ("--expected_answers", json.dumps(["figs", "prosciutto", "goat cheese"]))


def test_the_harness_s_multi_needle_options_are_the_multi_needle_task_with_its_needles(
    capsys: pytest.CaptureFixture[str],
) -> None:
    needles = json.dumps(PIZZA)
    mapped = payload("--multi_needle", "True", "--needles", needles, *PIZZA_QUESTION)
    assert mapped["task"] == "multi_needle"
    assert mapped["needles"] == PIZZA  # the harness's texts are the needles, in order
    assert "num_needles" not in mapped
    assert "here that is --task multi_needle" in capsys.readouterr().err
    assert payload("--needles", needles, *PIZZA_QUESTION)["task"] == "multi_needle"
    # One needle per use, and a Python list, as the harness's shell users write them.
    assert payload("--needles", PIZZA[0], "--needles", PIZZA[1])["needles"] == PIZZA[:2]
    assert payload("--needles", repr(PIZZA))["needles"] == PIZZA
    assert payload("--multi_needle=true")["task"] == "multi_needle"
    assert "needles" not in payload("--multi_needle=true")  # the task's own, 3
    code, out, err = cli(
        capsys,
        "run",
        "--needles",
        needles,
        *PIZZA_QUESTION,
        *PIZZA_ANSWERS,
        *SMALL_GRID,
        "--estimate",
    )
    assert code == 0, err
    assert "task multi_needle" in out
    assert "(one cell, no primer;" in out  # not "primer None"


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["--multi_needle", "True", "--task", "mrcr"], "--multi_needle True means --task"),
        (["--multi_needle", "False", "--needles", "a."], "--multi_needle is False"),
        (
            [
                "--needles",
                '["a.", "b."]',
                *PIZZA_QUESTION,
                "--expected_answers",
                "a",
                "--num_needles",
                "5",
            ],
            "--num_needles (5) differs from the 2 needles given; leave --num_needles out",
        ),
        (["--needles", '["a.", "b."'], "argument --needles: "),
        (["--needles", "[]"], "argument --needles: "),
        (["--needles", "a.", "--expected_answers", "a"], "--retrieval_question: your needles need"),
        (["--needles", "a.", *PIZZA_QUESTION], "--expected_answers: say what a right answer"),
        (
            ["--needles", "a.", *PIZZA_QUESTION, "--expected_answers", '["a", "b"]'],
            "--expected_answers has 2 items for 1 needles",
        ),
        (["--task", "multi_needle", "--expected_answers", "a"], "expected_answers go with needles"),
        (["--needles", "a.", "--task", "multi_key"], "--needles means --task multi_needle, not"),
        (["--needles", "a.", *PIZZA_QUESTION, "--scorer", "judge"], "needs --evaluator_model_name"),
    ],
)
def test_multi_needle_options_that_cannot_be_meant_are_refused(
    capsys: pytest.CaptureFixture[str], words: list[str], said: str
) -> None:
    code, _, err = cli(capsys, "run", *words, *SMALL_GRID, "--estimate")
    assert code == 2
    assert said in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("word", ["[1000,2000", "1000,2000]", "[1000, [2000]]", "[1000]2000]"])
def test_a_list_that_does_not_parse_is_refused_naming_the_option(
    capsys: pytest.CaptureFixture[str], word: str
) -> None:
    code, _, err = cli(capsys, "run", "--context_lengths", word, "--estimate")
    assert code == 2
    assert "argument --context_lengths" in err and "is not a closed list" in err
    assert "--context_lengths '[1000, 2000]'" in err  # and how to write it


@pytest.mark.parametrize(
    "words", [["[1000, 2000]"], ["[1000,", "2000]"], ["1000", "2000"], ["1000,2000"]]
)
def test_lists_in_every_way_the_shell_hands_them_over(words: list[str]) -> None:
    assert payload("--context_lengths", *words)["context_lengths"] == [1000, 2000]


@pytest.mark.parametrize(
    ("words", "hint"),
    [
        (["run", "--model", "gemini-2.5-flash"], "--model: did you mean --model_name?"),
        (["run", "--context_length", "1000"], "did you mean --context_lengths"),
        (["run", "--save-context"], "did you mean --save_contexts"),
        (["run", "--num_needle", "3"], "did you mean --num_needles"),
        (["run", "--document_depth_percent", "50"], "--document_depth_percents"),
        (["run", "--foo", "3"], "--foo: not an option of `niah run`; `niah run --help` lists"),
        (["list", "--limt", "3"], "did you mean --limit"),
        (["status", "run-x", "--jsn"], "did you mean --json"),
    ],
)
def test_every_unknown_option_gets_a_suggestion(
    capsys: pytest.CaptureFixture[str], words: list[str], hint: str
) -> None:
    code, _, err = cli(capsys, *words)
    assert code == 2
    assert hint in err and len(err.strip().splitlines()) == 1
    assert "--model_to_test" not in err  # a harness spelling we refuse is never offered


def test_two_unknown_options_get_a_suggestion_each(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = cli(capsys, "run", "--model", "x", "--contxt_lengths", "1")
    assert "--model: did you mean --model_name?" in err
    assert "--contxt_lengths: did you mean --context_lengths or" in err


@pytest.mark.parametrize(
    "words",
    [
        ["run", "--provider", "openai"],
        ["run", "--model_to_test", "gpt-4"],
        ["run", "--evaluator", "openai"],
        ["run", "--document_depth_percent_max", "150"],
        ["run", "--task", "haystack"],
        ["run", "--context_lengths", "x"],
        ["compare", "run-a", "run-a", "--out", "c.html"],
        ["report", "run-a"],
        ["list", "--limit", "0"],
        ["wait"],
    ],
)
def test_every_bad_command_line_exits_2(
    capsys: pytest.CaptureFixture[str], words: list[str]
) -> None:
    code, _, err = cli(capsys, *words, *(["--estimate"] if words[0] == "run" else []))
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("words", "said", "field", "message"),
    [
        (
            ["--document_depth_percent_max", "150"],
            "niah: --document_depth_percent_max must be at most 100",
            "document_depth_percent_max",
            "must be at most 100",
        ),
        (
            ["--num_needles", "3"],
            "niah: --num_needles applies to --task multi_needle or mrcr, not single; set --task "
            "or leave --num_needles out",
            "num_needles",
            "num_needles applies to task multi_needle or mrcr, not single; set task or leave "
            "num_needles out",
        ),
        (
            ["--context_lengths_min", "9000", "--context_lengths_max", "1000"],
            "niah: --context_lengths_min must not exceed --context_lengths_max",
            "context_lengths_min",
            "context_lengths_min must not exceed context_lengths_max",
        ),
        (
            ["--model_name", "gemini/../x!"],
            "niah: --model_name must be a model ID",
            "model_name",
            "must be a model ID",
        ),
    ],
)
def test_a_refused_request_is_told_in_the_cli_s_words_and_the_api_s(
    capsys: pytest.CaptureFixture[str], words: list[str], said: str, field: str, message: str
) -> None:
    from niah.errors import RequestError
    from niah.service.runs.request_body import parse_request

    for extra in (["--estimate"], ["--url", "http://127.0.0.1:9/"]):  # checked before sending
        code, _, err = cli(capsys, "run", *words, *extra)
        assert code == 2
        assert err.startswith(said), err
        assert "body" not in err and "Input should" not in err and "cannot reach" not in err
    with pytest.raises(RequestError) as refused:
        parse_request(payload(*words))
    assert refused.value.field == field
    assert refused.value.message.startswith(message)


def test_the_dispatcher_s_refusal_is_a_bad_command_line_in_the_cli_s_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    refusal = {"error": {"field": "context_lengths", "message": "the grid has 900 cells, above "
                         "the limit of 500 (NIAH_MAX_CELLS_PER_RUN)"}}  # fmt: skip
    with json_server(400, refusal) as url:
        code, _, err = cli(capsys, "run", *SMALL_GRID, "--url", url)
    assert code == 2
    assert err.strip() == (
        "niah: --context_lengths: the grid has 900 cells, above the limit of 500 "
        "(NIAH_MAX_CELLS_PER_RUN)"
    )
