"""The ``niah`` command run inside the test's own interpreter, answered like a process.

A subprocess costs each CLI test about a second of interpreter start and imports; the
command's behaviour the unit tests check (parsing, one-line errors, what it prints,
its exit status) is the same in-process: ``niah.cli.main.main`` with stdout and stderr
captured and ``SystemExit`` turned into the exit status the shell would see. Tests of
what only a real process shows (a closed pipe, the console script on PATH, a clean
environment) keep running ``niah`` as a process.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from niah.cli.main import main
from niah.settings import get_settings
from tests import REPO


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None, cwd: Path) -> Iterator[None]:
    """``env`` (whole, as a subprocess would get it) and ``cwd`` for the call's length."""
    before, here = dict(os.environ), Path.cwd()
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    get_settings.cache_clear()  # settings are read from the environment once per process
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(before)
        get_settings.cache_clear()


def niah(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """Run ``niah ARGS`` in-process; the result reads like ``subprocess.run``'s."""
    out, err = io.StringIO(), io.StringIO()
    status = 0
    with _environment(env, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exit_:
            if exit_.code is None:
                status = 0
            elif isinstance(exit_.code, int):
                status = exit_.code
            else:  # sys.exit("message"): the interpreter prints it and exits 1
                print(exit_.code, file=err)
                status = 1
    return subprocess.CompletedProcess(["niah", *args], status, out.getvalue(), err.getvalue())
