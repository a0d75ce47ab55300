"""Scoring: how well an answer retrieved the needle, on the harness's 1-10 scale."""

from __future__ import annotations

import re
from dataclasses import dataclass

from niah.core.interfaces import ModelAnswer, Provider
from niah.core.prompts import JUDGE_MAX_OUTPUT_TOKENS, judge_prompt

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


_WORDS = {"one": 1, "three": 3, "five": 5, "seven": 7, "ten": 10}
_PATTERNS = (
    re.compile(r"score\W{0,5}(\d{1,2}(?:\.\d+)?)(?:\s*/\s*10)?", re.IGNORECASE),
    re.compile(r"(\d{1,2}(?:\.\d+)?)\s*/\s*10"),
    re.compile(r"\[\[(\d{1,2})\]\]"),
    re.compile(r"^\W*(\d{1,2}(?:\.\d+)?)\b"),
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
        max_output_tokens=JUDGE_MAX_OUTPUT_TOKENS,
    )
    return JudgeVerdict(parse_judge_score(reply.text), reply.text.strip(), reply)
