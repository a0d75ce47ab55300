"""The test kinds, one module each; ``get_task`` picks one by the run's ``task`` option.

Each task owns its options (a typed model the run request validates), how a sample is
made (insertions, question, expected answers) and how an answer is scored
(``niah.tasks.base``); the worker, the dispatcher and the report know none of it.
``TASKS`` is the registry: adding a task is its module and one line there, the path of
its class (docs/tasks/adding-a-task.md).
"""

from __future__ import annotations

import importlib
from typing import Any

from niah.core.request.axes import at_variant, distractor_count
from niah.core.request.grid import Cell
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import register_task_options
from niah.errors import ConfigurationError
from niah.tasks.base import Sample, Task, Verdict
from niah.tasks.distractors import note_distractors, with_distractors

__all__ = [
    "DISTRACTOR_TASKS",
    "TASKS",
    "Sample",
    "Task",
    "Verdict",
    "get_task",
    "make_sample",
    "registry",
    "score_answer",
]


def registry(*paths: str) -> dict[str, Task[Any]]:
    """The tasks by name, each made from its class's path ("module:Class").

    Each task's options are made known to the run request. A path, not an import and a
    name, so a task's whole registration is one line; a misspelt path fails at import,
    naming the path.
    """
    tasks: dict[str, Task[Any]] = {}
    for path in paths:
        module, _, name = path.partition(":")
        try:
            task = getattr(importlib.import_module(module), name)()
        except (ImportError, AttributeError) as error:
            raise ConfigurationError(
                f"task registry: no task class at {path!r}: {error}"
            ) from error
        if not isinstance(task, Task):
            raise ConfigurationError(f"task registry: {path!r} is not a Task")
        register_task_options(task.name, task.options)
        tasks[task.name] = task
    return tasks


# The registry: one line a task, the path of its class.
TASKS = registry(
    "niah.tasks.single:SingleNeedle",
    "niah.tasks.multi_needle:MultiNeedle",
    "niah.tasks.multi_key:MultiKey",
    "niah.tasks.multi_value:MultiValue",
    "niah.tasks.multi_query:MultiQuery",
    "niah.tasks.absent:Absent",
    "niah.tasks.nonliteral:NonLiteral",
    "niah.tasks.mrcr:Mrcr",
    "niah.tasks.variable_tracking:VariableTracking",
    "niah.tasks.common_words:CommonWords",
    "niah.tasks.frequent_words:FrequentWords",
    "niah.tasks.graphwalks:GraphWalks",
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
