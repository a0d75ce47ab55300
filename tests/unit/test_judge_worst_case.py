"""The worst case of a judged run counts the judge's whole prompt (issue 51).

It counted the rubric, 2,048 bytes for the question, needle and answer together, and a
right answer's room: a 2,000-character question and needle, or a reply that runs to the
call's output cap, were under-counted. Here the worst case's judge cost is exactly the
cost of the judge's real prompt (``judge_prompt`` around the task's own sample) with the
longest reply the call allows: one byte a token, ``max_output_tokens`` of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from niah.catalog.models import find_model
from niah.catalog.prices import prices_for
from niah.core.money.pricing import call_cost
from niah.core.money.spend import worst_case
from niah.core.prompts.answer_budget import call_budget, least_thinking_budget
from niah.core.prompts.texts import JUDGE_MAX_OUTPUT_TOKENS, judge_prompt
from niah.core.request.spec import RunRequest
from niah.tasks import make_sample

JUDGE = "gemini-3.8-flash"
GRID = {"context_lengths": [2_000, 8_000], "document_depth_percents": [0, 50, 100]}
LONG_NEEDLE = ("The best thing to do in San Francisco is to eat a sandwich in the park. " * 30)[
    :2_000
]
LONG_QUESTION = ("What is the best thing to do in San Francisco, and why is it best? " * 30)[:2_000]
JUDGED: dict[str, dict[str, Any]] = {
    "the dynamic needle": {},
    "a static needle and question of 2,000 characters each": {
        "dynamic_needle": False,
        "needle": LONG_NEEDLE,
        "retrieval_question": LONG_QUESTION,
    },
    "the user's own needles": {
        "task": "multi_needle",
        "needles": [LONG_NEEDLE, LONG_NEEDLE[::-1], "A third, short needle."],
        "retrieval_question": LONG_QUESTION,
    },
    "a run's own max_output_tokens": {"max_output_tokens": 20_000},
}


@pytest.mark.parametrize("options", JUDGED.values(), ids=JUDGED.keys())
def test_the_judges_worst_case_is_its_real_prompt_with_the_longest_reply(
    options: dict[str, Any],
) -> None:
    spec = RunRequest.model_validate(
        GRID
        | {"model_name": "gemini-3.8-flash", "scorer": "judge", "evaluator_model_name": JUDGE}
        | options
    )
    cells = spec.cells()
    budget = call_budget(spec, model=find_model(spec.model_name))
    worst = worst_case(spec, cells, budget, calls_per_cell=5)
    prices = prices_for(JUDGE)
    assert prices is not None
    judge_output = least_thinking_budget(JUDGE, JUDGE_MAX_OUTPUT_TOKENS).max_output_tokens
    longest_reply = "x" * budget.max_output_tokens  # one byte, at most one token, each
    expected = 0.0
    for cell in cells:
        sample = make_sample(spec, cell)  # the worker's sample: what the judge is shown
        prompt = judge_prompt(
            question=sample.question, reference=sample.needle, answer=longest_reply
        )
        expected += call_cost(prices, len(prompt.encode()), judge_output).usd
    assert worst.judge_usd == pytest.approx(expected, rel=1e-12)
