"""scripts/test.sh runs every test exactly once: its tiers cover the suite and do not overlap.

The full run is several pytest processes side by side, each selecting by marker
(``-m``) among the tests of its folders; a test no tier holds would never run, and one
two tiers hold would run twice, on two stacks. The tiers and their folders are read from
the script itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

# pytest's own parser of ``-m`` expressions (private, but what ``-m`` itself runs), so
# the tiers are judged exactly as the script's processes select.
from _pytest.mark.expression import Expression

from tests import REPO
from tests.integration.conftest import (
    OWN_STACK_MODULES,
    SECOND_PROCESS_MODULES,
    SIDE_STACK_MODULES,
)


def script_array(name: str) -> list[str]:
    """The quoted items of the ``NAME=( ... )`` array in scripts/test.sh, in order."""
    script = (REPO / "scripts" / "test.sh").read_text()
    block = re.search(rf"^{name}=\(\n(.*?)^\)", script, re.S | re.M)
    assert block, f"scripts/test.sh has no {name}=( ... ) block"
    return re.findall(r'^\s*"([^"]+)"\s*$', block.group(1), re.M)


def script_tiers() -> list[str]:
    """The ``-m`` expressions of scripts/test.sh's full run, in its order."""
    return script_array("tiers")


def tiers_of(
    node: str, names: set[str], tiers: list[str], compiled: list[Expression], folders: list[str]
) -> list[str]:
    """The tiers whose folders hold test ``node`` and whose expression its ``names`` match."""
    return [
        tier
        for tier, expression, where in zip(tiers, compiled, folders, strict=True)
        if any(node.startswith(folder + "/") for folder in where.split())
        and expression.evaluate(lambda name, /, **_: name in names)
    ]


def test_every_test_runs_in_exactly_one_tier(tmp_path: Path) -> None:
    out = tmp_path / "markers.json"
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "tests.deploy.markers_plugin",
        ],
        cwd=REPO,
        env={**os.environ, "NIAH_MARKERS_OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    markers: dict[str, list[str]] = json.loads(out.read_text())
    tiers, folders = script_tiers(), script_array("folders")
    assert len(tiers) >= 4 and len(folders) == len(tiers), (tiers, folders)
    compiled = [Expression.compile(tier) for tier in tiers]
    runs = {
        node: tiers_of(node, set(names), tiers, compiled, folders)
        for node, names in markers.items()
    }
    assert len(runs) > 1000
    assert {node: where for node, where in runs.items() if len(where) != 1} == {}
    # Each stack group has tests, so a renamed marker cannot empty a process unseen.
    for tier in tiers:
        assert any(tier in where for where in runs.values()), tier


def test_every_side_stack_module_is_a_test_file() -> None:
    """A renamed module would fall back to the local model's stack unnoticed."""
    missing = {
        name
        for name in SIDE_STACK_MODULES | OWN_STACK_MODULES | SECOND_PROCESS_MODULES
        if not (REPO / "tests" / "integration" / f"{name}.py").exists()
    }
    assert missing == set()
