"""The README's local quickstart, pasted as a new user would, and the local stack page's.

Each command runs as written, in order, in one bash session (``source .local/env``
must carry into the next line), and must exit 0. The session runs in a copy of the
repository so the quickstart's ``.local/`` is its own, on ports of its own
(``NIAH_LOCAL_BASE_PORT``), with no ``.venv/bin`` on PATH: ``niah`` must come from
``.local/env``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.docs_commands import REPO, quickstart
from tests.integration.conftest import BASE_PORT

pytestmark = pytest.mark.integration

QUICKSTART_PORT = BASE_PORT + 40  # 8610-8618 by default: apart from the test stack's


def repository_copy(target: Path) -> Path:
    """The checkout's files (tracked and new, not ignored) with the installed set-up."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to(Path(sys.prefix))
    (target / ".local").mkdir()
    (target / ".local" / "haystacks").symlink_to(REPO / ".local" / "haystacks")
    return target


def editable_installs() -> dict[str, str]:
    """Where the virtualenv's editable packages point: the copy must not move them."""
    site = Path(sysconfig.get_paths()["purelib"])
    return {path.name: path.read_text() for path in sorted(site.glob("__editable__*"))}


def session(commands: list[str]) -> str:
    """One bash script that runs each command and stops at the first that fails, naming it."""
    lines = ["set -uo pipefail"]
    for command in commands:
        lines.append(
            f"{command} || {{ echo {shlex.quote('QUICKSTART FAILED: ' + command)} >&2; exit 1; }}"
        )
        lines.append(f"echo {shlex.quote('QUICKSTART OK: ' + command)}")
    return "\n".join(lines) + "\n"


def test_the_readme_quickstart_runs_as_pasted(tmp_path: Path) -> None:
    readme = quickstart(REPO / "README.md")
    page = quickstart(REPO / "docs" / "local-stack.md")
    # The README's block in order; before its last line (down), the local stack page's
    # commands that look further (its own up and source are the README's).
    commands = readme[:-1] + [c for c in page if c not in readme] + readme[-1:]
    copy = repository_copy(tmp_path / "checkout")
    path = ":".join(
        part for part in os.environ["PATH"].split(":") if not part.startswith(str(sys.prefix))
    )
    env = {
        "PATH": path,
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "TMPDIR": str(tmp_path),
        "NIAH_LOCAL_BASE_PORT": str(QUICKSTART_PORT),
        # The copy's code, not the checkout the virtualenv was installed from.
        "PYTHONPATH": f"{copy / 'shared'}:{copy / 'devtools'}",
    }
    installed = editable_installs()
    done = subprocess.run(
        ["bash", "-c", session(commands)],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    subprocess.run(["scripts/local_down.sh"], cwd=copy, env=env, capture_output=True, check=False)
    ran = [line.removeprefix("QUICKSTART OK: ") for line in done.stdout.splitlines()
           if line.startswith("QUICKSTART OK: ")]  # fmt: skip
    # Before: the copy's set-up reinstalled the linked virtualenv, pointing its editable
    # packages at the copy (a temporary directory) for every later test.
    assert editable_installs() == installed
    assert done.returncode == 0, f"{done.stderr[-3000:]}\n(ran: {ran})"
    assert ran == commands
    assert (copy / "heatmap.png").stat().st_size > 10_000
    assert "<svg" in (copy / "report.html").read_text()
    assert (copy / "samples.csv").read_text(encoding="utf-8-sig").count("\n") >= 7
    assert len(list((copy / "cells").glob("*.json"))) == 6
