import pytest

from niah.core.prompts.texts import judge_prompt
from niah.core.results.scoring import parse_judge_score


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Score: 10\nThe answer is exact.", 10),
        ("**Score**: 7/10 - minor omission", 7),
        ("8/10", 8),
        ("Rating: [[3]]", 3),
        ("10", 10),
        ("5.", 5),
        ("score:ten", 10),
        ("SCORE - 1. Unrelated.", 1),
        ("Score: 9.6", 10),
        ("Score: 42", 10),
        ("I cannot grade this.", None),
        ("", None),
    ],
)
def test_judge_replies_in_odd_formats_are_parsed(reply: str, score: int | None) -> None:
    assert parse_judge_score(reply) == score


def test_judge_prompt_carries_the_harness_rubric() -> None:
    prompt = judge_prompt(question="Q?", reference="The number is 5.", answer="5")
    for line in (
        "Score 1: The answer is completely unrelated",
        "Score 10: The answer is completely accurate",
    ):
        assert line in prompt
