"""Scorers: how well an answer retrieved the needle, on the harness's 1-10 scale."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from niah.providers.base import ModelAnswer, Provider

RETRIEVED = 10
MISSED = 1


def exact_score(answer: str, expected: str) -> int:
    """10 if the expected answer appears in the answer, else 1.

    Digits are compared without separators so "7,304,912" counts for 7304912.
    """
    if not expected:
        return MISSED
    if expected.isdigit():
        found = re.sub(r"(?<=\d)[,\s.](?=\d{3}\b)", "", answer)
        return RETRIEVED if re.search(rf"(?<!\d){expected}(?!\d)", found) else MISSED
    return RETRIEVED if expected.casefold() in answer.casefold() else MISSED


# The NIAH harness's accuracy rubric for its LLM evaluator.
JUDGE_RUBRIC = """Score 1: The answer is completely unrelated to the reference.
Score 3: The answer has minor relevance but does not align with the reference.
Score 5: The answer has moderate relevance but contains inaccuracies.
Score 7: The answer aligns with the reference but has minor omissions.
Score 10: The answer is completely accurate and aligns perfectly with the reference."""

JUDGE_TEMPLATE = """You are grading how accurately an answer retrieves a fact.

Question: {question}
Reference: {reference}
Answer to grade: {answer}

Rubric:
{rubric}

Reply on the first line with "Score: N" where N is one of 1, 3, 5, 7, 10, then one sentence
explaining why."""

_WORDS = {"one": 1, "three": 3, "five": 5, "seven": 7, "ten": 10}
_PATTERNS = (
    re.compile(r"score\W{0,5}(\d{1,2}(?:\.\d+)?)(?:\s*/\s*10)?", re.IGNORECASE),
    re.compile(r"(\d{1,2}(?:\.\d+)?)\s*/\s*10"),
    re.compile(r"\[\[(\d{1,2})\]\]"),
    re.compile(r"^\W*(\d{1,2}(?:\.\d+)?)\b"),
)


def judge_prompt(*, question: str, reference: str, answer: str) -> str:
    """The judge's prompt: the harness's rubric around one answer."""
    return JUDGE_TEMPLATE.format(
        question=question, reference=reference.strip(), answer=answer.strip(), rubric=JUDGE_RUBRIC
    )


def parse_judge_score(reply: str) -> int | None:
    """The 1-10 score in a judge's reply, however it was phrased; None if there is none.

    Accepts "Score: 7", "**Score**: 7/10", "8/10", "[[10]]", a bare leading "10." and
    "Score: ten". Values are clamped to 1..10 and rounded.
    """
    for pattern in _PATTERNS:
        match = pattern.search(reply)
        if match:
            return min(10, max(1, round(float(match.group(1)))))
    word = re.search(r"score\W{0,5}(one|three|five|seven|ten)\b", reply, re.IGNORECASE)
    return _WORDS[word.group(1).lower()] if word else None


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's score (None if its reply had none), its reply, and the call."""

    score: int | None
    reasoning: str
    answer: ModelAnswer


def judge_answer(
    evaluator: Provider, *, question: str, reference: str, answer: str
) -> JudgeVerdict:
    """Ask the evaluator model to grade ``answer`` against ``reference``."""
    reply = evaluator.generate(
        judge_prompt(question=question, reference=reference, answer=answer),
        max_output_tokens=256,
    )
    return JudgeVerdict(parse_judge_score(reply.text), reply.text.strip(), reply)
