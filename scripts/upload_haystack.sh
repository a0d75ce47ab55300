#!/usr/bin/env bash
# Uploads a folder of .txt files as a haystack of the deployed service:
# gs://$BUCKET/haystacks/NAME/, which a run names with --haystack_dir NAME.
#   BUCKET=my-proj-niah scripts/upload_haystack.sh DIR NAME [--dry-run]
# The service reads the files in sorted order and repeats them to reach the longest
# context. A run's ID covers the haystack's content, so upload changed texts under a
# new NAME rather than into an existing one. --dry-run prints the command only.
set -euo pipefail
dry_run=0
args=()
for arg in "$@"; do
  if [ "$arg" = --dry-run ]; then dry_run=1; else args+=("$arg"); fi
done
[ "${#args[@]}" = 2 ] || { echo "usage: BUCKET=... scripts/upload_haystack.sh DIR NAME [--dry-run]" >&2; exit 2; }
dir=${args[0]%/} name=${args[1]}
: "${BUCKET:?set BUCKET (terraform -chdir=infra output -raw bucket)}"
[ -d "$dir" ] || { echo "upload_haystack: $dir is not a folder" >&2; exit 2; }
[[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] || {
  echo "upload_haystack: NAME '$name' may hold letters, digits, '.', '_' and '-' only" >&2
  exit 2
}
shopt -s nullglob
files=("$dir"/*.txt)
[ "${#files[@]}" -gt 0 ] || { echo "upload_haystack: $dir holds no .txt files" >&2; exit 2; }
command=(gcloud storage cp "${files[@]}" "gs://$BUCKET/haystacks/$name/")
if [ "$dry_run" = 1 ]; then
  printf '%q ' "${command[@]}"
  echo
  exit 0
fi
"${command[@]}"
echo "uploaded ${#files[@]} files: run with --haystack_dir $name"
