#!/usr/bin/env bash
# Starts a run on the deployed dispatcher with your gcloud identity: no Python set-up,
# only gcloud, curl and python3 (Cloud Shell has all three).
#   DISPATCHER_URL=https://... PROJECT=my-proj scripts/start_run.sh \
#     --model_name gemini-3.8-flash --context_lengths 4000 8000 --document_depth_percents 0 50 100
# Options are the run options of the README (the NIAH harness's names, dashes or
# underscores), each followed by its value or, for lists, its values
# (--context_lengths 1000 2000, or "[1000, 2000]" as the harness writes it).
# Also: --url URL (else $DISPATCHER_URL), --resume (retry a run's missing and failed
# cells), --batch (the same as --execution batch: Vertex AI batch jobs at half price),
# --dry-run (print the request and the curl command; call nothing).
# Prints the run ID, its Firestore console link and where its report will be.
set -euo pipefail
url=${DISPATCHER_URL:-}
dry_run=0
resume=0
options=()
while [ $# -gt 0 ]; do
  case "$1" in
    --url) url=${2:?--url needs the dispatcher URL}; shift 2 ;;
    --url=*) url=${1#--url=}; shift ;;
    --dry-run) dry_run=1; shift ;;
    --resume) resume=1; shift ;;
    --batch) options+=(--execution batch); shift ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) options+=("$1"); shift ;;
  esac
done
[ -n "$url" ] || { echo "start_run: set DISPATCHER_URL (terraform -chdir=infra output -raw dispatcher_url) or pass --url" >&2; exit 2; }
[ "$resume" = 0 ] || url="$url?resume=true"

# The harness's options as the JSON body: lists for the list options, numbers and
# true/false where they parse as such, text for the options that are text.
body=$(python3 - "${options[@]}" <<'PYEOF'
import json, sys

LISTS = {"context_lengths", "document_depth_percents"}
TEXT = {
    "model_name", "model_provider", "evaluator_model_name", "needle", "retrieval_question",
    "expected_answer", "haystack_dir", "mrcr_source", "prompt_template", "task", "scorer",
    "thinking_level", "needle_key_type", "needle_value_type", "execution",
    "document_depth_percent_interval_type",
}

def no_constant(word):
    raise ValueError(f"{word} is not a number JSON can carry")

def parsed(name, word):
    try:
        return json.loads(word, parse_constant=no_constant)
    except ValueError as error:
        sys.exit(f"start_run: --{name} {word!r}: {error}")

def value(name, word):
    if name in TEXT:
        return word
    if word.lower() in ("true", "false"):
        return word.lower() == "true"
    try:
        return json.loads(word, parse_constant=no_constant)
    except ValueError:
        return word

body, name, words = {}, None, []
def close():
    if name is None:
        return
    if not words:
        sys.exit(f"start_run: --{name} needs a value")
    if name in LISTS:
        items = parsed(name, words[0]) if len(words) == 1 and words[0].startswith("[") else [value(name, w) for w in words]
        body[name] = items
    elif len(words) > 1:
        sys.exit(f"start_run: --{name} takes one value, got {len(words)}: {words}")
    else:
        body[name] = value(name, words[0])

for arg in sys.argv[1:]:
    if arg.startswith("--"):
        close()
        # Dashes become underscores in the option's name only, never in its value.
        flag, _, inline = arg[2:].partition("=")
        name = flag.replace("-", "_")
        words = [inline] if inline else []
    elif name is None:
        sys.exit(f"start_run: {arg!r} is not after an --option")
    else:
        words.append(arg)
close()
print(json.dumps(body, allow_nan=False))
PYEOF
)

if [ "$dry_run" = 1 ]; then
  echo "$body"
  echo "printf 'Authorization: Bearer %s\\n' \"\$(gcloud auth print-identity-token)\" | curl -sS -X POST $(printf %q "$url") -H @- -H 'Content-Type: application/json' --data-binary $(printf %q "$body")"
  exit 0
fi

if [ -n "${NIAH_LOCAL_IDENTITY_KEY:-}" ] && [ "${url#http://}" != "$url" ]; then
  # The local stack (source .local/env): its own key signs the token, which the
  # dispatcher verifies as a deployment's (niah_devtools.local_identity).
  token=$(python3 -m niah_devtools.local_identity token --url "$url") || {
    echo "start_run: could not sign a token with the local stack's key ($NIAH_LOCAL_IDENTITY_KEY)" >&2
    exit 1
  }
else
  token=$(gcloud auth print-identity-token 2>/dev/null) || {
    echo "start_run: gcloud could not print an identity token: run 'gcloud auth login' (or add --impersonate-service-account to your gcloud config)" >&2
    exit 1
  }
fi
# The token goes to curl on its standard input (-H @-: headers read from a file), never
# on its command line, where any user of this machine could read it (ps, /proc/PID/cmdline).
# printf is bash's own, so no other process is started with the token either.
response=$(printf 'Authorization: Bearer %s\n' "$token" | curl -sS -X POST "$url" -H @- \
  -H 'Content-Type: application/json' --data-binary "$body" -w '\n%{http_code}') ||
  { echo "start_run: cannot reach $url" >&2; exit 1; }
status=${response##*$'\n'}
answer=${response%$'\n'*}
project=${PROJECT:-$(gcloud config get-value project 2>/dev/null || true)}
report=$(
  cat <<'PYEOF'
import json, sys
status, project, raw = int(sys.argv[1]), sys.argv[2], sys.stdin.read()
try:
    answer = json.loads(raw)
except ValueError:
    answer = {}
if status in (401, 403):
    sys.exit(
        f"start_run: {status}: your account may not invoke the dispatcher; the deployer grants "
        "it with INVOKER=user:you@example.com scripts/deploy.sh"
    )
if status >= 400 or "run_id" not in answer:
    problem = answer.get("error", {})
    sys.exit(f"start_run: {status}: {problem.get('field', '')}: {problem.get('message', raw)}")
run_id = answer["run_id"]
console = f"https://console.cloud.google.com/firestore/databases/-default-/data/panel/runs/{run_id}"
print(f"run ID:    {run_id}")
print(f"cells:     {answer.get('cells')} ({answer.get('published')} published now)")
print(f"Firestore: {console}" + (f"?project={project}" if project else ""))
print(f"report:    {answer.get('report_prefix')}")
PYEOF
)
printf '%s' "$answer" | python3 -c "$report" "$status" "$project"
