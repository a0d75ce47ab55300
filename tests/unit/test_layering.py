"""The layering check passes on this tree and catches each kind of wrong import.

And the drawing of the layers in docs/architecture.md keeps up with the tree: every
package of ``shared/niah`` has a row in its layer table, and every deployed function
(a folder of ``functions/``, a function or scheduler job of ``infra/``) is named there.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from niah_devtools.deploy_plan import resources, text
from niah_devtools.layering import check
from tests import REPO

ARCHITECTURE = REPO / "docs" / "architecture.md"


def test_the_tree_keeps_its_layers() -> None:
    assert check() == []


def test_each_source_text_is_parsed_once_however_many_checks(tmp_path: Path) -> None:
    """A second check, and a copy of the tree with one file changed, parse only that file."""
    from niah_devtools.layering import _statements

    _statements.cache_clear()
    check()
    first = _statements.cache_info()
    assert first.misses > 100  # every module (identical files share one parse)
    check()
    assert _statements.cache_info().misses == first.misses  # nothing parsed again
    root = copy_of_the_tree(tmp_path)
    target = root / "shared" / "niah" / "core" / "request" / "spec.py"
    target.write_text(target.read_text() + "\nimport json\n")
    check(root)
    assert _statements.cache_info().misses == first.misses + 1  # the changed file alone


def copy_of_the_tree(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "shared" / "niah", tmp_path / "shared" / "niah")
    shutil.copytree(REPO / "functions", tmp_path / "functions")
    return tmp_path


@pytest.mark.parametrize(
    ("module", "wrong_import", "expected"),
    [
        # Core must not talk to Google, nor use a cloud adapter or a provider.
        ("core/request/spec.py", "import google.cloud.firestore", "google.cloud is for niah.cloud"),
        (
            "core/prompts/needles.py",
            "from niah.cloud.store import FirestoreStore",
            "niah.core may import",
        ),
        (
            "core/results/scoring.py",
            "from niah.models.providers import get_provider",
            "niah.core may",
        ),
        # The catalog stays a leaf that anything may ask.
        ("catalog/models.py", "from niah.core.request.spec import RunRequest", "niah.catalog may"),
        ("catalog/prices.py", "from niah.models.tokenizer import get_tokenizer", "niah.catalog"),
        # Prices are read from genai-prices in one place.
        ("core/money/pricing.py", "import genai_prices", "genai_prices is for niah.catalog.prices"),
        # Cloud adapters know no model; google.genai only in the Gemini provider.
        (
            "cloud/store/leases.py",
            "from niah.models.tokenizer import get_tokenizer",
            "niah.cloud may",
        ),
        ("service/reports/render.py", "from google import genai", "google.genai is for"),
        # Nothing shipped imports developer tooling, even lazily inside a function.
        (
            "service/cells/worker.py",
            "def f():\n    from niah_devtools import standin",
            "niah_devtools is for nothing shipped",
        ),
        # The dispatcher's closure stays light: a tokenizer two imports away is caught.
        (
            "service/runs/completion.py",
            "from niah.models.tokenizer import get_tokenizer",
            "the dispatcher reaches niah.models.tokenizer: functions.dispatcher.main -> ",
        ),
        ("core/prompts/haystack_files.py", "import numpy", "the dispatcher reaches numpy"),
        # The command line is the top floor: no job imports it back.
        ("service/runs/sweep.py", "from niah.cli.output import count", "niah.service may import"),
        ("tasks/single.py", "from niah.cloud.store import FirestoreStore", "niah.tasks may"),
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


def test_type_checking_imports_break_no_layer_rule(tmp_path: Path) -> None:
    root = copy_of_the_tree(tmp_path)
    target = root / "shared" / "niah" / "core" / "request" / "spec.py"
    target.write_text(
        target.read_text()
        + "\nif TYPE_CHECKING:\n    from niah.cloud.store import FirestoreStore\n"
    )
    # The store reads runs through the request (niah.core.runs): that loop is a circle.
    assert [p for p in check(root) if not p.startswith("import circle")] == []


@pytest.mark.parametrize(
    "back_import",
    [
        # Naming each other's types is one concern in two files, run or not.
        "if TYPE_CHECKING:\n    from niah.core.request.spec import RunRequest",
        # A lazy import closes the loop on the path that runs it.
        "def f():\n    from niah.core.request.spec import RunRequest",
    ],
)
def test_an_import_circle_is_caught(tmp_path: Path, back_import: str) -> None:
    root = copy_of_the_tree(tmp_path)
    target = root / "shared" / "niah" / "core" / "request" / "request_options.py"
    target.write_text(
        target.read_text() + "\nfrom typing import TYPE_CHECKING\n" + back_import + "\n"
    )
    problems = check(root)
    circles = [p for p in problems if p.startswith("import circle")]
    assert any("niah.core.request.request_options" in circle for circle in circles), problems


def test_a_module_outside_every_layer_is_caught(tmp_path: Path) -> None:
    """As ``niah/suite.py`` was: a module no layer holds would import unchecked."""
    root = copy_of_the_tree(tmp_path)
    (root / "shared" / "niah" / "suite.py").write_text("from niah.cli.output import count\n")
    problems = check(root)
    assert any("niah.suite is in no layer" in problem for problem in problems), problems


def packages_of_the_tree(niah: Path) -> list[str]:
    """``niah/core/``, ``niah/models/providers/``...: every folder with an ``__init__.py``."""
    return sorted(
        f"niah/{init.parent.relative_to(niah).as_posix()}/"
        for init in niah.rglob("__init__.py")
        if init.parent != niah
    )


def packages_in_the_layer_table(page: str) -> set[str]:
    """The packages named in the first cell of the layer table's rows."""
    return set(re.findall(r"^\| `(niah/[\w/]+/)`", page, flags=re.M))


def test_every_package_has_a_row_in_the_architecture_layer_table() -> None:
    packages = packages_of_the_tree(REPO / "shared" / "niah")
    assert "niah/tasks/" in packages and "niah/models/providers/" in packages
    missing = set(packages) - packages_in_the_layer_table(ARCHITECTURE.read_text())
    assert not missing, f"docs/architecture.md's layer table has no row for {sorted(missing)}"


def test_a_new_package_missing_from_the_layer_table_is_caught(tmp_path: Path) -> None:
    niah = tmp_path / "niah"
    for package in ("core", "core/request", "tasks"):
        (niah / package).mkdir(parents=True)
        (niah / package / "__init__.py").write_text("")
    table = "| `niah/core/` | x |\n| `niah/tasks/` | x |\n"
    assert set(packages_of_the_tree(niah)) - packages_in_the_layer_table(table) == {
        "niah/core/request/"
    }


def deployed_functions() -> list[str]:
    """Each function folder, and each function and scheduler job infra/ deploys."""
    folders = [f"functions/{main.parent.name}" for main in (REPO / "functions").glob("*/main.py")]
    kinds = ("google_cloudfunctions2_function", "google_cloud_scheduler_job")
    deployed = [text(body["name"]) for (kind, _), body in resources().items() if kind in kinds]
    return sorted({*folders, *deployed})


def test_every_deployed_function_is_named_in_the_architecture_page() -> None:
    functions = deployed_functions()
    assert {"functions/worker", "niah-dead-letter", "niah-sweep"} <= set(functions)
    page = ARCHITECTURE.read_text()
    missing = [name for name in functions if f"`{name}`" not in page]
    assert not missing, f"docs/architecture.md does not name {missing}"


def test_every_service_module_is_named_in_the_architecture_page() -> None:
    """The service's table (job -> modules) names each module, so a split shows up there."""
    text = ARCHITECTURE.read_text()
    modules = sorted(
        path.stem
        for path in (REPO / "shared" / "niah" / "service").glob("*.py")
        if path.stem != "__init__"
    )
    assert [module for module in modules if f"`{module}`" not in text] == []


# Over the limit while another change to them is under way; each leaves when split.
# Empty: certify.py, the last one over, was split (certify_plan, certify_tests, certify).
OVER_THE_LIMIT: dict[str, str] = {}
MAX_LINES = 400


def shipped_module_sizes() -> dict[str, int]:
    """Lines of every module that ships: the library and the functions' entry points."""
    return {
        str(path.relative_to(REPO)): len(path.read_text().splitlines())
        for path in [
            *(REPO / "shared" / "niah").rglob("*.py"),
            *(REPO / "functions").glob("*/*.py"),
        ]
    }


def test_no_shipped_module_is_over_400_lines() -> None:
    """STYLE rule 12: a module a newcomer reads in one sitting; past 400 it holds two jobs."""
    over = {path: n for path, n in shipped_module_sizes().items() if n > MAX_LINES}
    assert {path: n for path, n in over.items() if path not in OVER_THE_LIMIT} == {}


def test_the_modules_over_the_limit_still_are() -> None:
    """A module split under the limit leaves OVER_THE_LIMIT: the list only shrinks."""
    sizes = shipped_module_sizes()
    assert [path for path in OVER_THE_LIMIT if sizes.get(path, 0) <= MAX_LINES] == []
