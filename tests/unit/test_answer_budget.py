"""Every answer has room: the task's answer room bounds its right answers.

The call's budget is that room plus the model's thinking room, capped by the model's
output limit.
"""

from __future__ import annotations

from typing import Any

import pytest

from niah.catalog.models import THINKING_LEVEL_ROOM, find_model
from niah.core.prompts.answer_budget import (
    ANSWER_SLACK,
    CallBudget,
    answer_room,
    call_budget,
    least_thinking_budget,
)
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.errors import RequestError
from niah.models.tokenizer import get_tokenizer
from niah.service.runs.admission_checks import check_budget, model_warnings
from niah.service.runs.dispatch import run_record
from niah.tasks import TASKS, get_task

# Options that make each task's answers longest: more needles, UUIDs, words.
TASK_OPTIONS: list[dict[str, Any]] = [
    {"task": "single"},
    {"task": "single", "dynamic_needle": False, "expected_answer": "a sandwich in Dolores Park"},
    {"task": "multi_needle", "num_needles": 8},
    {"task": "multi_needle", "num_needles": 100},
    {"task": "multi_key", "needle_key_type": "uuids", "needle_value_type": "uuids"},
    {"task": "multi_value", "num_values": 12, "needle_value_type": "words"},
    {"task": "multi_query", "num_queries": 8, "needle_key_type": "uuids"},
    {"task": "absent", "needle_key_type": "words", "needle_value_type": "uuids"},
    {"task": "nonliteral"},
    {"task": "mrcr", "num_needles": 8},
    {"task": "variable_tracking", "num_hops": 12, "num_chains": 3},
    {"task": "common_words", "num_cw": 25},
    {"task": "frequent_words"},
    {"task": "graphwalks", "bfs_depth": 5},
    {"task": "graphwalks", "graph_problem": "parents"},
]
# RULER's list tasks: a right answer numbers its items, as RULER's one-shot answers do.
LIST_TASKS = ("variable_tracking", "common_words", "frequent_words")


def longest_right_answer(spec: RunRequest, cell: Cell) -> str:
    """The longest answer a model that gets the sample right would plausibly write.

    It restates every asked needle's line and then lists every expected value; MRCR's
    right answer is its expected reply; declining an absent key restates the question.
    """
    sample = get_task(spec.task).sample(spec, cell)
    if spec.task == "mrcr":
        return sample.expected[0]
    if spec.task == "graphwalks":  # the card's answer line, every node
        return f"Final Answer: [{', '.join(sample.expected)}]"
    if spec.task in LIST_TASKS:
        return ", ".join(f"{i}. {item}" for i, item in enumerate(sample.expected, 1))
    if spec.task == "absent":
        return f"UNANSWERABLE: the text does not mention it. {sample.question}"
    lines = [insertion.text.strip() for insertion in sample.insertions]
    if spec.task == "multi_key":
        lines = lines[:1]  # the asked key's needle; a distractor's is no part of a right answer
    return "\n".join([*lines, ", ".join(sample.expected)])


@pytest.mark.parametrize("options", TASK_OPTIONS, ids=lambda o: "-".join(map(str, o.values())))
def test_the_answer_room_holds_every_right_answer(options: dict[str, Any]) -> None:
    spec = RunRequest(context_lengths=[8000], **options)
    tokenizer = get_tokenizer()
    room = answer_room(spec)
    longest = 0
    for index in range(40):
        cell = Cell(8000, float(index * 2.5 % 100), index % 3)
        tokens = len(tokenizer.encode(longest_right_answer(spec, cell)))
        longest = max(longest, tokens)
    assert longest <= room - ANSWER_SLACK, (longest, room)


def test_every_task_has_a_room() -> None:
    for task in TASKS:
        spec = RunRequest(task=task, context_lengths=[8000])
        assert answer_room(spec) > ANSWER_SLACK


def test_more_needles_get_more_room() -> None:
    three = answer_room(RunRequest(task="multi_needle", num_needles=3))
    hundred = answer_room(RunRequest(task="multi_needle", num_needles=100))
    assert hundred > 30 * three / 3 and three > 24  # the old local budget cut three at 24


def spec_for(model: str, **options: Any) -> RunRequest:
    return RunRequest(model_name=model, context_lengths=[8000], **options)


@pytest.mark.parametrize(
    ("model", "options", "thinking"),
    [
        ("gemini-2.5-pro", {}, 32_768),  # always thinks, dynamically up to its maximum
        ("gemini-2.5-pro", {"thinking_budget": 1000}, 1000),
        ("gemini-2.5-pro", {"thinking_budget": -1}, 32_768),
        ("gemini-2.5-flash", {}, 24_576),
        ("gemini-2.5-flash", {"thinking_budget": 0}, 0),
        ("gemini-2.5-flash-lite", {}, 0),  # does not think unless given a budget
        ("gemini-2.5-flash-lite", {"thinking_budget": 512}, 512),
        ("gemini-3.5-flash", {}, THINKING_LEVEL_ROOM["medium"]),  # its default level
        ("gemini-3.1-pro-preview", {}, THINKING_LEVEL_ROOM["high"]),
        ("gemini-3.1-flash-lite", {}, THINKING_LEVEL_ROOM["minimal"]),
        ("gemini-3.5-flash", {"thinking_level": "low"}, THINKING_LEVEL_ROOM["low"]),
    ],
)
def test_the_call_budget_is_the_answer_room_plus_the_thinking_room(
    model: str, options: dict[str, Any], thinking: int
) -> None:
    spec = spec_for(model, **options)
    budget = call_budget(spec)
    answer = answer_room(spec)
    assert budget == CallBudget(
        max(answer + thinking, 300),
        options.get("thinking_budget"),
        options.get("thinking_level"),
        answer_tokens=answer,
        thinking_tokens=max(answer + thinking, 300) - answer,
    )


def test_an_unlisted_gemini_3_thinks_high_within_the_least_listed_output_limit() -> None:
    budget = call_budget(spec_for("gemini-9-ultra"))
    assert budget.max_output_tokens == 32_768  # answer room + 32,768 (high), capped
    assert budget.thinking_tokens == 32_768 - budget.answer_tokens


def test_the_budget_is_capped_by_the_models_output_limit() -> None:
    spec = spec_for("gemini-4-argon", thinking_level="high", task="multi_needle", num_needles=8)
    assert call_budget(spec).max_output_tokens == 32_768  # non-streaming calls return at most
    info = find_model("gemini-2.5-pro")
    assert info is not None and info.output_tokens == 65_535
    huge = spec_for("gemini-2.5-pro", thinking_budget=32_768, task="multi_needle", num_needles=100)
    assert call_budget(huge).max_output_tokens == answer_room(huge) + 32_768 <= 65_535


def test_a_published_reply_longer_than_the_task_room_gets_its_own_room() -> None:
    spec = spec_for("gemini-2.5-flash", task="mrcr")
    assert call_budget(spec, 9_000).answer_tokens == 9_000


def test_the_run_records_the_budget_it_calls_with() -> None:
    spec = spec_for("gemini-3.5-flash", task="multi_value", num_values=6)
    settings = run_record("run-x", spec, "gs://b/h").call_settings
    budget = call_budget(spec)
    assert (settings["max_output_tokens"], settings["answer_tokens"]) == (
        budget.max_output_tokens,
        budget.answer_tokens,
    )
    assert settings["thinking_tokens"] == THINKING_LEVEL_ROOM["medium"]
    assert settings["temperature"] == 1.0


def test_a_max_output_tokens_below_the_answer_room_is_refused_naming_the_least_value() -> None:
    spec = spec_for("gemini-3.8-flash", task="multi_needle", num_needles=100, max_output_tokens=300)
    needed = answer_room(spec)
    with pytest.raises(RequestError) as caught:
        check_budget(spec)
    assert caught.value.field == "max_output_tokens"
    assert f"at least {needed}" in caught.value.message
    # The least value that fits passes.
    check_budget(spec.model_copy(update={"max_output_tokens": needed}))


def test_a_budget_that_leaves_thinking_short_is_warned() -> None:
    spec = spec_for("gemini-2.5-pro", max_output_tokens=2_000)
    (warning,) = [w for w in model_warnings(spec) if "max_output_tokens" in w]
    assert "may think up to 32768" in warning and "truncated" in warning
    assert not [w for w in model_warnings(spec_for("gemini-2.5-pro")) if "max_output" in w]


@pytest.mark.parametrize(
    ("judge", "expected"),
    [
        ("gemini-2.5-flash", CallBudget(256, 0, None, 256, 0)),
        ("gemini-2.5-pro", CallBudget(256 + 128, 128, None, 256, 128)),
        ("gemini-3.5-flash", CallBudget(256 + 2048, None, "minimal", 256, 2048)),
        ("gemini-3.1-pro-preview", CallBudget(256 + 8192, None, "low", 256, 8192)),
    ],
)
def test_the_judge_thinks_least_with_room_to_answer(judge: str, expected: CallBudget) -> None:
    assert least_thinking_budget(judge, 256) == expected
