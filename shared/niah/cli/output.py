"""What every command prints and writes the same way."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

# A bad command line (argparse's own status for one): the user must change the words.
EXIT_USAGE = 2


def count(number: int, noun: str, plural: str = "") -> str:
    """``1 cell``, ``2 cells``, ``1,000 cells``: a count with its noun in the right number."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def usage_error(message: str) -> NoReturn:
    """Exit with status 2 and one line: the command line must change, as ``message`` says."""
    print(f"niah: {message}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def writable_file(path: Path, option: str) -> None:
    """Exit naming the option when ``path`` is a folder: these options take a file."""
    if path.is_dir():
        usage_error(f"{option} takes a file name; {path} is a folder")


def write_file(path: Path, data: bytes, *, quiet: bool = False) -> None:
    """Write ``data`` (making the folder) and print where it went (unless ``quiet``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if not quiet:
        print(path)


def to_json(value: Any) -> str:
    """JSON for scripts: timestamps as ISO 8601, anything else unknown as its text."""

    def default(item: Any) -> Any:
        return item.isoformat() if hasattr(item, "isoformat") else str(item)

    return json.dumps(value, indent=2, default=default)
