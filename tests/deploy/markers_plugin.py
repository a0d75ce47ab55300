"""A pytest plugin that writes each collected test's markers to a JSON file.

tests/deploy/test_test_tiers.py loads it (``-p``) in a ``--collect-only`` run, so the
tiers scripts/test.sh selects can be checked against every test there is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every test's node ID and the names of its markers, to ``NIAH_MARKERS_OUT``."""
    markers = {item.nodeid: sorted({m.name for m in item.iter_markers()}) for item in session.items}
    Path(os.environ["NIAH_MARKERS_OUT"]).write_text(json.dumps(markers))
