#!/usr/bin/env bash
# Every test: lint (ruff), types (mypy), the layering check (who may import whom), unit
# tests, and integration tests through the real emulators and functions-framework
# processes. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m niah_devtools.layering
.venv/bin/python -m pytest -q "$@"
