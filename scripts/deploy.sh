#!/usr/bin/env bash
# Deploys needle-service to a Google Cloud project with gcloud (the Terraform in infra/
# describes the same thing). Needs: gcloud authenticated, PROJECT and BUCKET set.
#   PROJECT=my-proj BUCKET=my-proj-niah REGION=us-central1 INVOKER=user:me@example.com scripts/deploy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${PROJECT:?set PROJECT}" "${BUCKET:?set BUCKET}"
REGION=${REGION:-us-central1}
VERTEX_LOCATION=${VERTEX_LOCATION:-global}
WORKER_MAX_INSTANCES=${WORKER_MAX_INSTANCES:-10}
WORKER_CONCURRENCY=${WORKER_CONCURRENCY:-4}
g() { gcloud --project="$PROJECT" --quiet "$@"; }

g services enable cloudfunctions.googleapis.com run.googleapis.com cloudbuild.googleapis.com \
  eventarc.googleapis.com pubsub.googleapis.com firestore.googleapis.com \
  aiplatform.googleapis.com storage.googleapis.com artifactregistry.googleapis.com

g storage buckets describe "gs://$BUCKET" >/dev/null 2>&1 ||
  g storage buckets create "gs://$BUCKET" --location="$REGION" \
    --uniform-bucket-level-access --public-access-prevention
g firestore databases describe >/dev/null 2>&1 ||
  g firestore databases create --location="$REGION" --type=firestore-native
for topic in niah-cells niah-reports niah-dead-letter; do
  g pubsub topics describe "$topic" >/dev/null 2>&1 || g pubsub topics create "$topic"
done
g pubsub subscriptions describe niah-dead-letter-hold >/dev/null 2>&1 ||
  g pubsub subscriptions create niah-dead-letter-hold --topic=niah-dead-letter \
    --message-retention-duration=7d

for sa in dispatcher worker report pusher; do
  g iam service-accounts describe "niah-$sa@$PROJECT.iam.gserviceaccount.com" >/dev/null 2>&1 ||
    g iam service-accounts create "niah-$sa" --display-name="needle-service $sa"
done
sa() { echo "serviceAccount:niah-$1@$PROJECT.iam.gserviceaccount.com"; }
bind_project() { g projects add-iam-policy-binding "$PROJECT" --member="$1" --role="$2" --condition=None >/dev/null; }
bind_project "$(sa dispatcher)" roles/datastore.user
bind_project "$(sa worker)" roles/datastore.user
bind_project "$(sa worker)" roles/aiplatform.user
bind_project "$(sa report)" roles/datastore.user
g storage buckets add-iam-policy-binding "gs://$BUCKET" --member="$(sa dispatcher)" --role=roles/storage.objectViewer >/dev/null
g storage buckets add-iam-policy-binding "gs://$BUCKET" --member="$(sa worker)" --role=roles/storage.objectUser >/dev/null
g storage buckets add-iam-policy-binding "gs://$BUCKET" --member="$(sa report)" --role=roles/storage.objectUser >/dev/null
g pubsub topics add-iam-policy-binding niah-cells --member="$(sa dispatcher)" --role=roles/pubsub.publisher >/dev/null
g pubsub topics add-iam-policy-binding niah-reports --member="$(sa worker)" --role=roles/pubsub.publisher >/dev/null

scripts/package_functions.sh >/dev/null
ENV="NIAH_PROJECT=$PROJECT,NIAH_BUCKET=$BUCKET,NIAH_VERTEX_LOCATION=$VERTEX_LOCATION,NIAH_CACHE_DIR=/tmp/niah"
common=(--gen2 --region="$REGION" --runtime=python311 --source=build/functions --set-env-vars="$ENV")
g functions deploy niah-dispatcher "${common[@]}" --entry-point=dispatch --trigger-http \
  --no-allow-unauthenticated --service-account="niah-dispatcher@$PROJECT.iam.gserviceaccount.com" \
  --memory=512Mi --timeout=60s --max-instances=5 \
  --set-build-env-vars=GOOGLE_FUNCTION_SOURCE=functions/dispatcher/main.py
# The worker and the dead-letter handler are invoked by our own push subscriptions
# (so the worker's can carry a dead-letter policy); only niah-pusher may invoke them.
g functions deploy niah-worker "${common[@]}" --entry-point=handle_cell --trigger-http \
  --no-allow-unauthenticated --service-account="niah-worker@$PROJECT.iam.gserviceaccount.com" \
  --memory=2Gi --cpu=1 --timeout=540s --max-instances="$WORKER_MAX_INSTANCES" \
  --concurrency="$WORKER_CONCURRENCY" \
  --set-build-env-vars=GOOGLE_FUNCTION_SOURCE=functions/worker/main.py
g functions deploy niah-dead-letter "${common[@]}" --entry-point=handle_dead_letter --trigger-http \
  --no-allow-unauthenticated --service-account="niah-worker@$PROJECT.iam.gserviceaccount.com" \
  --memory=512Mi --timeout=60s --max-instances=2 \
  --set-build-env-vars=GOOGLE_FUNCTION_SOURCE=functions/worker/main.py
for fn in niah-worker niah-dead-letter; do
  g run services add-iam-policy-binding "$fn" --region="$REGION" --member="$(sa pusher)" --role=roles/run.invoker >/dev/null
done
g functions deploy niah-report "${common[@]}" --entry-point=handle_report --trigger-topic=niah-reports \
  --retry --service-account="niah-report@$PROJECT.iam.gserviceaccount.com" \
  --trigger-service-account="niah-pusher@$PROJECT.iam.gserviceaccount.com" \
  --memory=1Gi --timeout=300s --max-instances=2 --ingress-settings=internal-only \
  --set-build-env-vars=GOOGLE_FUNCTION_SOURCE=functions/report/main.py

g run services add-iam-policy-binding niah-report --region="$REGION" --member="$(sa pusher)" --role=roles/run.invoker >/dev/null

# Cells: bounded backoff, a dead-letter topic after 5 deliveries, and its handler.
uri() { g functions describe "$1" --region="$REGION" --gen2 --format='value(serviceConfig.uri)'; }
push_auth=(--push-auth-service-account="niah-pusher@$PROJECT.iam.gserviceaccount.com")
if ! g pubsub subscriptions describe niah-cells-push >/dev/null 2>&1; then
  g pubsub subscriptions create niah-cells-push --topic=niah-cells --push-endpoint="$(uri niah-worker)" \
    "${push_auth[@]}" --ack-deadline=600 --dead-letter-topic=niah-dead-letter --max-delivery-attempts=5 \
    --min-retry-delay=10s --max-retry-delay=600s
fi
if ! g pubsub subscriptions describe niah-dead-letter-push >/dev/null 2>&1; then
  g pubsub subscriptions create niah-dead-letter-push --topic=niah-dead-letter \
    --push-endpoint="$(uri niah-dead-letter)" "${push_auth[@]}" --ack-deadline=60
fi
project_number=$(g projects describe "$PROJECT" --format='value(projectNumber)')
pubsub_agent="serviceAccount:service-$project_number@gcp-sa-pubsub.iam.gserviceaccount.com"
g pubsub topics add-iam-policy-binding niah-dead-letter --member="$pubsub_agent" --role=roles/pubsub.publisher >/dev/null
g pubsub subscriptions add-iam-policy-binding niah-cells-push --member="$pubsub_agent" --role=roles/pubsub.subscriber >/dev/null

# The sweep: every 10 minutes, republish the missing cells of runs stalled for 2 hours.
g functions deploy niah-sweep "${common[@]}" --entry-point=sweep --trigger-http \
  --no-allow-unauthenticated --service-account="niah-dispatcher@$PROJECT.iam.gserviceaccount.com" \
  --memory=512Mi --timeout=300s --max-instances=1 \
  --update-env-vars=NIAH_SWEEP_STALLED_AFTER_SECONDS=7200 \
  --set-build-env-vars=GOOGLE_FUNCTION_SOURCE=functions/dispatcher/main.py
g run services add-iam-policy-binding niah-sweep --region="$REGION" --member="$(sa pusher)" --role=roles/run.invoker >/dev/null
g services enable cloudscheduler.googleapis.com
g scheduler jobs describe niah-sweep --location="$REGION" >/dev/null 2>&1 ||
  g scheduler jobs create http niah-sweep --location="$REGION" --schedule="*/10 * * * *" \
    --uri="$(uri niah-sweep)" --http-method=POST \
    --oidc-service-account-email="niah-pusher@$PROJECT.iam.gserviceaccount.com"

if [ -n "${INVOKER:-}" ]; then
  g run services add-iam-policy-binding niah-dispatcher --region="$REGION" --member="$INVOKER" --role=roles/run.invoker >/dev/null
  g storage buckets add-iam-policy-binding "gs://$BUCKET" --member="$INVOKER" --role=roles/storage.objectViewer >/dev/null
  bind_project "$INVOKER" roles/datastore.viewer
fi
url=$(g functions describe niah-dispatcher --region="$REGION" --gen2 --format='value(serviceConfig.uri)')
echo "dispatcher: $url"
echo "upload a haystack: gcloud storage cp ./essays/*.txt gs://$BUCKET/haystacks/paul_graham_essays/"
echo "start a run: niah run --url $url --model_name gemini-2.5-flash --context_lengths 1000 100000 --wait"
