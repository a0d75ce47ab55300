#!/usr/bin/env bash
# Stops exactly the processes scripts/local_up.sh started.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m niah_devtools.localstack down "$@"
