#!/usr/bin/env bash
# Benchmarks (issue 5): cell build time vs the harness's way, peak memory, fan-out of a
# 121-cell grid and per-cell pipeline overhead on the local stack. Prints a table and
# writes results/bench.json. Arguments go to scripts/bench.py (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
exec .venv/bin/python scripts/bench.py "$@"
