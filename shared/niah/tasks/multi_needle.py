"""``multi_needle``: several needles, all asked for at once (the Gemini 1.5 report's test).

The first needle sits at the cell's depth and the rest are evenly spaced after it toward
the end, as gkamradt's multi-needle harness places them; the score is the share found.
The harness's own list (``needles``, with ``retrieval_question``) is placed the same way,
and scored by ``expected_answers`` or the judge.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from niah.core.prompts.prompt_builder import Insertion
from niah.core.prompts.vocabulary import CITIES
from niah.core.request.grid import Cell
from niah.core.request.request_options import MAX_NEEDLES, PromptText, ReportedScorer
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.core.results.chance import seeded_needles_floor
from niah.tasks.base import (
    CITY_BYTES,
    NEEDLE_LINE,
    VALUE_BYTES,
    Outcome,
    Sample,
    Task,
    Verdict,
    distinct_values,
    fraction_found,
    sample_rng,
    spread_depths,
)

# Needles per sample when num_needles is left out.
DEFAULT_NEEDLES = 3


class MultiNeedleOptions(TaskOptions):
    """Seeded needles (how many), or the harness's own list and what answers each."""

    num_needles: int | None = Field(
        default=None,
        ge=1,
        le=MAX_NEEDLES,
        description=f"multi_needle: needles (1-{MAX_NEEDLES}, default {DEFAULT_NEEDLES})",
    )
    # The harness's multi-needle list: the user's own sentences, asked for by
    # retrieval_question, scored by expected_answers (one per needle) or the judge.
    needles: list[PromptText] | None = Field(
        default=None,
        max_length=MAX_NEEDLES,
        description=(
            "multi_needle: your own needle sentences, as the harness's --needles "
            '\'["first.", "second."]\' (with retrieval_question)'
        ),
    )
    expected_answers: list[PromptText] | None = Field(
        default=None,
        max_length=MAX_NEEDLES,
        description=(
            "multi_needle with needles: what a right answer names for each needle, in order "
            "(scored exact); or a judge (scorer judge)"
        ),
    )

    takes_distractors = True
    added_options = frozenset({"needles", "expected_answers"})
    needle_options_hint = " (unless you give needles)"

    @field_validator("needles", "expected_answers")
    @classmethod
    def _check_texts(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("give at least one, or leave it out")
        for number, text in enumerate(value, 1):
            if not text.strip():
                raise ValueError(f"item {number} is empty; each needs words")
            if len(text) > 2000:
                raise ValueError(f"item {number} has {len(text)} characters; at most 2000")
        return value

    def needle_count(self) -> int:
        """The needles given, ``num_needles``, or the default."""
        if self.needles is not None:
            return len(self.needles)
        return self.num_needles or DEFAULT_NEEDLES

    def chance_floor(self) -> dict[str, Any] | None:
        """0 % with the seeded needles (``niah.core.results.chance``); none with your own."""
        return seeded_needles_floor(own_needles=self.needles is not None)

    def answer_bytes(self, request: RunOptions) -> int:
        """The user's needles and answers, or every seeded needle's line and number."""
        if self.needles is not None:
            return sum(len(t.encode()) for t in [*self.needles, *(self.expected_answers or [])])
        return self.needle_count() * (NEEDLE_LINE + CITY_BYTES + VALUE_BYTES["numbers"])

    def check(self, request: RunOptions) -> None:
        """The harness's list: its question, its answers, its scorer; no distractors of it."""
        if self.needles is not None or self.expected_answers is not None:
            self._check_own_needles(request)
        if request.distractors is not None and self.needles is not None:
            raise ValueError(
                "distractors are made from the seeded needles' form; your own needles have "
                "none: leave needles out (seeded needles), or leave distractors out"
            )

    def _check_own_needles(self, request: RunOptions) -> None:
        if self.needles is None:
            raise ValueError(
                "expected_answers go with needles (one per needle); give needles, or leave "
                "expected_answers out"
            )
        count = len(self.needles)
        if self.num_needles is not None and self.num_needles != count:
            raise ValueError(
                f"num_needles ({self.num_needles}) differs from the {count} needles given; "
                "leave num_needles out"
            )
        if "retrieval_question" not in request.model_fields_set:
            raise ValueError(
                "retrieval_question: your needles need the question that asks for them "
                "(as the harness's --retrieval_question)"
            )
        if self.expected_answers is not None and len(self.expected_answers) != count:
            raise ValueError(
                f"expected_answers has {len(self.expected_answers)} items for {count} "
                "needles; give one per needle, in order"
            )
        if request.scorer == "both":
            raise ValueError("scorer 'both' applies to task single; use exact or judge")
        if self.expected_answers is None and request.scorer != "judge":
            raise ValueError(
                "expected_answers: say what a right answer names for each needle (one per "
                "needle, scored exact), or grade with a judge (scorer 'judge' and "
                "evaluator_model_name)"
            )
        if request.scorer == "judge" and not request.evaluator_model_name:
            raise ValueError(
                "scorer 'judge' needs evaluator_model_name (the judge model), or give "
                "expected_answers"
            )

    def needle_options(self, request: RunOptions) -> frozenset[str]:
        """The question that asks for the user's own needles."""
        return frozenset({"retrieval_question"}) if self.needles is not None else frozenset()

    def reported_scorer(self, request: RunOptions) -> ReportedScorer:
        """The judge may grade the user's own needles (against them); else the share found."""
        return "judge" if self.needles is not None and request.scorer == "judge" else "task"

    def own_needles(self) -> tuple[str, ...] | None:
        """The harness's list, when given."""
        return None if self.needles is None else tuple(self.needles)


class MultiNeedle(Task[MultiNeedleOptions]):
    """``num_needles`` "special magic {city} number" needles; every number is asked for."""

    name = "multi_needle"
    options = MultiNeedleOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Distinct cities and numbers (or the user's needles), spread to the end."""
        options = self.options_of(spec)
        if options.needles is not None:
            return self._own_sample(spec, options, cell)
        rng = sample_rng(spec.seed, cell, self.name)
        count = options.needle_count()
        cities = rng.sample(CITIES, count)
        numbers = distinct_values(rng, "numbers", count)
        depths = spread_depths(cell.depth_percent, count)
        insertions = tuple(
            Insertion(f" The special magic {city} number is: {number}.", depth)
            for city, number, depth in zip(cities, numbers, depths, strict=True)
        )
        listed = ", ".join(cities)
        return Sample(
            insertions=insertions,
            question=(
                f"What are the special magic numbers for {listed}? Give each city with its number."
            ),
            expected=tuple(numbers),
            details={"keys": cities},
        )

    @staticmethod
    def _own_sample(spec: RunRequest, options: MultiNeedleOptions, cell: Cell) -> Sample:
        """The harness's ``needles`` in their order, each text as given (as the harness)."""
        needles = options.needles or []
        depths = spread_depths(cell.depth_percent, len(needles))
        return Sample(
            insertions=tuple(
                Insertion(text, depth) for text, depth in zip(needles, depths, strict=True)
            ),
            question=spec.retrieval_question,
            expected=tuple(options.expected_answers or ()),
            details={"own_needles": len(needles)},
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The share of the needles' numbers the answer holds."""
        share, found = fraction_found(answer, sample.expected)
        outcome: Outcome = "correct" if found == len(sample.expected) else "wrong"
        return Verdict(outcome, share, {"retrieved": found, "needles": len(sample.expected)})
