"""Scoring: how well an answer retrieved the needle, on the harness's 1-10 scale."""

from __future__ import annotations

import re
from dataclasses import dataclass

from niah.core.interfaces import ModelAnswer, Provider
from niah.core.prompts.answer_budget import CallBudget, least_thinking_budget
from niah.core.prompts.texts import JUDGE_MAX_OUTPUT_TOKENS, judge_prompt

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
    """Why an answer cannot be scored, or None if it can: a blocked answer.

    It is neither right nor wrong: it never counts as a miss.
    """
    finish = (finish_reason or "").upper()
    if finish.startswith("PROMPT_BLOCKED") or finish in BLOCKED_FINISH:
        return f"blocked ({finish_reason})"
    return None


def ran_past_its_room(answer: ModelAnswer, budget: CallBudget) -> bool:
    """Whether a reply cut off at its budget had first written all a right answer needs.

    ``budget.answer_tokens`` is the room a right answer takes (its needles, keys or
    values written out as a model restates them), apart from thinking. A reply whose own
    text filled that room and went on (a base model counting on past the values it
    listed) was not cut short of its answer: more room would only let it run on. It is
    scored as it stands, as RULER scores every reply as generated within its budget
    (``string_match_all`` over the prediction, NVIDIA/RULER
    scripts/eval/synthetic/constants.py; read 2026-12-06 in the search tool's code
    corpus, through ports that quote it). A reply cut before that room (thinking spent
    the budget, or ``max_output_tokens`` was set below it) stays truncated.
    """
    return (
        (answer.finish_reason or "").upper() in OUT_OF_BUDGET_FINISH
        and budget.answer_tokens > 0
        and (answer.output_tokens or 0) >= budget.answer_tokens
    )


def truncated_reason(answer: ModelAnswer, budget: CallBudget) -> str | None:
    """Why an answer was cut off by its output budget, with the fix; None if it was not.

    A reply that ends MAX_TOKENS (Vertex) or ``length`` (llama.cpp, OpenAI-style) may have
    lost any part of its answer, a value cut in half among them: it is ``truncated``,
    counted apart and never scored, so no cut answer reads as a wrong one; unless it ran
    past the room its answer takes (``ran_past_its_room``), when the reason is kept
    beside the score.
    """
    if (answer.finish_reason or "").upper() not in OUT_OF_BUDGET_FINISH:
        return None
    thought = answer.thinking_tokens or 0
    spent = f"{answer.output_tokens or 0} answer tokens" + (
        f" after {thought} thinking tokens" if thought else ""
    )
    if budget.answer_tokens and (answer.output_tokens or 0) >= budget.answer_tokens:
        # It had all the room a right answer takes and did not stop: more will not help.
        fix = "the reply ran on past that room without stopping (a model repeating itself)"
    elif thought == 0:
        fix = "leave max_output_tokens out or raise it"
    else:
        fix = "raise max_output_tokens, or lower thinking_budget / thinking_level"
    return (
        f"cut off at the output budget of {budget.max_output_tokens} tokens "
        f"({answer.finish_reason}: {spent}; the answer needs up to {budget.answer_tokens}); "
        f"{fix}"
    )


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
