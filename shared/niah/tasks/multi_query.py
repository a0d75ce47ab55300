"""``multi_query``: several keys asked in one question (RULER's multiquery)."""

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


class MultiQuery(Task):
    """``num_queries`` keys with one value each, from the cell's depth to the end."""

    name = "multi_query"

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Distinct keys and values; every key is asked for."""
        rng = sample_rng(spec, cell, self.name)
        keys = distinct_values(rng, spec.needle_key_type, spec.num_queries)
        values = distinct_values(rng, spec.needle_value_type, spec.num_queries)
        return spread_ruler_sample(spec, cell, keys, values)

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The share of the asked keys whose value the answer holds."""
        return share_verdict(answer, sample.expected)
