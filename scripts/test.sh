#!/usr/bin/env bash
# Every test: lint (ruff), types (mypy), the layering check (who may import whom), unit
# tests, and integration tests through the real emulators and functions-framework
# processes. The deployment is checked there too: every .tf file parses, checkov passes
# offline (tests/unit/test_infra.py), deploy.sh --dry-run shows the flags that matter
# (tests/unit/test_deploy_scripts.py), and each function's source starts with only its
# own requirements (tests/integration/test_function_sources.py). Extra arguments go to
# pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m niah_devtools.layering
.venv/bin/python -m pytest -q "$@"
