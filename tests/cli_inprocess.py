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
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType

from niah.cli import backend
from niah.cli.main import main
from niah.settings import get_settings
from tests import REPO

# What a process keeps for its one command (settings from the environment, the store's
# and the bucket's clients): cleared around each call, as a new process starts afresh.
PER_PROCESS_CACHES = (get_settings, backend.result_store, backend.blob_store)


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None, cwd: Path) -> Iterator[None]:
    """``env`` (whole, as a subprocess would get it) and ``cwd`` for the call's length."""
    before, here = dict(os.environ), Path.cwd()
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    for cache in PER_PROCESS_CACHES:
        cache.cache_clear()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(before)
        for cache in PER_PROCESS_CACHES:
            cache.cache_clear()


class CommandTimeout(BaseException):
    """The command outlived its time limit (a BaseException: the CLI's handlers let it by)."""


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise ``CommandTimeout`` in the call after ``seconds``, as subprocess.run's timeout."""
    if seconds is None:
        yield
        return

    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise CommandTimeout(f"niah did not finish within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def niah(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path = REPO,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``niah ARGS`` in-process; the result reads like ``subprocess.run``'s.

    ``timeout``: raise ``CommandTimeout`` past it (main thread only: SIGALRM).
    """
    out, err = io.StringIO(), io.StringIO()
    status = 0
    with (
        _time_limit(timeout),
        _environment(env, cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
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
