"""``multi_value``: one key with several values spread through the context (RULER)."""

from __future__ import annotations

from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.tasks.base import (
    Sample,
    Task,
    Verdict,
    distinct_values,
    sample_rng,
    share_verdict,
    spread_ruler_sample,
)


class MultiValue(Task):
    """``num_values`` needles of one key, from the cell's depth to the end."""

    name = "multi_value"

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """One key, distinct values; every value is asked for."""
        rng = sample_rng(spec, cell, self.name)
        key = distinct_values(rng, spec.needle_key_type, 1)[0]
        values = distinct_values(rng, spec.needle_value_type, spec.num_values)
        return spread_ruler_sample(spec, cell, [key] * spec.num_values, values)

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The share of the key's values the answer holds."""
        return share_verdict(answer, sample.expected)
