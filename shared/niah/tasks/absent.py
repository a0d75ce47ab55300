"""``absent``: a question about a key that is not in the context (a hallucination control).

A needle of the same form with another key sits at the cell's depth, so the context
looks like it could hold the answer. Correct is an answer that says the key is not
there (the harness's prompt offers UNANSWERABLE) and gives no value of the needle's
kind; any such value is a hallucination, counted as a rate on the run.
"""

from __future__ import annotations

import re

from niah.core.prompts.prompt_builder import Insertion
from niah.core.request.grid import Cell
from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.results.scoring import mentions
from niah.tasks.base import (
    RULER_KIND_NAMES,
    NeedleType,
    RulerNeedleOptions,
    Sample,
    Task,
    Verdict,
    distinct_values,
    needle_value,
    ruler_needle,
    ruler_question,
    sample_rng,
    value_pattern,
)

# Ways of saying "it is not there".
DECLINES = re.compile(
    r"unanswerable|\bnot (?:be )?(?:mentioned|found|present|given|provided|stated|listed|"
    r"included|specified|available)|\bnot in the (?:context|text|document|passage)|"
    r"\bno (?:such|mention|information|special magic|record)|\bdoes(?: not|n't) "
    r"(?:mention|contain|say|appear|include|specify)|\bcannot (?:find|be found|answer)|"
    r"\bcan't (?:find|answer)|\bisn't (?:mentioned|there|in)|\bthere (?:is|are) no\b|\bnone\b",
    re.IGNORECASE,
)


class AbsentOptions(RulerNeedleOptions):
    """RULER's needles: the kinds of the present key and value, and of the asked key."""

    takes_distractors = True

    def answer_bytes(self, request: RunOptions) -> int:
        """A decline that restates a needle line's worth of key and value."""
        return self.needle_line_bytes()


class Absent(Task[AbsentOptions]):
    """Asks for a key no needle holds; scores declining, counts invented values."""

    name = "absent"
    options = AbsentOptions

    def sample(self, spec: RunRequest, cell: Cell) -> Sample:
        """One needle of another key at the cell's depth; the asked key is nowhere."""
        options = self.options_of(spec)
        rng = sample_rng(spec.seed, cell, self.name)
        present, asked = distinct_values(rng, options.needle_key_type, 2)
        value_kind = options.needle_value_type
        value = needle_value(rng, value_kind)
        kind = RULER_KIND_NAMES[value_kind]
        return Sample(
            insertions=(Insertion(ruler_needle(present, value, value_kind), cell.depth_percent),),
            question=ruler_question(kind, asked, one_value=True)[0],
            expected=(),
            # No answer lead: one would push a base model into giving a value.
            details={
                "asked_key": asked,
                "present_key": present,
                "present_value": value,
                "value_kind": value_kind,
            },
        )

    def score(self, sample: Sample, answer: str) -> Verdict:
        """Correct: declines and invents nothing. Any value of the kind: hallucinated."""
        kind: NeedleType = sample.details["value_kind"]
        # The keys are the question's words: echoed back ("no number for 4412..."), they
        # are not values, even when keys and values are of one kind.
        unkeyed = answer
        for key in (sample.details["asked_key"], sample.details["present_key"]):
            unkeyed = re.sub(re.escape(key), " ", unkeyed, flags=re.IGNORECASE)
        hallucinated = value_pattern(kind).search(unkeyed) is not None
        declined = DECLINES.search(answer) is not None
        correct = declined and not hallucinated
        return Verdict(
            "correct" if correct else "wrong",
            1.0 if correct else 0.0,
            {
                "hallucinated": hallucinated,
                "declined": declined,
                "returned_present_value": mentions(answer, sample.details["present_value"]),
            },
        )
