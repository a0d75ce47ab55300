"""``multi_value``: one key with several values spread through the context (RULER)."""

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


class MultiValueOptions(RulerNeedleOptions):
    """RULER's needles, and how many values the one key has."""

    num_values: int = Field(
        default=4, ge=1, le=100, description="multi_value: values of the one key"
    )

    takes_distractors = True

    def answer_bytes(self, request: RunOptions) -> int:
        """A needle line for each value."""
        return self.num_values * self.needle_line_bytes()


class MultiValue(Task[MultiValueOptions]):
    """``num_values`` needles of one key, from the cell's depth to the end."""

    name = "multi_value"
    options = MultiValueOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """One key, distinct values; every value is asked for."""
        options = self.options_of(spec)
        rng = sample_rng(spec.seed, cell, self.name)
        key = distinct_values(rng, options.needle_key_type, 1)[0]
        values = distinct_values(rng, options.needle_value_type, options.num_values)
        keys = [key] * options.num_values
        return spread_ruler_sample(options.needle_value_type, cell, keys, values)

    def score(self, sample: Sample, answer: str) -> Verdict:
        """The share of the key's values the answer holds."""
        return share_verdict(answer, sample.expected)
