"""The entry point of the ``niah`` command."""

from __future__ import annotations

import sys

from niah.cli.parser import parse_command_line


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``niah`` command: errors in one line (``--debug`` for more)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    args = parse_command_line([word for word in argv if word != "--debug"])
    try:
        args.handler(args)
    except Exception as error:
        if debug:
            raise
        sys.exit(f"niah: {type(error).__name__}: {error}; rerun with --debug for the traceback")
