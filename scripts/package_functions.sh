#!/usr/bin/env bash
# Builds build/functions.zip: one source archive for all three functions, with the
# shared library at its root (importable as `niah`) and the pinned requirements.
# Each function picks its file with GOOGLE_FUNCTION_SOURCE=functions/<name>/main.py.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build/functions && mkdir -p build/functions
cp -r functions build/functions/functions
cp -r shared/niah build/functions/niah
cp requirements.txt build/functions/requirements.txt
find build/functions -name __pycache__ -prune -exec rm -rf {} +
(cd build/functions && rm -f ../functions.zip && python3 -m zipfile -c ../functions.zip .)
echo build/functions.zip
