"""No example in the README, docs/ or scripts/ runs a model Vertex AI has retired.

An example is what a reader copies: a command's ``--model_name`` (or the judge's
``--evaluator_model_name``), a request's ``"model_name": "..."``, a ``model_name = ...``
in a tfvars example or script. A retired model there fails for whoever copies it
(docs/context-rot.md ran gemini-2.5-flash for a month after its retirement); one that
says ``--allow_retired`` on the same line is an example of exactly that and is left.
Tables that list retired models (docs/gemini.md) name no example and are not read.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from niah.catalog.models import catalog_entry
from tests import REPO

EXAMPLE = re.compile(
    r"""(?:--(?:evaluator_)?model_name[ =]|["']?(?:evaluator_)?model_name["']?\s*[:=]\s*)"""
    r"""["']?(gemini-[\w.-]+)""",
    re.I,
)
TODAY = dt.date(2026, 12, 4)


def pages() -> list[Path]:
    """Every page and script a reader may copy an example from."""
    found = [REPO / "README.md", REPO / "infra" / "terraform.tfvars.example"]
    found += sorted((REPO / "docs").rglob("*.md"))
    found += sorted(p for p in (REPO / "scripts").rglob("*") if p.is_file())
    return [p for p in found if p.suffix in {".md", ".sh", ".py", ".example", ".json", ""}]


def retired_examples(text: str, today: dt.date) -> list[str]:
    """The examples in ``text`` that name a model retired by ``today``, line by line."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if "allow_retired" in line:
            continue
        for name in EXAMPLE.findall(line):
            entry = catalog_entry(name)
            if entry is not None and entry.lifecycle.retired(today):
                found.append(f"{number}: {name}")
    return found


def test_no_example_runs_a_retired_model() -> None:
    today = max(TODAY, dt.date.today())
    found = {
        str(page.relative_to(REPO)): hits
        for page in pages()
        if (hits := retired_examples(page.read_text(errors="replace"), today))
    }
    assert found == {}, f"examples of retired models (the catalog's lifecycle): {found}"


def test_the_scan_finds_each_form_of_example() -> None:
    """The check itself: each form a page uses is found, and the allowed one is not."""
    text = "\n".join(
        [
            "niah run --model_name gemini-2.5-flash --wait",
            '{"model_name": "gemini-2.5-pro", "context_lengths": [1000]}',
            'model_name = "gemini-2.0-flash"',
            "niah run --evaluator_model_name=gemini-2.5-flash-lite",
            "niah run --model_name gemini-2.5-flash --allow_retired",
            "niah run --model_name gemini-3.8-flash",
        ]
    )
    assert retired_examples(text, TODAY) == [
        "1: gemini-2.5-flash",
        "2: gemini-2.5-pro",
        "3: gemini-2.0-flash",
        "4: gemini-2.5-flash-lite",
    ]
