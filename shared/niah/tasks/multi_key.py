"""``multi_key``: the asked needle among distractors of the same form (RULER's multikey).

Only the asked key's value counts; an answer that gives a distractor's value is a
distractor hit, counted apart.
"""

from __future__ import annotations

from pydantic import Field

from niah.core.prompts.prompt_builder import Insertion
from niah.core.request.grid import Cell
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.results.scoring import mentions
from niah.tasks.base import (
    RulerNeedleOptions,
    Sample,
    Task,
    Verdict,
    distinct_values,
    ruler_needle,
    ruler_sample,
    sample_rng,
)


class MultiKeyOptions(RulerNeedleOptions):
    """RULER's needles, and how many other keys stand beside the asked one."""

    num_distractors: int = Field(
        default=3, ge=0, le=100, description="multi_key: needles of the same form with other keys"
    )

    takes_distractors = True

    def answer_bytes(self, request: RunOptions) -> int:
        """The asked key's needle line."""
        return self.needle_line_bytes()


class MultiKey(Task[MultiKeyOptions]):
    """One asked key at the cell's depth, ``num_distractors`` other keys anywhere."""

    name = "multi_key"
    options = MultiKeyOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Distinct keys and values; distractors at seeded depths."""
        options = self.options_of(spec)
        rng = sample_rng(spec.seed, cell, self.name)
        count = 1 + options.num_distractors
        keys = distinct_values(rng, options.needle_key_type, count)
        values = distinct_values(rng, options.needle_value_type, count)
        depths = [cell.depth_percent] + [rng.uniform(0, 100) for _ in range(count - 1)]
        kind = options.needle_value_type
        insertions = tuple(
            Insertion(ruler_needle(key, value, kind), depth)
            for key, value, depth in zip(keys, values, depths, strict=True)
        )
        details = {"key": keys[0], "distractor_values": values[1:]}
        return ruler_sample(insertions, [keys[0]], kind, [values[0]], details)

    def score(self, sample: Sample, answer: str) -> Verdict:
        """1 when the asked value is there; a distractor's value is a distractor hit."""
        found = mentions(answer, sample.expected[0])
        hits = [v for v in sample.details["distractor_values"] if mentions(answer, v)]
        return Verdict(
            "correct" if found else "wrong",
            1.0 if found else 0.0,
            {"distractor_hit": bool(hits), "distractor_values_returned": len(hits)},
        )
