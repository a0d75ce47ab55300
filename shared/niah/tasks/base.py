"""What a task is: its options, a sample generator and a scorer, behind one small interface.

A task declares the options it reads (a ``TaskOptions`` model, validated with the run
request). It turns (run spec, cell) into a ``Sample``: the insertions into the haystack
(text and depth), the question, the expected answers. It turns a sample and an answer
into a ``Verdict``: correct or wrong, a score in [0, 1] and what it noticed. The worker,
the dispatcher and the report know no task's details; they call these functions.

Samples are derived from the run's seed, the cell and the sample index alone (a hash,
never a shared random generator), so a run is reproducible and no two cells share state.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import Field

from niah.core.interfaces import BlobStore
from niah.core.prompts.mrcr_files import RunSource
from niah.core.prompts.prompt_builder import Insertion
from niah.core.prompts.sample import Sample
from niah.core.prompts.vocabulary import ADJECTIVES, CITIES, NOUNS
from niah.core.request.grid import Cell
from niah.core.request.grid import sample_rng as sample_rng  # admission draws cells too
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.core.results.scoring import mentions

Outcome = Literal["correct", "wrong", "unscored", "truncated"]
# RULER's kinds of keys and values.
NeedleType = Literal["words", "numbers", "uuids"]
Options = TypeVar("Options", bound=TaskOptions)

# The longest right answers, in UTF-8 bytes (``TaskOptions.answer_bytes``; every task's are
# checked against the real tokenizer by tests/unit/test_answer_budget.py). A restated
# needle line around its key and value: "One of the special magic numbers for {key} is:
# {value}." (44 bytes without them), "The special magic {city} number is: ...".
NEEDLE_LINE = 48
# A number may come back with separators (7,304,912).
VALUE_BYTES: dict[NeedleType, int] = {
    "numbers": 9,
    "uuids": 36,
    "words": max(map(len, ADJECTIVES)) + 1 + max(map(len, NOUNS)),
}
CITY_BYTES = max(len(city.encode()) for city in CITIES)
# RULER's answers list their items, each with a number or separator ("1. word, ").
LISTED_ITEM = 6


@dataclass(frozen=True)
class Verdict:
    """How an answer did: its outcome, a score in [0, 1], and what was noticed."""

    outcome: Outcome
    score: float
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ShortLength:
    """A length too short for the run's generated context: the option to change, and why."""

    field: str
    message: str


class Task(Generic[Options]):
    """A test kind: its options, how a sample is made and how an answer is scored.

    ``name``, ``options``, ``sample`` and ``score`` are every task's; the other methods
    are what admission asks of a task whose context or samples are its own, and answer
    "nothing to say" here.
    """

    name: ClassVar[str]
    # The model of the task's options (the registry registers it with the request).
    options: type[Options]

    def options_of(self, spec: RunRequest) -> Options:
        """The run's options of this task (the request validated them with ``options``)."""
        given = spec.task_options
        if not isinstance(given, self.options):
            raise TypeError(f"task {self.name} was given {type(given).__name__}")
        return given

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """The sample of ``cell`` (deterministic from the run's seed)."""
        raise NotImplementedError

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The verdict on ``answer`` (an answer that exists; unscored ones never get here)."""
        raise NotImplementedError

    def short_length(self, spec: RunRequest, cells: Sequence[Cell]) -> ShortLength | None:
        """The first length of ``cells`` the task's own context cannot be built at, if any.

        Asked at admission, without a tokenizer, so a run is refused before it is paid
        rather than failed cell by cell (``ContextTooShortError`` at the worker).
        """
        return None

    def published_rows(self, spec: RunRequest, blobs: BlobStore) -> RunSource | None:
        """The published samples the run reads instead of a grid (one cell a row), if any.

        Resolved at admission: their listing's fingerprint is part of the run ID, and an
        unusable source is the request's error (``RequestError``, a 400).
        """
        return None


class RulerNeedleOptions(TaskOptions):
    """The kinds of key and value of RULER's needles (its NIAH tasks' ``type_needle_k/v``)."""

    needle_key_type: NeedleType = Field(
        default="words", description="RULER-style tasks: words, numbers or uuids as keys"
    )
    needle_value_type: NeedleType = Field(
        default="numbers",
        description="RULER-style tasks: words, numbers (7 digits) or uuids as values",
    )

    def needle_line_bytes(self) -> int:
        """A right answer's restated needle line, with its key and value."""
        return NEEDLE_LINE + VALUE_BYTES[self.needle_key_type] + VALUE_BYTES[self.needle_value_type]


def spread_depths(first: float, count: int) -> list[float]:
    """``count`` depths: the first at ``first``, the rest evenly spaced after it to the end.

    As gkamradt's multi-needle harness does: the interval (100 - first) / count apart.
    """
    step = (100.0 - first) / count
    return [first + i * step for i in range(count)]


def needle_value(rng: random.Random, kind: NeedleType) -> str:
    """A value or key of RULER's kinds: a word, a 7-digit number, or a UUID."""
    if kind == "numbers":
        return str(rng.randint(1_000_000, 9_999_999))
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return f"{rng.choice(ADJECTIVES)}-{rng.choice(NOUNS)}"


def distinct_values(rng: random.Random, kind: NeedleType, count: int) -> list[str]:
    """``count`` different values of one kind (no two needles share a key or a value)."""
    values: list[str] = []
    while len(values) < count:
        value = needle_value(rng, kind)
        if value not in values:
            values.append(value)
    return values


def fraction_found(answer: str, expected: Sequence[str]) -> tuple[float, int]:
    """The share of ``expected`` values the answer mentions, and how many."""
    found = sum(1 for value in expected if mentions(answer, value))
    return found / len(expected), found


# RULER's needle, kept in its words: "One of the special magic {type} for {key} is: {value}."
RULER_NEEDLE = " One of the special magic {kind} for {key} is: {value}."
RULER_KIND_NAMES: dict[NeedleType, str] = {
    "numbers": "numbers",
    "words": "words",
    "uuids": "uuids",
}


def ruler_needle(key: str, value: str, value_kind: NeedleType) -> str:
    """One RULER-form needle."""
    return RULER_NEEDLE.format(kind=RULER_KIND_NAMES[value_kind], key=key, value=value)


def value_pattern(kind: NeedleType) -> re.Pattern[str]:
    """What any value of a kind looks like in an answer (to spot invented ones)."""
    if kind == "numbers":
        return re.compile(r"(?<!\d)\d{7}(?!\d)")
    if kind == "uuids":
        return re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
    # Word values are adjective-noun pairs from our pools, not any hyphenated word.
    return re.compile(rf"\b(?:{'|'.join(ADJECTIVES)})-(?:{'|'.join(NOUNS)})\b", re.I)


# RULER's question and answer prefix for its NIAH tasks, in its words
# (NVIDIA/RULER scripts/data/synthetic/constants.py, read 2026-11-26 at c3f5e3b).
RULER_QUESTION = "What are all the special magic {kind} for {query} mentioned in the provided text?"
RULER_ANSWER_LEAD = "The special magic {kind} for {query} mentioned in the provided text are"


def ruler_question(kind: str, query: str, *, one_value: bool) -> tuple[str, str]:
    """RULER's question and answer lead; in the singular when one value is asked for.

    RULER rewrites "are all" to "is" and drops the type's plural "s" when a single
    value is the answer (niah_single, niah_multikey).
    """
    question = RULER_QUESTION.format(kind=kind, query=query)
    lead = RULER_ANSWER_LEAD.format(kind=kind, query=query)
    if one_value:
        singular = kind.removesuffix("s")
        question = question.replace("are all", "is").replace(f"magic {kind}", f"magic {singular}")
        lead = lead.replace(" are", " is").replace(f"magic {kind}", f"magic {singular}")
    return question, lead


def ruler_query(keys: Sequence[str]) -> str:
    """RULER's way of asking for several keys: "a, b, and c"."""
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]


def ruler_sample(
    insertions: tuple[Insertion, ...],
    asked: Sequence[str],
    value_kind: NeedleType,
    expected: Sequence[str],
    details: dict[str, Any] | None = None,
) -> Sample:
    """A RULER-form sample: its question about ``asked`` and its answer lead."""
    kind, query = RULER_KIND_NAMES[value_kind], ruler_query(asked)
    question, lead = ruler_question(kind, query, one_value=len(expected) == 1)
    return Sample(
        insertions=insertions,
        question=question,
        expected=tuple(expected),
        answer_lead=lead,
        details=details or {},
    )


def share_verdict(answer: str, expected: Sequence[str]) -> Verdict:
    """Correct when every expected value is there; the score is the share found."""
    share, found = fraction_found(answer, expected)
    outcome: Outcome = "correct" if found == len(expected) else "wrong"
    return Verdict(outcome, share, {"retrieved": found, "asked": len(expected)})


def spread_ruler_sample(
    kind: NeedleType, cell: Cell, keys: Sequence[str], values: Sequence[str]
) -> Sample:
    """RULER needles of ``keys[i]: values[i]`` (of ``kind``) from the cell's depth to the end.

    All are asked. ``multi_value`` repeats one key; ``multi_query`` gives each value its
    own key.
    """
    depths = spread_depths(cell.depth_percent, len(values))
    insertions = tuple(
        Insertion(ruler_needle(key, value, kind), depth)
        for key, value, depth in zip(keys, values, depths, strict=True)
    )
    asked = list(dict.fromkeys(keys))  # each key once, in order
    return ruler_sample(insertions, asked, kind, values, {"keys": asked})


def ruler_recall(answer: str, expected: Sequence[str]) -> float:
    """RULER's ``string_match_all`` for one sample: the share of expected items in the answer.

    Each item counts when it is a case-insensitive substring of the answer; items the
    answer adds are not penalised (NVIDIA/RULER scripts/eval/synthetic/constants.py, read
    2026-11-26 at c3f5e3b; RULER reports it x 100, rounded to 2 decimals, per task).
    """
    lowered = answer.lower()
    return sum(1.0 if item.lower() in lowered else 0.0 for item in expected) / len(expected)


def recall_verdict(answer: str, expected: Sequence[str]) -> Verdict:
    """RULER's recall as a verdict: correct when every expected item is there."""
    share = ruler_recall(answer, expected)
    found = round(share * len(expected))
    outcome: Outcome = "correct" if found == len(expected) else "wrong"
    return Verdict(outcome, share, {"retrieved": found, "asked": len(expected)})
