"""A task's sample: plain data the tasks make and the worker and the estimate read.

On the ground floor (``niah.core``) so that the estimate prices samples without importing
the tasks; ``niah.tasks`` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from niah.core.prompts.generated_context import ContextMaker
from niah.core.prompts.prompt_builder import Insertion


@dataclass(frozen=True)
class Sample:
    """One sample of a task: what to hide where, what to ask, what counts as right.

    ``answer_lead`` starts a well-formed answer; completion prompts for base models end
    with it. ``details`` keeps what the scorer needs beyond ``expected`` (distractors).
    A task that needs its own prompt shape gives ``template`` (MRCR's transcript); with
    ``conversational`` the prompt is a User/Assistant transcript that providers send as
    turns. ``answer_tokens`` is the answer budget the task needs at least. A task whose
    context is its own (RULER's word lists) gives ``context_maker`` and no insertions:
    no haystack is read.
    """

    insertions: tuple[Insertion, ...]
    question: str
    expected: tuple[str, ...]
    answer_lead: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    template: str | None = None
    conversational: bool = False
    answer_tokens: int = 0
    # A prompt given whole (Google's own MRCR samples), with its token count: not built.
    prompt: str | None = None
    prompt_tokens: int | None = None
    # A context the task generates to the cell's length instead of a haystack.
    context_maker: ContextMaker | None = None
    # How many of the insertions, at the end, are distractors (niah.tasks.distractors).
    distractors: int = 0

    @property
    def needle_insertions(self) -> tuple[Insertion, ...]:
        """The insertions that answer the question: all but the trailing distractors."""
        return self.insertions[: len(self.insertions) - self.distractors]

    @property
    def needle(self) -> str:
        """The inserted text, as stored on the cell (the harness's ``needle`` field)."""
        return "\n".join(insertion.text.strip() for insertion in self.needle_insertions)
