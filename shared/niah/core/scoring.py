"""Scoring: how well an answer retrieved the needle, on the harness's 1-10 scale."""

from __future__ import annotations

import re
from dataclasses import dataclass

from niah.core.interfaces import ModelAnswer, Provider
from niah.core.prompts import JUDGE_MAX_OUTPUT_TOKENS, judge_prompt
from niah.models.catalog import least_thinking_budget

RETRIEVED = 10
MISSED = 1


def mentions(answer: str, expected: str) -> bool:
    """Whether ``expected`` appears in ``answer``.

    Digits are compared without separators ("7,304,912" counts for 7304912) and not
    inside a longer number; words as whole words, ignoring case; anything else (a
    UUID, a phrase) as a case-insensitive substring.
    """
    if not expected:
        return False
    if expected.isdigit():
        found = re.sub(r"(?<=\d)[,\s.](?=\d{3}\b)", "", answer)
        return re.search(rf"(?<!\d){expected}(?!\d)", found) is not None
    if re.fullmatch(r"[A-Za-z]+", expected):
        return re.search(rf"\b{expected}\b", answer, re.IGNORECASE) is not None
    return expected.casefold() in answer.casefold()


def exact_score(answer: str, expected: str) -> int:
    """10 if the expected answer appears in the answer, else 1 (the harness's scale)."""
    return RETRIEVED if mentions(answer, expected) else MISSED


# Finish reasons (Vertex AI's, and OpenAI-style "length") that say an answer was blocked,
# or that the answer budget ran out: thinking can spend all of it.
BLOCKED_FINISH = ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII")
OUT_OF_BUDGET_FINISH = ("MAX_TOKENS", "LENGTH")


def unscored_reason(text: str, finish_reason: str | None) -> str | None:
    """Why an answer cannot be scored, or None if it can.

    A blocked answer, or an empty one cut off by the answer budget, is neither right
    nor wrong: it never counts as a miss.
    """
    finish = (finish_reason or "").upper()
    if finish.startswith("PROMPT_BLOCKED") or finish in BLOCKED_FINISH:
        return f"blocked ({finish_reason})"
    if not text.strip() and finish in OUT_OF_BUDGET_FINISH:
        return f"no answer within the output budget ({finish_reason})"
    return None


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
    """Ask the evaluator model to grade ``answer`` against ``reference``.

    With the least thinking the model allows, and the reply's room on top of it.
    """
    budget = least_thinking_budget(evaluator.model_name, JUDGE_MAX_OUTPUT_TOKENS)
    reply = evaluator.generate(
        judge_prompt(question=question, reference=reference, answer=answer),
        max_output_tokens=budget.max_output_tokens,
        thinking_budget=budget.thinking_budget,
        thinking_level=budget.thinking_level,
    )
    return JudgeVerdict(parse_judge_score(reply.text), reply.text.strip(), reply)
