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
if [ "$#" -gt 0 ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
# The fault tests on the stack with a deployment's sweep (marked production_stack) spend
# their time waiting for leases to lapse and sweep passes, on their own stack and ports:
# they run beside the rest rather than after it. Each has its own temporary directory.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m pytest -q -m production_stack --basetemp="$work/faults" \
  >"$work/faults.log" 2>&1 &
faults=$!
status=0
.venv/bin/python -m pytest -q -m "not production_stack" --basetemp="$work/rest" || status=$?
faults_status=0
wait "$faults" || faults_status=$?
echo "--- fault tests on the production-settings stack (run alongside) ---"
cat "$work/faults.log"
[ "$status" -eq 0 ] && [ "$faults_status" -eq 0 ]
