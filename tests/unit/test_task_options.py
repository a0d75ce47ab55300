"""Tasks own their options: no module outside ``niah/tasks/`` names one, and the wire stays flat.

A task declares its options as a typed model in its own module (``TaskOptions``); the run
request carries the chosen task's, and the harness's flat names keep working as JSON keys
and command-line flags. Adding GraphWalks once touched about six files outside its
module; the first test here fails when a module outside ``niah/tasks/`` (in ``shared/niah``
or ``functions/``) names a task's option again.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from pydantic import ValidationError

from niah.core.request.run_options import RunOptions
from niah.core.request.spec import RunRequest
from niah.core.request.task_options import (
    TaskOptions,
    option_owners,
    options_model,
    register_task_options,
)
from niah.tasks import TASKS
from tests import REPO

SHARED = REPO / "shared" / "niah"
TASKS_DIR = SHARED / "tasks"
# Where an option's name is another thing's, and why; each (module, name) checked to
# still occur (``test_every_homonym_is_still_there``), so the list only shrinks.
HOMONYMS = {
    ("service/cells/answer.py", "expected_answers"): (
        "the stored cell's field: the sample's expected values, whatever the task"
    ),
}


def names_in(source: str, names: set[str]) -> set[str]:
    """The option names ``source`` names.

    A name with an underscore (``num_cw``) is never an English word: any mention counts,
    in code, strings, docstrings or comments. A plain word (``needles``, ``alpha``) counts
    where code reads or writes an option by it: an attribute (``spec.alpha``), a keyword
    (``alpha=``) or a string that is the name (``"alpha"``, a key or a ``getattr``), not
    a local variable or a sentence.
    """
    found = set()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    words = {
        word
        for token in tokens
        if token.type in (tokenize.NAME, tokenize.STRING, tokenize.COMMENT)
        for word in re.findall(r"\w+", token.string)
    }
    found |= {name for name in names if "_" in name and name in words}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            named = node.attr
        elif isinstance(node, ast.keyword):
            named = node.arg or ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = node.value
        else:
            continue
        if named in names:
            found.add(named)
    return found


def modules_outside_tasks() -> list[Path]:
    shared = [p for p in sorted(SHARED.rglob("*.py")) if not p.is_relative_to(TASKS_DIR)]
    return shared + sorted((REPO / "functions").glob("*/main.py"))


def where(path: Path) -> str:
    return str(path.relative_to(SHARED if path.is_relative_to(SHARED) else REPO))


def test_the_check_finds_an_option_however_it_is_named() -> None:
    names = {"num_cw", "alpha"}
    for source in (
        "spec.num_cw",
        "x = 'num_cw'",
        "f(num_cw=3)",
        "# lower num_cw",
        '"""Raise num_cw."""',
        "f'{spec.alpha}'",
        "getattr(spec, 'alpha')",
        "spec['alpha']",
        "f(alpha=2.0)",
    ):
        assert names_in(source, names), source
    # A local variable or a word of a sentence is not an option.
    assert names_in("def f(alpha: float) -> float:\n    return alpha\n", names) == set()
    assert names_in("'an alpha and num_cwx'", names) == set()


def test_no_module_outside_the_tasks_names_a_task_option() -> None:
    """Each task's option names, looked for in the rest of shared/niah and in functions/.

    The command line's mapping of options to flags reads the tasks' models
    (``niah.cli.run_options``), so it names none either.
    """
    names = set(option_owners())
    assert {"num_needles", "bfs_depth", "alpha", "needles", "mrcr_source"} <= names
    named = {
        where(path): sorted(
            name
            for name in names_in(path.read_text(), names)
            if (where(path), name) not in HOMONYMS
        )
        for path in modules_outside_tasks()
    }
    assert {path: found for path, found in named.items() if found} == {}


def test_every_homonym_is_still_there() -> None:
    for (module, name), _why in HOMONYMS.items():
        assert name in names_in((SHARED / module).read_text(), {name}), module


def test_every_task_declares_its_options_with_help() -> None:
    for name, task in TASKS.items():
        assert issubclass(task.options, TaskOptions), name
        assert options_model(name) is task.options
        for option, field in task.options.model_fields.items():
            assert field.description, f"{name}'s {option} has no help"
        assert task.options().answer_bytes(RunRequest(task=name)) > 0


def test_the_options_are_the_same_flat_or_nested_and_dump_flat() -> None:
    flat = RunRequest.model_validate({"task": "multi_key", "num_distractors": 2})
    nested = RunRequest.model_validate(
        {"task": "multi_key", "task_options": {"num_distractors": 2}}
    )
    assert flat == nested
    assert type(flat.task_options).__name__ == "MultiKeyOptions"
    dumped = flat.model_dump(mode="json")
    assert dumped["num_distractors"] == 2 and "task_options" not in dumped
    # Only the task's own options are stored: another task's are not its run's.
    assert "num_cw" not in dumped and "bfs_depth" not in dumped
    assert RunRequest.model_validate(dumped) == flat


def test_another_task_s_option_is_refused_unless_it_holds_its_default() -> None:
    """A request stored when every option was a field holds every task's, at defaults."""
    stored = RunRequest.model_validate({"task": "multi_key", "num_cw": 10, "bfs_depth": 2})
    assert stored == RunRequest(task="multi_key")
    with pytest.raises(ValidationError, match="num_cw applies to task common_words, not multi_key"):
        RunRequest.model_validate({"task": "multi_key", "num_cw": 5})
    with pytest.raises(ValidationError, match="num_distractors is given twice"):
        RunRequest.model_validate(
            {"task": "multi_key", "num_distractors": 1, "task_options": {"num_distractors": 2}}
        )


def test_an_unknown_task_names_the_tasks_there_are() -> None:
    with pytest.raises(ValidationError) as refused:
        RunRequest.model_validate({"task": "haystack"})
    message = str(refused.value)
    assert "'haystack' is no task" in message and all(name in message for name in TASKS)


def test_a_task_name_is_registered_once() -> None:
    class Other(TaskOptions):
        def answer_bytes(self, request: RunOptions) -> int:
            return 1

    with pytest.raises(ValueError, match="registered twice"):
        register_task_options("single", Other)
