"""``multi_query``: several keys asked in one question (RULER's multiquery)."""

from __future__ import annotations

from pydantic import Field

from niah.core.request.grid import Cell
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.tasks.base import (
    RulerNeedleOptions,
    Sample,
    Task,
    Verdict,
    distinct_values,
    sample_rng,
    share_verdict,
    spread_ruler_sample,
)


class MultiQueryOptions(RulerNeedleOptions):
    """RULER's needles, and how many keys one question asks."""

    num_queries: int = Field(
        default=4, ge=1, le=100, description="multi_query: keys asked in one question"
    )

    takes_distractors = True

    def answer_bytes(self, request: RunOptions) -> int:
        """A needle line for each asked key."""
        return self.num_queries * self.needle_line_bytes()


class MultiQuery(Task[MultiQueryOptions]):
    """``num_queries`` keys with one value each, from the cell's depth to the end."""

    name = "multi_query"
    options = MultiQueryOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """Distinct keys and values; every key is asked for."""
        options = self.options_of(spec)
        rng = sample_rng(spec.seed, cell, self.name)
        keys = distinct_values(rng, options.needle_key_type, options.num_queries)
        values = distinct_values(rng, options.needle_value_type, options.num_queries)
        return spread_ruler_sample(options.needle_value_type, cell, keys, values)

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The share of the asked keys whose value the answer holds."""
        return share_verdict(answer, sample.expected)
