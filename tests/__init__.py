"""The project's tests; ``REPO`` is the checkout they run in."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
