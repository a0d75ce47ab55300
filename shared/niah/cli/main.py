"""The entry point of the ``niah`` command: one line for every failure, never a traceback."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from niah.cli.backend import name_latest
from niah.cli.parser import parse_command_line

# Google's client libraries' errors for credentials that are missing or no longer valid
# (google.auth.exceptions), by name: importing google.auth costs every command time.
CREDENTIAL_ERRORS = ("DefaultCredentialsError", "RefreshError")
NO_CREDENTIALS = (
    "niah: no Google Cloud credentials{detail}. For the local stack: scripts/local_up.sh, "
    "then `source .local/env` in this shell; for Google Cloud: "
    "`gcloud auth application-default login`"
)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``niah`` command: errors in one line (``--debug`` for more)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        try:
            args = parse_command_line([word for word in argv if word != "--debug"])
            name_latest(args)
            args.handler(args)
        finally:
            # Here, not at the interpreter's exit: a reader that went away is met below.
            sys.stdout.flush()
    except BrokenPipeError:
        _reader_gone()
    except Exception as error:
        if debug:
            raise
        if type(error).__name__ in CREDENTIAL_ERRORS:
            detail = "" if type(error).__name__ == "DefaultCredentialsError" else f" ({error})"
            sys.exit(NO_CREDENTIALS.format(detail=detail))
        sys.exit(f"niah: {type(error).__name__}: {error}; rerun with --debug for the traceback")


def _reader_gone() -> NoReturn:
    """The reader closed the pipe (``niah list | head -1``): it has what it wanted.

    Exit 0 quietly, as the Python docs advise for SIGPIPE (library/signal.html, "Note on
    SIGPIPE", read 2026-11-26): stdout goes to devnull so the interpreter's last flush
    raises nothing.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)
