"""``multi_value``: one key with several values spread through the context (RULER)."""

from __future__ import annotations

from niah.core.prompt_builder import Insertion
from niah.core.spec import Cell, RunRequest
from niah.tasks.base import (
    Sample,
    Verdict,
    distinct_values,
    ruler_needle,
    ruler_sample,
    sample_rng,
    share_verdict,
    spread_depths,
)


class MultiValue:
    """``num_values`` needles of one key, from the cell's depth to the end."""

    name = "multi_value"

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """One key, distinct values; every value is asked for."""
        rng = sample_rng(spec, cell, self.name)
        key = distinct_values(rng, spec.needle_key_type, 1)[0]
        values = distinct_values(rng, spec.needle_value_type, spec.num_values)
        depths = spread_depths(cell.depth_percent, spec.num_values)
        insertions = tuple(
            Insertion(ruler_needle(key, value, spec.needle_value_type), depth)
            for value, depth in zip(values, depths, strict=True)
        )
        return ruler_sample(insertions, [key], spec.needle_value_type, values, {"key": key})

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The share of the key's values the answer holds."""
        return share_verdict(answer, sample.expected)
