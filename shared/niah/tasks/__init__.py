"""The test kinds, one module each; ``get_task`` picks one by the run's ``task`` option.

Each task owns its options (a typed model the run request validates), how a sample is
made (insertions, question, expected answers) and how an answer is scored
(``niah.tasks.base``); the worker, the dispatcher and the report know none of it.
``TASKS`` is the registry: adding a task is its module and one line there, with its
import (docs/tasks/adding-a-task.md).
"""

from __future__ import annotations

from typing import Any

from niah.core.request.axes import at_variant, distractor_count
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import register_task_options
from niah.errors import ConfigurationError
from niah.tasks.absent import Absent
from niah.tasks.base import Sample, Task, Verdict
from niah.tasks.common_words import CommonWords
from niah.tasks.distractors import note_distractors, with_distractors
from niah.tasks.frequent_words import FrequentWords
from niah.tasks.graphwalks import GraphWalks
from niah.tasks.mrcr import Mrcr
from niah.tasks.multi_key import MultiKey
from niah.tasks.multi_needle import MultiNeedle
from niah.tasks.multi_query import MultiQuery
from niah.tasks.multi_value import MultiValue
from niah.tasks.nonliteral import NonLiteral
from niah.tasks.single import SingleNeedle
from niah.tasks.variable_tracking import VariableTracking

__all__ = [
    "DISTRACTOR_TASKS",
    "TASKS",
    "Sample",
    "Task",
    "Verdict",
    "get_task",
    "make_sample",
    "score_answer",
]


def registry(*tasks: Task[Any]) -> dict[str, Task[Any]]:
    """The tasks by name, each one's options made known to the run request."""
    for task in tasks:
        register_task_options(task.name, task.options)
    return {task.name: task for task in tasks}


# The registry: one line a task.
TASKS = registry(
    SingleNeedle(),
    MultiNeedle(),
    MultiKey(),
    MultiValue(),
    MultiQuery(),
    Absent(),
    NonLiteral(),
    Mrcr(),
    VariableTracking(),
    CommonWords(),
    FrequentWords(),
    GraphWalks(),
)
# The tasks whose needle a distractor can imitate (niah.tasks.distractors).
DISTRACTOR_TASKS = tuple(name for name, task in TASKS.items() if task.options.takes_distractors)


def get_task(name: str) -> Task[Any]:
    """The task called ``name``."""
    if name not in TASKS:
        raise ConfigurationError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]


def make_sample(spec: RunRequest, cell: Cell) -> Sample:
    """The cell's sample: its task's, at the cell's variant, with its distractors."""
    spec = at_variant(spec, cell.variant)
    sample = get_task(spec.task).sample(spec, cell)
    count = distractor_count(spec)
    return with_distractors(spec, cell, sample, count) if count else sample


def score_answer(task: Task, sample: Sample, answer: str) -> Verdict:
    """The task's verdict, noting any distractor values the answer gave."""
    return note_distractors(sample, answer, task.score(sample, answer))
