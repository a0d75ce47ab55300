"""Structured JSON logs that Cloud Logging understands (``severity``, ``message``)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def log(message: str, *, severity: str = "INFO", **fields: Any) -> None:
    """Write one JSON log line to stdout."""
    entry = {"severity": severity, "message": message, "time": time.time(), **fields}
    print(json.dumps(entry, default=str), file=sys.stdout, flush=True)
