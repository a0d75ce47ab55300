#!/usr/bin/env bash
# The main job, locally: a real run of Gemma 3 270M over 4 lengths x 5 depths up to
# 4,000 tokens, through the emulated cloud path, ending in a heatmap PNG and the HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
scripts/setup.sh
trap 'scripts/local_down.sh >/dev/null 2>&1 || true' EXIT
# NIAH_DEMO_BASE_PORT moves the stack's nine ports (default 8470-8478).
.venv/bin/python -m niah_devtools.localstack up --base-port "${NIAH_DEMO_BASE_PORT:-8470}"
# shellcheck disable=SC1091
source .local/env
out=$(mktemp)
set +e
.venv/bin/niah run --context_lengths_min 1000 --context_lengths_max 4000 \
  --context_lengths_num_intervals 4 --document_depth_percent_intervals 5 --wait | tee "$out"
status=${PIPESTATUS[0]}
set -e
# 3, 4 and 5 say cells failed, went unscored or were truncated: the run still has its report.
case $status in 0|3|4|5) ;; *) exit "$status" ;; esac
run_id=$(awk '/^run run-/{print $2; exit}' "$out" | tr -d ':')
rm -f "$out"
.venv/bin/niah export "$run_id" --out "results/$run_id/cells" >/dev/null
echo "demo finished in $(( $(date +%s) - started )) s"
.venv/bin/niah report "$run_id" --out "results/$run_id/heatmap.png" --html "results/$run_id/report.html"
