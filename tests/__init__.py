"""The project's tests; ``REPO`` is the checkout they run in."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Tests of many seconds each (million-token prompts built and counted, the tokenizer
# rebuilt from the GGUF, Google's credential lookup): scripts/test.sh runs them,
# ``--quick`` leaves them out so the edit-test loop stays under two minutes.
HEAVY = pytest.mark.heavy
