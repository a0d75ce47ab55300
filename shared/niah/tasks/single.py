"""``single``: the harness's one needle (the Gemini report's city and number by default)."""

from __future__ import annotations

from niah.core.prompts.needles import needle_for
from niah.core.prompts.prompt_builder import Insertion
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.results.scoring import mentions
from niah.tasks.base import Sample, Task, Verdict


class SingleNeedle(Task):
    """One needle at the cell's depth; exact retrieval of its answer (or the judge's)."""

    name = "single"

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """The cell's needle: seeded per cell and sample, or the user's static one."""
        needle = needle_for(spec, cell)
        return Sample(
            insertions=(Insertion(needle.text, cell.depth_percent),),
            question=needle.question,
            expected=(needle.expected_answer,) if needle.expected_answer else (),
            answer_lead=needle.answer_lead,
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """Correct when the answer holds the expected answer."""
        found = bool(sample.expected) and mentions(answer, sample.expected[0])
        return Verdict("correct" if found else "wrong", 1.0 if found else 0.0)
