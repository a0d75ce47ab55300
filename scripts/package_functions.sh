#!/usr/bin/env bash
# Builds build/functions.zip (or the path in $1) and, beside it, the same tree unzipped
# (build/functions/, which scripts/deploy.sh uploads): one source archive for all three
# functions, with the shipped library at its root (importable as `niah`) and the pinned
# requirements. Each function picks its file with GOOGLE_FUNCTION_SOURCE.
# Only shared/niah ships: the developer tooling (devtools/: the Vertex stand-in, the
# local stack) and the tests never do; tests/unit/test_packaging.py checks it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/functions.zip}")
stage=$(dirname "$out")/functions
rm -rf "$stage" && mkdir -p "$stage"
cp -r functions "$stage/functions"
cp -r shared/niah "$stage/niah"
cp requirements.txt "$stage/requirements.txt"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$out"
(cd "$stage" && python3 -m zipfile -c "$out" .)
echo "$out"
