#!/usr/bin/env bash
# Every test: lint (ruff), types (mypy), the layering check (who may import whom), then
# every tier of tests (docs/testing.md has the table):
#   unit         in-process, seconds
#   deploy       Terraform offline (validate, plan), checkov, the deploy and packaging
#                scripts, run as processes
#   integration  the local stack: real emulators, functions-framework processes, the
#                real small model; fault tests also on a stack with a deployment's sweep
#                (production_stack)
# Three pytest processes run side by side, each with its own temporary directory: the
# unit and deploy tiers; the stack tests (one stack); the fault tests on the stack with
# a deployment's sweep (production_stack), which mostly wait on leases and sweep passes.
# Their output follows, one after the other.
#
#   scripts/test.sh            everything
#   scripts/test.sh --quick    lint, types, layering and the unit tier but its heavy tests
#                              (million-token prompts and the like): the edit-test loop
#   scripts/test.sh ARGS...    lint, types, layering, then pytest ARGS (one process)
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
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tiers=("unit or deploy or system" "integration and not production_stack" "production_stack")
pids=()
for i in "${!tiers[@]}"; do
  .venv/bin/python -m pytest -q -m "${tiers[$i]}" --basetemp="$work/tier$i" \
    >"$work/tier$i.log" 2>&1 &
  pids+=("$!")
done
status=0
for i in "${!tiers[@]}"; do
  wait "${pids[$i]}" || status=1
  echo "--- pytest -m \"${tiers[$i]}\" ---"
  cat "$work/tier$i.log"
done
exit "$status"
