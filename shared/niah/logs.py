"""Structured JSON logs that Cloud Logging understands (``severity``, ``message``)."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

# One line at a time: ``print`` writes a line and its newline apart, so two threads
# could interleave them and a reader (Cloud Logging, the benchmarks) would lose both.
_write = threading.Lock()


def log(message: str, *, severity: str = "INFO", **fields: Any) -> None:
    """Write one JSON log line to stdout."""
    entry = {"severity": severity, "message": message, "time": time.time(), **fields}
    line = json.dumps(entry, default=str) + "\n"
    with _write:
        sys.stdout.write(line)
        sys.stdout.flush()


def describe(error: BaseException, limit: int = 500) -> str:
    """An exception as one short log field: its class and message, cut at ``limit``."""
    return f"{type(error).__name__}: {error}"[:limit]
