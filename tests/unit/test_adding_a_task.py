"""docs/tasks/adding-a-task.md, followed: its module and its registry line make a task that runs.

The page's two code blocks are applied to a copy of ``shared/niah`` (the module written,
the registry's line inserted) and nothing else; in that copy a run of the new
task is dispatched and each cell answered by the in-process worker (as
tests/unit/test_work.py does), its option is a flag of ``niah run``, and the layering
and the options check hold.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from niah_devtools.layering import check
from tests import REPO
from tests.docs_commands import blocks
from tests.unit.test_task_options import names_in

PAGE = REPO / "docs" / "tasks" / "adding-a-task.md"
BLOCK = re.compile(r"```python\n# (?P<path>shared/niah/[\w/]+\.py)\n(?P<code>.*?)```", re.S)

# What the copy runs: a two-cell run of the new task, dispatched and answered in-process
# by a model that reads the passphrase (or one that does not), and what was stored.
RUN = """
import json, re, sys
from pathlib import Path
from niah.models.tokenizer import get_tokenizer
from niah.service.cells.worker import process_cell
from niah.service.runs.dispatch import dispatch_run
from niah.service.messages import CellTask
from tests.fake_store import MemoryStore
from tests.fakes import MemoryBlobs, RecordingPublisher, ScriptedProvider

blobs = MemoryBlobs()
for path in sorted(Path(sys.argv[1]).glob("*.txt")):
    blobs.objects[f"haystacks/paul_graham_essays/{path.name}"] = path.read_bytes()
store, publisher = MemoryStore(), RecordingPublisher()
request = {"task": "passphrase", "pass_words": 4, "context_lengths": [600],
           "document_depth_percents": [20, 80]}
run = dispatch_run(request, store=store, publisher=publisher, blobs=blobs)

def reads(prompt):
    found = re.search(r"The passphrase is ([\\w-]+)\\.", prompt)
    return found.group(1) if found else "I don't know."

outcomes = []
for number, message in enumerate(publisher.cells):
    task = CellTask.from_message(message)
    model = ScriptedProvider(reads if number == 0 else (lambda prompt: "a-guess"))
    outcomes.append(process_cell(task, store=store, blobs=blobs, publisher=publisher,
                                 provider_for=lambda kind, name: model,
                                 tokenizer_for=get_tokenizer))
cells = sorted(store.list_cells(run.run_id), key=lambda c: c["depth_percent"])
print(json.dumps({
    "outcomes": outcomes,
    "cells": [[c["outcome"], c["task_score"], c["expected_answer"]] for c in cells],
    "spec": store.get_run(run.run_id)["spec"],
    "report": publisher.reports,
}))
"""


def applied(tree: Path) -> tuple[Path, str]:
    """The page's steps done to a copy of the shipped tree: the new module, the registry.

    Returns the copy's ``shared`` folder and the new task's module as the page gives it.
    """
    blocks = {m["path"]: m["code"] for m in BLOCK.finditer(PAGE.read_text())}
    assert len(blocks) == 2, "the page gives the module and the registry line"
    shutil.copytree(REPO / "shared" / "niah", tree / "shared" / "niah", ignore=_caches)
    shutil.copytree(REPO / "functions", tree / "functions", ignore=_caches)
    [module] = [path for path in blocks if not path.endswith("__init__.py")]
    (tree / module).write_text(blocks[module])
    registry = tree / "shared/niah/tasks/__init__.py"
    source = registry.read_text()
    # The block's code without its comments: the one line in registry(...).
    lines = [line.split("  #")[0] for line in blocks["shared/niah/tasks/__init__.py"].split("\n")]
    [entry] = [line for line in lines if re.fullmatch(r'\s+"niah\.tasks\.\w+:\w+",', line)]
    start = source.index("TASKS = registry(")
    end = source.index("\n)", start)
    registry.write_text(source[:end] + "\n" + entry + source[end:])
    return tree / "shared", blocks[module]


def _caches(folder: str, names: list[str]) -> set[str]:
    return {name for name in names if name == "__pycache__"}


def in_copy(shared: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": f"{shared}{os.pathsep}{REPO}", "NIAH_DISPATCH_ORDER": "naive"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )


def test_the_page_s_two_steps_make_a_task_that_runs(tmp_path: Path) -> None:
    shared, module = applied(tmp_path)
    changed = subprocess.run(
        ["git", "diff", "--no-index", "--numstat", str(REPO / "shared/niah"), str(shared / "niah")],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    # Bytecode beside the repo's sources (scripts/test.sh writes it) is no change of the
    # page's: git diff --no-index reads no .gitignore, and the copy left it out.
    changed = [line for line in changed if "__pycache__" not in line]
    # Two files: the new module, and the registry with exactly one line more.
    assert len(changed) == 2, changed
    assert any(line.startswith("1\t0\t") and "tasks/__init__.py" in line for line in changed)

    essays = REPO / ".local" / "haystacks" / "paul_graham_essays"
    ran = in_copy(shared, "-c", RUN, str(essays))
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout.splitlines()[-1])
    assert result["outcomes"] == ["answered", "answered"]
    (right, score, phrase), (wrong, low, _) = result["cells"]
    assert (right, score, wrong, low) == ("correct", 1.0, "wrong", 0.0)
    assert phrase.count("-") == 3  # pass_words 4, as asked
    assert result["spec"]["pass_words"] == 4  # stored flat, as the harness's options are
    assert len(result["report"]) == 1  # the run's last cell asked for its report

    helped = in_copy(shared, "-m", "niah.cli", "run", "--help")
    assert "--pass_words" in helped.stdout and "words in the passphrase" in helped.stdout
    # The page's command, estimated (the dispatcher's checks, no model called).
    [command] = [c for block in blocks(PAGE) for c in block if c.startswith("niah run ")]
    words = [word for word in shlex.split(command)[2:] if word != "--wait"]
    estimated = in_copy(shared, "-m", "niah.cli", "run", *words, "--estimate")
    assert estimated.returncode == 0 and "prompt tokens:" in estimated.stdout, estimated.stderr
    refused = in_copy(
        shared,
        "-c",
        "from niah.service.runs.request_body import parse_request; "
        "parse_request({'pass_words': 4})",
    )
    assert "pass_words applies to task passphrase, not single" in refused.stderr

    assert check(tmp_path) == []  # the layering holds, the dispatcher stays light
    outside = [
        path
        for path in shared.rglob("*.py")
        if "tasks" not in path.relative_to(shared).parts
        and names_in(path.read_text(), {"pass_words"})
    ]
    assert outside == [] and names_in(module, {"pass_words"}) == {"pass_words"}


@pytest.mark.parametrize("step", ["module", "registry line"])
def test_each_step_is_needed(tmp_path: Path, step: str) -> None:
    """Without either step the task is unknown: the test above would fail without it."""
    shared, _ = applied(tmp_path)
    registry = shared / "niah/tasks/__init__.py"
    if step == "module":
        (shared / "niah/tasks/passphrase.py").unlink()
    else:
        registry.write_text(
            registry.read_text().replace('    "niah.tasks.passphrase:Passphrase",\n', "")
        )
    ran = in_copy(
        shared,
        "-c",
        "from niah.service.runs.request_body import parse_request; "
        "parse_request({'task': 'passphrase'})",
    )
    assert ran.returncode != 0
    said = "No module named 'niah.tasks.passphrase'" if step == "module" else "is no task"
    assert said in ran.stderr
