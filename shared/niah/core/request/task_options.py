"""A task's options: the typed model each task declares, and how the run request finds it.

Each task (``niah.tasks``, one module each) declares the options it reads as a subclass of
``TaskOptions`` in its own module, with their defaults, limits and help; the run request
carries the chosen task's as ``task_options``. On the wire they stay flat, under the
harness's names (each beside ``task``, as the request's own options are), so commands and
scripts carry over, and a request stored when every option was a field of its own (each
task's at its default) still reads: ``lift_task_options``.

The core cannot import the tasks (they build on it), so the task registry (``niah.tasks``)
registers each task's model here as it is imported, and the request looks the model up by
its task's name. Reading a request before the registry is imported is a mistake, and
says so rather than knowing no task.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from niah.core.request.request_options import DEFAULT_TASK, ReportedScorer

if TYPE_CHECKING:  # the request holds a task's options: they read the run's own alone
    from niah.core.request.run_options import RunOptions


class TaskOptions(BaseModel):
    """The options one task reads beyond the grid, and what it asks of the rest of the run.

    A subclass declares its fields (each under the harness's name, with its default, its
    limits and a ``description``, the command line's help) and says how long a right
    answer is (``answer_bytes``). The other methods have the answer of a task that takes
    nothing of the harness's needle and scores its own answers.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    # Context Rot's distractors (niah.core.request.axes) imitate the task's needle.
    takes_distractors: ClassVar[bool] = False
    # The context is haystack text, so it has an order to shuffle (``haystack_order``).
    takes_haystack_order: ClassVar[bool] = True
    # Options added after runs were first named by their options' hash: left unset
    # (None) they are not part of the run's ID, so runs named before keep their IDs.
    added_options: ClassVar[frozenset[str]] = frozenset()
    # Said after "X applies to task single" when the task reads the harness's needle
    # options only sometimes (``needle_options``).
    needle_options_hint: ClassVar[str] = ""

    def answer_bytes(self, request: RunOptions) -> int:
        """The most UTF-8 bytes a right answer to a sample of the run takes.

        An upper bound on its tokens (every character of an ASCII answer is at most one
        token): the call's output budget is made of it (``niah.core.prompts.answer_budget``,
        which adds the words around the values).
        """
        raise NotImplementedError(f"{type(self).__name__} must say how long a right answer is")

    def chance_floor(self) -> dict[str, Any] | None:
        """What guessing scores on the task (``niah.core.results.chance``); None: none here."""
        return None

    def check(self, request: RunOptions) -> None:
        """Refuse what the options cannot do with the rest of the request.

        Raise ``ValueError`` whose message starts with the option at fault (the user's
        error message: a 400 from the dispatcher, a line from the command line).
        """

    def needle_options(self, request: RunOptions) -> frozenset[str]:
        """Which of the harness's needle options (``SINGLE_NEEDLE_OPTIONS``) the task reads."""
        return frozenset()

    def reported_scorer(self, request: RunOptions) -> ReportedScorer:
        """The scorer the run reports: the task's own ("task") unless it takes the judge."""
        return "task"

    def own_needles(self) -> tuple[str, ...] | None:
        """The user's own needle sentences (the harness's ``--needles``), if the task takes them.

        The prompt holds them (admission's least length counts them) and a judge grades
        against them.
        """
        return None

    def published_source(self) -> str | None:
        """Where published samples are that the run reads instead of a grid, if it does."""
        return None


_MODELS: dict[str, type[TaskOptions]] = {}


def register_task_options(task: str, model: type[TaskOptions]) -> None:
    """Make ``task``'s options model known to the request (the task registry's job)."""
    known = _MODELS.setdefault(task, model)
    if known is not model:
        raise ValueError(f"task {task!r} is registered twice, with {known} and {model}")


def task_names() -> tuple[str, ...]:
    """Every registered task's name, in the registry's order."""
    return tuple(_registered())


def options_model(task: str) -> type[TaskOptions]:
    """The options model of ``task``; a ``ValueError`` listing the tasks if there is none."""
    models = _registered()
    if task not in models:
        names = [repr(name) for name in models]
        raise ValueError(f"must be {', '.join(names[:-1])} or {names[-1]}; {task!r} is no task")
    return models[task]


def option_owners() -> dict[str, tuple[str, ...]]:
    """Each task option's name, with the tasks that take it (in the registry's order)."""
    owners: dict[str, tuple[str, ...]] = {}
    for task, model in _registered().items():
        for name in model.model_fields:
            owners[name] = (*owners.get(name, ()), task)
    return owners


def _registered() -> Mapping[str, type[TaskOptions]]:
    if not _MODELS:
        raise RuntimeError(
            "no task is registered: import niah.tasks (the task registry) before reading "
            "a run request"
        )
    return _MODELS


def lift_task_options(data: dict[str, Any], run_fields: Collection[str]) -> dict[str, Any]:
    """The request with its task's options, given flat under their names, under ``task_options``.

    Another task's option is refused naming the tasks that take it, unless it holds its
    default: a request stored when every option was a field of its own holds them all.
    Left alone when the task is no task (its field says so) or a name is no option (the
    request refuses it as such).
    """
    task = data.get("task", DEFAULT_TASK)
    if not isinstance(task, str) or task not in _registered():
        return data
    fields = _MODELS[task].model_fields
    owners = option_owners()
    given = data.get("task_options")
    options: dict[str, Any] = {}
    lifted: dict[str, Any] = {}
    for name, value in data.items():
        if name in run_fields or name not in owners:
            lifted[name] = value
        elif name in fields:
            options[name] = value
        elif any(value != _MODELS[owner].model_fields[name].default for owner in owners[name]):
            raise ValueError(
                f"{name} applies to task {' or '.join(owners[name])}, not {task}; "
                f"set task or leave {name} out"
            )
    if not options:
        return lifted
    if isinstance(given, TaskOptions):
        given = given.model_dump(exclude_unset=True)
    if given is not None and not isinstance(given, dict):
        return lifted  # task_options is not an object: its field says so
    clash = sorted(set(options) & set(given or {}))
    if clash:
        raise ValueError(f"{clash[0]} is given twice, flat and in task_options; give it once")
    return lifted | {"task_options": (given or {}) | options}
