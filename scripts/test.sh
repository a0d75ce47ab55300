#!/usr/bin/env bash
# Every test: lint (ruff), types (mypy), the layering check (who may import whom), then
# every tier of tests (docs/testing.md has the table):
#   unit         in-process, seconds
#   deploy       Terraform offline (validate, plan), checkov, the deploy and packaging
#                scripts, run as processes
#   integration  the local stack: real emulators, functions-framework processes, the
#                real small model; fault tests also on a stack with a deployment's sweep
#                (production_stack)
# The tiers run side by side on three pytest-xdist workers: the stack tests on one (one
# stack), the fault tests on the production-settings stack on another, the unit and
# deploy tests wherever a worker is free (tests/conftest.py groups them).
#
#   scripts/test.sh            everything
#   scripts/test.sh --quick    lint, types, layering and the unit tier but its heavy tests
#                              (million-token prompts and the like): the edit-test loop
#   scripts/test.sh ARGS...    lint, types, layering, then pytest ARGS (one process)
#
# NIAH_TEST_WORKERS sets how many workers the whole run uses (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
scripts/setup.sh --tests
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m niah_devtools.layering
if [ "$quick" -eq 1 ]; then
  exec .venv/bin/python -m pytest -q -n 2 -m "unit and not heavy" "$@"
fi
if [ "$#" -gt 0 ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
exec .venv/bin/python -m pytest -q -n "${NIAH_TEST_WORKERS:-3}" --dist loadgroup \
  --no-loadscope-reorder
