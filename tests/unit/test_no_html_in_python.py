"""Pages come wholly from templates: no shipped Python string holds an HTML or SVG tag.

Markup written in Python escapes nothing by itself, so it is where a hostile label would
slip through; ``niah/core/pages/templates`` holds every tag, with autoescaping on.
Docstrings may name a tag; code may not write one, nor mark a string safe.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests import REPO

TAG = re.compile(
    r"</?(html|head|body|meta|div|span|p|a|h[1-6]|ul|ol|li|dl|dt|dd|table|thead|tbody|tr|"
    r"td|th|caption|section|details|summary|figure|code|em|strong|small|br|img|button|"
    r"input|label|style|script|svg|g|rect|text|line|path|polyline|title)[\s>/]"
)


def strings_of(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module but its docstrings, with its line."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_no_shipped_string_writes_a_tag_or_marks_markup_safe() -> None:
    found = []
    for path in sorted((REPO / "shared" / "niah").rglob("*.py")):
        found += [f"{path}:{line}" for line, text in strings_of(path) if TAG.search(text)]
        found += [f"{path}: Markup(" for _ in re.finditer(r"\bMarkup\(", path.read_text())]
    assert found == []


def test_the_check_sees_a_tag_written_in_python(tmp_path: Path) -> None:
    module = tmp_path / "page.py"
    module.write_text('"""A <div> in a docstring is fine."""\nROW = f"<td>{1}</td>"\n')
    assert {line for line, text in strings_of(module) if TAG.search(text)} == {2}
