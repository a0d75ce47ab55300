"""The test kinds, one module each; ``get_task`` picks one by the run's ``task`` option.

Each task owns how a sample is made (insertions, question, expected answers) and how an
answer is scored (``niah.tasks.base``); the worker, the dispatcher and the report know
none of it.
"""

from __future__ import annotations

from niah.errors import ConfigurationError
from niah.tasks.absent import Absent
from niah.tasks.base import Sample, Task, Verdict
from niah.tasks.common_words import CommonWords
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

__all__ = ["TASKS", "Sample", "Task", "Verdict", "get_task"]

TASKS: dict[str, Task] = {
    task.name: task
    for task in (
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
}


def get_task(name: str) -> Task:
    """The task called ``name``."""
    if name not in TASKS:
        raise ConfigurationError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]
