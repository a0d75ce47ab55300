"""The dispatcher's cold start loads only what it uses (STYLE: heavy imports where used)."""

from __future__ import annotations

import subprocess
import sys

from tests import REPO

HEAVY = (
    "numpy",
    "genai_prices",  # loaded by the first admission's worst case, not at cold start
    "sentencepiece",
    "matplotlib",
    "xllamacpp",
    "google.genai",
    "niah.service.cells.worker",
    "niah.service.cells.answer",
    "niah.service.cells.prompt",
    "niah.service.cells.scoring",
    "niah.service.cells.records",
    "niah.core.prompts.haystack_tokens",
    "niah.models.tokenizer",
    "niah.models.providers",
)


def test_the_dispatcher_does_not_import_the_workers_machinery() -> None:
    code = (
        "import sys; sys.path.insert(0, 'functions/dispatcher'); import main; "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    assert loaded == "[]"
