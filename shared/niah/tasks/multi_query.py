"""``multi_query``: several keys asked in one question (RULER's multiquery)."""

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


class MultiQuery:
    """``num_queries`` keys with one value each, from the cell's depth to the end."""

    name = "multi_query"

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Distinct keys and values; every key is asked for."""
        rng = sample_rng(spec, cell, self.name)
        count = spec.num_queries
        keys = distinct_values(rng, spec.needle_key_type, count)
        values = distinct_values(rng, spec.needle_value_type, count)
        depths = spread_depths(cell.depth_percent, count)
        insertions = tuple(
            Insertion(ruler_needle(key, value, spec.needle_value_type), depth)
            for key, value, depth in zip(keys, values, depths, strict=True)
        )
        return ruler_sample(insertions, keys, spec.needle_value_type, values, {"keys": keys})

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The share of the asked keys whose value the answer holds."""
        return share_verdict(answer, sample.expected)
