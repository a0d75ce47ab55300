#!/usr/bin/env bash
# Every test: lint (ruff), types (mypy), the layering check (who may import whom), then
# every tier of tests (docs/testing.md has the table):
#   unit         in-process, seconds
#   deploy       Terraform offline (validate, plan), checkov, the deploy and packaging
#                scripts, run as processes
#   integration  the local stack: real emulators, functions-framework processes, the
#                real small model; fault tests also on a stack with a deployment's sweep
#                (production_stack)
# Seven pytest processes run side by side, each with its own temporary directory and
# stack: the unit (and system) tier; the stack tests that keep the local model busy; the
# stack tests whose model is the Vertex stand-in (side_stack, on base + 200), which
# mostly wait on freezes, leases and a slow stand-in; the fault tests on the stack with
# a deployment's sweep (production_stack). Those two groups each wait about 800 s, so
# each is split in two processes on stacks of their own (second_process: the recovery
# tests, on base + 300 and base + 400); the tests that start stacks of their own
# (own_stack: the quickstart, the benchmark's smoke run) and the deploy tier (Terraform,
# checkov, the scripts: together about the others' length; own_stack alone ended at 496 s
# of the 994-s run at 4d96e1b). Lint, types and the layering
# check run beside them. Their output follows, one after the other.
#
#   scripts/test.sh            everything
#   scripts/test.sh --quick    lint, types, layering and the unit tier but its heavy tests
#                              (million-token prompts and the like): the edit-test loop
#   scripts/test.sh ARGS...    lint, types, layering, then pytest ARGS (one process)
set -euo pipefail
cd "$(dirname "$0")/.."
# Bytecode is written even where the machine sets PYTHONDONTWRITEBYTECODE (this one does):
# without it pytest rewrites every test module's asserts again in each process, 7 of the
# 12 CPU-seconds its collection takes, in the five processes and the tier test's own
# collection. The __pycache__ folders are ignored by git and left out of the functions'
# builds (scripts/package_functions.sh).
unset PYTHONDONTWRITEBYTECODE
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
scripts/setup.sh --tests
checks() {
  .venv/bin/ruff check . &&
    .venv/bin/ruff format --check . &&
    .venv/bin/mypy &&
    .venv/bin/python -m niah_devtools.layering
}
if [ "$quick" -eq 1 ] || [ "$#" -gt 0 ]; then
  checks
  if [ "$quick" -eq 1 ]; then
    # Only the unit tier's folders are collected: each worker importing the stack and
    # deploy tests only to deselect them took seconds of the loop.
    exec .venv/bin/python -m pytest -q -n 2 -m "unit and not heavy" tests/unit tests/system "$@"
  fi
  exec .venv/bin/python -m pytest -q "$@"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Everything: the checks (about a minute of mypy on a fresh checkout) run beside the
# tiers rather than before them; their output comes first, and a failure fails the run.
checks >"$work/checks.log" 2>&1 &
checks_pid=$!
base=${NIAH_TEST_BASE_PORT:-8570}
tiers=(
  "unit or system"
  "integration and not production_stack and not side_stack and not own_stack"
  "side_stack and not second_process"
  "side_stack and second_process"
  "production_stack and not second_process"
  "production_stack and second_process"
  "own_stack or deploy"
)
# The folders each tier's tests live in (their marker comes from the folder), so a
# process collects only those: collecting all 1,965 tests took each about 5 CPU-s.
folders=(
  "tests/unit tests/system"
  "tests/integration"
  "tests/integration"
  "tests/integration"
  "tests/integration"
  "tests/integration"
  "tests/integration tests/deploy"
)
# Each process's stacks apart: the side group's on base + 200 and + 300, the production
# group's second one on base + 400 (its production stack on base + 410).
ports=("$base" "$base" "$((base + 200))" "$((base + 300))" "$base" "$((base + 400))" "$base")
pids=()
for i in "${!tiers[@]}"; do
  # shellcheck disable=SC2086 # the folders are words
  NIAH_TEST_BASE_PORT="${ports[$i]}" .venv/bin/python -m pytest -q -m "${tiers[$i]}" \
    --durations=15 --basetemp="$work/tier$i" ${folders[$i]} >"$work/tier$i.log" 2>&1 &
  pids+=("$!")
done
status=0
wait "$checks_pid" || status=1
echo "--- ruff, mypy, layering ---"
cat "$work/checks.log"
for i in "${!tiers[@]}"; do
  wait "${pids[$i]}" || status=1
  echo "--- pytest -m \"${tiers[$i]}\" ---"
  cat "$work/tier$i.log"
done
exit "$status"
