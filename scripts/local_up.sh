#!/usr/bin/env bash
# Brings the local stack up: emulators, functions, topics, bucket, haystack.
# Then `source .local/env` points niah, curl and the Google libraries at it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m niah_devtools.localstack up "$@"
