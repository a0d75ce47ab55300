"""Scorers: how well an answer retrieved the needle, on the harness's 1-10 scale."""

from __future__ import annotations

import re

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
