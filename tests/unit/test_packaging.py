"""What ships to Cloud Functions: the functions and the shipped library, nothing of dev."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests import REPO


def build_zip(tmp_path: Path) -> Path:
    out = tmp_path / "functions.zip"
    subprocess.run(
        ["bash", str(REPO / "scripts" / "package_functions.sh"), str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def test_the_zip_holds_the_functions_and_the_library_but_no_developer_tooling(
    tmp_path: Path,
) -> None:
    names = zipfile.ZipFile(build_zip(tmp_path)).namelist()
    for needed in (
        "functions/dispatcher/main.py",
        "functions/worker/main.py",
        "functions/report/main.py",
        "niah/service/dispatch.py",
        "niah/service/cell_worker.py",
        "niah/models/catalog.py",
        "requirements.txt",
    ):
        assert needed in names
    dev = [
        name
        for name in names
        if "standin" in name
        or "localstack" in name
        or "niah_devtools" in name
        or name.startswith(("tests/", "devtools/", "scripts/"))
    ]
    assert dev == []
    # Every shipped module is the repository's own, one for one.
    shipped = sorted(n for n in names if n.startswith("niah/") and n.endswith(".py"))
    source = sorted(
        str(p.relative_to(REPO / "shared")) for p in (REPO / "shared" / "niah").rglob("*.py")
    )
    assert shipped == source


def test_each_function_imports_from_the_zip_alone(tmp_path: Path) -> None:
    """The entry points import with the zip's niah first on the path: nothing outside it."""
    root = tmp_path / "unzipped"
    zipfile.ZipFile(build_zip(tmp_path)).extractall(root)
    for function in ("dispatcher", "worker", "report"):
        code = (
            f"import sys; sys.path[:0] = [{str(root)!r}, {str(root / 'functions' / function)!r}]; "
            "import main, niah; "
            f"assert niah.__file__.startswith({str(root)!r}), niah.__file__; "
            "print(sorted(m for m in sys.modules if m.startswith('niah_devtools')))"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "[]"
