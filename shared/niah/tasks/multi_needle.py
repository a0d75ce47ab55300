"""``multi_needle``: several needles, all asked for at once (the Gemini 1.5 report's test).

The first needle sits at the cell's depth and the rest are evenly spaced after it toward
the end, as gkamradt's multi-needle harness places them; the score is the share found.
The harness's own list (``needles``, with ``retrieval_question``) is placed the same way,
and scored by ``expected_answers`` or the judge.
"""

from __future__ import annotations

from niah.core.prompts.prompt_builder import Insertion
from niah.core.prompts.vocabulary import CITIES
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.tasks.base import (
    Sample,
    Task,
    Verdict,
    distinct_values,
    fraction_found,
    sample_rng,
    spread_depths,
)


class MultiNeedle(Task):
    """``num_needles`` "special magic {city} number" needles; every number is asked for."""

    name = "multi_needle"

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Distinct cities and numbers (or the user's needles), spread to the end."""
        if spec.needles is not None:
            return self._own_sample(spec, cell)
        rng = sample_rng(spec, cell, self.name)
        count = spec.needle_count()
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
    def _own_sample(spec: RunRequest, cell: Cell) -> Sample:
        """The harness's ``needles`` in their order, each text as given (as the harness)."""
        needles = spec.needles or []
        depths = spread_depths(cell.depth_percent, len(needles))
        return Sample(
            insertions=tuple(
                Insertion(text, depth) for text, depth in zip(needles, depths, strict=True)
            ),
            question=spec.retrieval_question,
            expected=tuple(spec.expected_answers or ()),
            details={"own_needles": len(needles)},
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The share of the needles' numbers the answer holds."""
        share, found = fraction_found(answer, sample.expected)
        outcome = "correct" if found == len(sample.expected) else "wrong"
        return Verdict(outcome, share, {"retrieved": found, "needles": len(sample.expected)})
