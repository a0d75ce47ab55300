"""``single``: the harness's one needle (the Gemini report's city and number by default).

Its options are the harness's own, fields of the run request (``needle``,
``retrieval_question``, ...): this task has none besides.
"""

from __future__ import annotations

from niah.core.prompts.needles import needle_for
from niah.core.prompts.prompt_builder import Insertion
from niah.core.request.grid import Cell
from niah.core.request.request_options import SINGLE_NEEDLE_OPTIONS, ReportedScorer
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import TaskOptions
from niah.core.results.scoring import mentions
from niah.tasks.base import CITY_BYTES, NEEDLE_LINE, VALUE_BYTES, Sample, Task, Verdict


class SingleOptions(TaskOptions):
    """The harness's needle: the request's own options, its scorer, distractors like it."""

    takes_distractors = True

    def answer_bytes(self, request: RunOptions) -> int:
        """The seeded needle's line and number, or the static needle and its answer."""
        if request.dynamic_needle:
            return CITY_BYTES + VALUE_BYTES["numbers"] + NEEDLE_LINE
        expected = request.static_expected_answer() or ""
        return len(request.needle.encode()) + len(expected.encode())

    def check(self, request: RunOptions) -> None:
        """Distractors are made from the seeded needle's form."""
        if request.distractors is not None and not request.dynamic_needle:
            raise ValueError(
                "distractors are made from the seeded needle's form; your own needle "
                "(dynamic_needle false) has none: use the seeded needle, or leave distractors out"
            )

    def needle_options(self, request: RunOptions) -> frozenset[str]:
        """Every one of the harness's needle options."""
        return frozenset(SINGLE_NEEDLE_OPTIONS)

    def reported_scorer(self, request: RunOptions) -> ReportedScorer:
        """The harness's: exact or the judge, as the request asks or its needle allows."""
        return request.harness_scorer()


class SingleNeedle(Task[SingleOptions]):
    """One needle at the cell's depth; exact retrieval of its answer (or the judge's)."""

    name = "single"
    options = SingleOptions

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
