"""The layering check passes on this tree and catches each kind of wrong import."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from niah_devtools.layering import check
from tests import REPO


def test_the_tree_keeps_its_layers() -> None:
    assert check() == []


def copy_of_the_tree(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "shared" / "niah", tmp_path / "shared" / "niah")
    shutil.copytree(REPO / "functions", tmp_path / "functions")
    return tmp_path


@pytest.mark.parametrize(
    ("module", "wrong_import", "expected"),
    [
        # Core must not talk to Google, nor use a cloud adapter or a provider.
        ("core/spec.py", "import google.cloud.firestore", "google.cloud is for niah.cloud"),
        ("core/needles.py", "from niah.cloud.store import FirestoreStore", "niah.core may import"),
        ("core/scoring.py", "from niah.models.providers import get_provider", "niah.core may"),
        # The catalog stays a leaf that anything may ask.
        ("catalog/models.py", "from niah.core.spec import RunRequest", "niah.catalog may"),
        ("catalog/prices.py", "from niah.models.tokenizer import get_tokenizer", "niah.catalog"),
        # Prices are read from genai-prices in one place.
        ("core/pricing.py", "import genai_prices", "genai_prices is for niah.catalog.prices"),
        # Cloud adapters know no model; google.genai only in the Gemini provider.
        (
            "cloud/store/leases.py",
            "from niah.models.tokenizer import get_tokenizer",
            "niah.cloud may",
        ),
        ("service/report.py", "from google import genai", "google.genai is for"),
        # Nothing shipped imports developer tooling, even lazily inside a function.
        (
            "service/cell_worker.py",
            "def f():\n    from niah_devtools import standin",
            "niah_devtools is for nothing shipped",
        ),
        # The dispatcher's closure stays light: a tokenizer two imports away is caught.
        (
            "service/run_completion.py",
            "from niah.models.tokenizer import get_tokenizer",
            "the dispatcher reaches niah.models.tokenizer: functions.dispatcher.main -> ",
        ),
        ("core/haystack_files.py", "import numpy", "the dispatcher reaches numpy"),
    ],
)
def test_a_wrong_import_is_caught(
    tmp_path: Path, module: str, wrong_import: str, expected: str
) -> None:
    root = copy_of_the_tree(tmp_path)
    target = root / "shared" / "niah" / module
    target.write_text(target.read_text() + "\n" + wrong_import + "\n")
    problems = check(root)
    assert any(expected in problem for problem in problems), problems


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    root = copy_of_the_tree(tmp_path)
    target = root / "shared" / "niah" / "core" / "spec.py"
    target.write_text(
        target.read_text()
        + "\nif TYPE_CHECKING:\n    from niah.cloud.store import FirestoreStore\n"
    )
    assert check(root) == []
