"""The virtualenvs each function's deployable source is served from in the tests.

As Cloud Functions builds one: a virtualenv holding the function's ``requirements.txt``
alone, from the package registry. Kept per file content under ``.local/function-venvs``
(a changed file gets a fresh one, an unchanged one is reused). ``scripts/setup.sh
--tests`` makes them beside its other steps, so a clean checkout's test run does not
spend minutes of its busiest process installing them (tests/integration/
test_function_sources.py makes any that are missing, the same way).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENVS = REPO / ".local" / "function-venvs"
FUNCTIONS = ("dispatcher", "worker", "report")


def venv_path(requirements: Path) -> Path:
    """Where the virtualenv for this exact requirements file lives."""
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    return VENVS / f"{requirements.parent.name}-{digest}"


def ensure(requirements: Path) -> tuple[Path, float]:
    """The virtualenv for ``requirements`` and the seconds spent making it (0: reused).

    pip compiles every module as it installs (a third of the install's CPU, spent in
    set-up): a function started where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE``) would otherwise compile its imports at every start.
    """
    venv = venv_path(requirements)
    if (venv / ".complete").exists():
        return venv, 0.0
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    result = subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(requirements),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pip install -r {requirements} failed:\n{result.stderr[-3000:]}")
    (venv / ".complete").touch()
    return venv, time.monotonic() - started


def main() -> None:
    """Make every function's virtualenv from its requirements.txt in the repository."""
    files = [REPO / "functions" / name / "requirements.txt" for name in FUNCTIONS]
    with ThreadPoolExecutor(len(files)) as pool:
        for requirements, (venv, seconds) in zip(files, pool.map(ensure, files), strict=True):
            how = f"made in {seconds:.0f} s" if seconds else "reused"
            print(f"{requirements.parent.name}: {venv.name} {how}")


if __name__ == "__main__":
    main()
