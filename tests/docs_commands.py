"""The shell commands the README and docs/ show, read from their fenced ``sh`` blocks.

One reader for the test that accounts for every command (``tests/unit/test_docs.py``)
and the test that runs the quickstarts on a stack (``tests/integration/test_quickstart.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[list[str]]:
    """Each ``sh`` block of ``page`` as its commands: continuation lines joined, comments cut."""
    found = []
    for match in _BLOCK.finditer(page.read_text()):
        commands, pending = [], ""
        for line in match.group(1).splitlines():
            pending += line.strip() if pending else line
            if pending.endswith("\\"):
                pending = pending[:-1].rstrip() + " "
                continue
            command = re.sub(r"\s+#\s.*$", "", pending).strip()
            if command and not command.startswith("#"):
                commands.append(command)
            pending = ""
        found.append(commands)
    return found


def every_command() -> list[tuple[str, str]]:
    """(page relative to the repository, command) for every command of every page."""
    return [
        (str(page.relative_to(REPO)), command)
        for page in PAGES
        for block in blocks(page)
        for command in block
    ]


def quickstart(page: Path) -> list[str]:
    """The block of ``page`` that brings the local stack up and down: its quickstart."""
    (block,) = [
        block
        for block in blocks(page)
        if block[:1] == ["scripts/local_up.sh"] and block[-1:] == ["scripts/local_down.sh"]
    ]
    return block
