# ---------- service accounts: one per function, and the least roles each needs ----------
resource "google_service_account" "runs" {
  for_each = {
    dispatcher  = "needle-service dispatcher"
    worker      = "needle-service worker"
    dead_letter = "needle-service dead-letter handler"
    report      = "needle-service report"
    sweep       = "needle-service sweep"
  }
  account_id   = "niah-${replace(each.key, "_", "-")}"
  display_name = each.value
  depends_on   = [time_sleep.apis]
}

# The identity Pub/Sub push and Cloud Scheduler call the functions with.
resource "google_service_account" "pusher" {
  account_id   = "niah-pusher"
  display_name = "needle-service push and scheduler identity"
  depends_on   = [time_sleep.apis]
}

# Cloud Build builds the functions as this account, so the build does not depend on
# the project's default accounts (new projects' defaults may lack the roles:
# cloud.google.com/functions/docs/securing/build-custom-sa, read 2026-11-26). Roles from
# cloud.google.com/run/docs/configuring/services/build-service-account (read 2026-11-26).
resource "google_service_account" "build" {
  account_id   = "niah-build"
  display_name = "needle-service function builds"
  depends_on   = [time_sleep.apis]
}

resource "google_project_iam_member" "build" {
  for_each = toset(["roles/logging.logWriter", "roles/artifactregistry.writer"])
  project  = var.project
  role     = each.key
  member   = google_service_account.build.member
}

# Storage for the build, and only on the sources bucket. Cloud Functions copies each
# function's source from our bucket into a bucket of its own,
# gcf-v2-sources-NUMBER-REGION, and the build fetches it from there ("failed to download
# archive gs://gcf-v2-sources-.../function-source.zip: Access to bucket
# gcf-v2-sources-... denied", hashicorp/terraform-provider-google#20571, 2024-12-03).
# Google's docs give the build account roles/storage.objectAdmin "for retrieving the
# function source from the Cloud Storage bucket" (the two pages above), and so does the
# provider's "cloudfunctions2 basic builder" example (magic-modules,
# mmv1/templates/terraform/examples/cloudfunctions2_basic_builder.tf.tmpl, read
# 2026-11-26), on the whole project; that would let every build read and overwrite the
# data bucket. The role here is the one the docs name, held only on the sources bucket
# and its objects (the build's refusal above asks for Object Viewer alone, but a build
# with less than the documented role was not tried). Cloud Functions makes that bucket
# on the first deploy in a region, so no bucket-level grant can be made before it
# exists: this is a project grant with an IAM condition on the bucket's name (Cloud
# Storage names buckets projects/_/buckets/NAME and objects
# projects/_/buckets/NAME/objects/OBJECT for conditions:
# cloud.google.com/iam/docs/conditions-resource-attributes, read 2026-11-26).
locals {
  function_sources_bucket = "projects/_/buckets/gcf-v2-sources-${data.google_project.this.number}-${var.region}"
}

resource "google_project_iam_member" "build_sources" {
  project = var.project
  role    = "roles/storage.objectAdmin"
  member  = google_service_account.build.member
  condition {
    title       = "function sources only"
    description = "The Cloud Functions sources bucket of this region, which the builds fetch from."
    expression  = "resource.name == \"${local.function_sources_bucket}\" || resource.name.startsWith(\"${local.function_sources_bucket}/\")"
  }
}

# A grant takes effect everywhere only after a while: "typically 2 minutes, potentially 7
# minutes or longer" (cloud.google.com/iam/docs/access-change-propagation, read
# 2026-11-26). A function's first build runs as niah-build and fails if its roles have
# not reached Cloud Build, so every function waits this long after the grants. A
# time_sleep waits only when it is created, or re-created when a trigger changes: on a
# fresh project, and again when the build account gains a role; not on other applies.
resource "time_sleep" "build_roles" {
  create_duration = "120s"
  triggers = {
    roles   = join(",", sort([for grant in google_project_iam_member.build : grant.role]))
    sources = "${google_project_iam_member.build_sources.role} on ${local.function_sources_bucket}"
  }
  depends_on = [google_project_iam_member.build, google_project_iam_member.build_sources]
}

# What each function's account may do, and why:
# - dispatcher: writes runs, publishes cells, lists haystacks; asks for the report of a
#   run it finds answered already (a resumed or repeated request:
#   niah.service.runs.dispatch);
# - worker: reads haystacks and the tokenizer, writes token caches, contexts and kept
#   answers, submits and reads batch jobs and their files, calls Vertex AI (a custom
#   role, below), writes cells, publishes the rest of a run's cells after its primer
#   (cache-aware dispatch) and the report request;
# - dead_letter: records the cell failed (or stores an answer kept in the bucket),
#   releases a primer's run, asks for the report; no Vertex AI;
# - sweep: reads stalled runs and republishes their missing cells; asks for the report of
#   a run whose cells are all stored but whose report request was lost
#   (niah.service.runs.sweep);
# - report: reads cells, writes the run's report fields, the report objects and the runs
#   index (reports/index.html, index.json); publishes a sentinel run's alert to
#   niah-alerts (sentinels.tf), and nothing else.
# Which function publishes to which topic is read from the code by
# tests/deploy/test_publishers.py, which checks these grants against it both ways.
locals {
  project_roles = {
    dispatcher_firestore  = { account = "dispatcher", role = "roles/datastore.user" }
    worker_firestore      = { account = "worker", role = "roles/datastore.user" }
    dead_letter_firestore = { account = "dead_letter", role = "roles/datastore.user" }
    sweep_firestore       = { account = "sweep", role = "roles/datastore.user" }
    report_firestore      = { account = "report", role = "roles/datastore.user" }
  }
  publishers = {
    dispatcher_publishes_cells    = { account = "dispatcher", topic = "cells" }
    dispatcher_publishes_reports  = { account = "dispatcher", topic = "reports" }
    worker_publishes_cells        = { account = "worker", topic = "cells" }
    worker_publishes_reports      = { account = "worker", topic = "reports" }
    dead_letter_publishes_cells   = { account = "dead_letter", topic = "cells" }
    dead_letter_publishes_reports = { account = "dead_letter", topic = "reports" }
    sweep_publishes_cells         = { account = "sweep", topic = "cells" }
    sweep_publishes_reports       = { account = "sweep", topic = "reports" }
    report_publishes_alerts       = { account = "report", topic = "alerts" }
    # A scheduled sentinel firing the dispatcher refuses is told to the alerts topic.
    dispatcher_publishes_alerts = { account = "dispatcher", topic = "alerts" }
  }
  # Who reads the data bucket (get and list anywhere in it: haystacks, the tokenizer,
  # caches, kept answers, batch output), and where each writes. Writing is
  # roles/storage.objectUser held only under the account's prefixes, by an IAM condition
  # (below). The prefixes are niah.settings' (contexts_prefix, ...) and the token
  # cache's (niah.core.prompts.haystack_tokens.CACHE_PREFIX); niah_devtools.bucket_access.WRITES
  # is this table read from the code, and tests/deploy/test_bucket_access.py fails when a
  # planned storage grant reaches past it.
  bucket_readers = ["dispatcher", "worker", "dead_letter", "report"]
  bucket_writes = {
    # token caches (if absent), prompts and whole answers, answers kept for the next
    # delivery, batch input, manifests, claims and ingest markers
    worker = ["haystack-cache/", "contexts/", "kept-answers/", "batches/"]
    # a kept answer the store still refuses is kept again
    dead_letter = ["kept-answers/"]
    # heatmap, page and summary per run, and the runs index beside them
    report = ["reports/"]
  }
  # Cloud Storage names an object projects/_/buckets/BUCKET/objects/OBJECT in a condition
  # (cloud.google.com/iam/docs/conditions-resource-attributes, read 2026-11-27).
  data_bucket_resource = "projects/_/buckets/${google_storage_bucket.data.name}"
  topics = {
    cells   = google_pubsub_topic.cells.name
    reports = google_pubsub_topic.reports.name
    alerts  = google_pubsub_topic.alerts.name
  }
}

resource "google_project_iam_member" "runs" {
  for_each = local.project_roles
  project  = var.project
  role     = each.value.role
  member   = google_service_account.runs[each.value.account].member
}

resource "google_pubsub_topic_iam_member" "runs" {
  for_each = local.publishers
  topic    = local.topics[each.value.topic]
  role     = "roles/pubsub.publisher"
  member   = google_service_account.runs[each.value.account].member
}

# Only the Gemini calls and batch jobs the worker makes, not roles/aiplatform.user (which
# also creates endpoints, datasets, pipelines and more, project-wide). Permissions from
# docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/general/
# iam-permissions (read 2026-11-27): batchPredictionJobs create and list on the
# location, get and cancel on the job; a prompt request (generateContent, and
# countTokens on the same model resource) needs aiplatform.endpoints.predict
# (cloud.google.com/vertex-ai/generative-ai/docs/access-control, read 2026-11-27). A
# destroyed custom role's ID stays taken for 7 days (then it is deleted for good): an
# apply right after a destroy fails on it; undelete it or wait.
resource "google_project_iam_custom_role" "worker_vertex" {
  role_id     = "niahWorkerVertex"
  title       = "needle-service worker: Gemini calls and batch jobs"
  description = "generateContent and countTokens on publisher models; create, get, list and cancel batch prediction jobs."
  permissions = [
    "aiplatform.batchPredictionJobs.cancel",
    "aiplatform.batchPredictionJobs.create",
    "aiplatform.batchPredictionJobs.get",
    "aiplatform.batchPredictionJobs.list",
    "aiplatform.endpoints.predict",
  ]
  depends_on = [time_sleep.apis]
}

resource "google_project_iam_member" "worker_vertex" {
  project = var.project
  role    = "projects/${var.project}/roles/${google_project_iam_custom_role.worker_vertex.role_id}"
  member  = google_service_account.runs["worker"].member
}

# Read and list the whole data bucket. storage.objects.list is checked on the bucket,
# where a condition sees the bucket's name, never an object's: a listing cannot be
# narrowed by an object-name condition, so it comes with this unconditioned read grant.
resource "google_storage_bucket_iam_member" "reads" {
  for_each = toset(local.bucket_readers)
  bucket   = google_storage_bucket.data.name
  role     = "roles/storage.objectViewer"
  member   = google_service_account.runs[each.key].member
}

# Create, overwrite (create + delete) and delete objects under the account's prefixes
# only. The bucket has uniform bucket-level access, which IAM conditions on Cloud Storage
# need (no object ACLs to go around them). The role's list permission, checked against
# the bucket's name, never matches an object prefix: listing is the read grant's.
resource "google_storage_bucket_iam_member" "writes" {
  for_each = local.bucket_writes
  bucket   = google_storage_bucket.data.name
  role     = "roles/storage.objectUser"
  member   = google_service_account.runs[each.key].member
  condition {
    title       = "own prefixes only"
    description = "Objects under ${join(", ", each.value)} in the data bucket."
    expression  = join(" || ", [for prefix in each.value : "resource.name.startsWith(\"${local.data_bucket_resource}/objects/${prefix}\")"])
  }
}

# The users who start runs and read results; nothing is granted to the public.
resource "google_storage_bucket_iam_member" "invokers_read_bucket" {
  for_each = toset(var.run_invokers)
  bucket   = google_storage_bucket.data.name
  role     = "roles/storage.objectViewer"
  member   = each.value
}

resource "google_project_iam_member" "invokers_read_firestore" {
  for_each = toset(var.run_invokers)
  project  = var.project
  role     = "roles/datastore.viewer"
  member   = each.value
}

# Who may invoke which function: the push identity the event-driven ones and the sweep
# (and the dispatcher, for budget alerts and sentinels: budget.tf), the listed users the
# dispatcher.
resource "google_cloud_run_service_iam_member" "pusher_invokes" {
  for_each = google_cloudfunctions2_function.internal
  location = var.region
  service  = each.value.name
  role     = "roles/run.invoker"
  member   = google_service_account.pusher.member
}

# The push subscriptions and the scheduler jobs start calling as niah-pusher once they
# exist: they are made after its invoker grants, and after the same wait as the builds
# (above), so the first pushes are not refused while the grants spread (a refused push is
# retried, but a cell's message is dead-lettered after 5 deliveries). The dispatcher is
# among the services once niah-pusher may invoke it, so the first sentinel (or budget)
# added to a deployment waits again before its job or subscription is made.
locals {
  pusher_invoked = concat(
    [for grant in google_cloud_run_service_iam_member.pusher_invokes : grant.service],
    [for grant in google_cloud_run_service_iam_member.pusher_invokes_dispatcher : grant.service],
  )
}

resource "time_sleep" "pusher_invokes" {
  create_duration = "120s"
  triggers = {
    services = join(",", sort(local.pusher_invoked))
  }
  depends_on = [
    google_cloud_run_service_iam_member.pusher_invokes,
    google_cloud_run_service_iam_member.pusher_invokes_dispatcher, # budget.tf
  ]
}

resource "google_cloud_run_service_iam_member" "users_invoke_dispatcher" {
  for_each = toset(var.run_invokers)
  location = var.region
  service  = google_cloudfunctions2_function.dispatcher.name
  role     = "roles/run.invoker"
  member   = each.value
}

# Vertex AI's service agent reads a batch run's input JSONL and writes its predictions
# (batches/RUN_ID/ in the data bucket): Google's batch page asks that "the AI Platform
# Service Agent has permission" to the Cloud Storage files (docs.cloud.google.com/
# vertex-ai/generative-ai/docs/multimodal/batch-prediction-from-cloud-storage, read
# 2026-11-27). The worker submits the jobs with its own custom role (above).
#
# Enabling the API does not make the agent: service agents "are created automatically
# as you enable and use Google Cloud services", and "if a service agent hasn't been
# created yet, then you can't grant roles to the service agent" (cloud.google.com/iam/
# docs/create-service-agents, read 2026-11-27). Nothing here uses Vertex AI before the
# grant (the worker's first call comes after the deploy), so the agent is asked for:
# google_project_service_identity, Service Usage's generateServiceIdentity (the
# `gcloud beta services identity create` of that page), is in hashicorp/google-beta only;
# "once created, this resource cannot be updated or destroyed", destroy only forgets it
# (magic-modules, website/docs/r/project_service_identity.html.markdown, read
# 2026-11-27). Every grant to the agent names this resource's member, so Terraform makes
# it first.
resource "google_project_service_identity" "vertex_agent" {
  provider   = google-beta
  project    = var.project
  service    = "aiplatform.googleapis.com"
  depends_on = [time_sleep.apis]
}

# The role Google grants the agent itself when the agent is made by use, granted here
# because an agent made on request "isn't automatically granted" it: Google's page names
# it for this agent, service-PROJECT_NUMBER@gcp-sa-aiplatform.iam.gserviceaccount.com,
# "Vertex AI Service Agent (roles/aiplatform.serviceAgent)" (cloud.google.com/iam/docs/
# service-agents and create-service-agents, read 2026-12-04). Without it a batch job is
# refused: `{"error": {"code": 400, "message": "Service agents are being provisioned...",
# "status": "FAILED_PRECONDITION"}}` (GoogleCloudPlatform/generative-ai issue 1308).
#
# Decided knowingly: the role holds storage.objects.create, delete, get, list and update
# and storage.buckets.* on the whole project (its permission list: iann0036/iam-dataset,
# gcp/roles/aiplatform.serviceAgent.json, read 2026-12-04; Google's roles page lists it
# under each of those permissions). So the agent reaches every object of the project's
# buckets, reports and haystacks too, as it does in any project where it was made by
# use; it acts only for principals that may create Vertex AI jobs here (of ours, the
# worker alone). The two grants under batches/ this file held before add nothing under
# it and are gone. Narrowing it with an IAM condition on resource.name was not done:
# Vertex AI's own resources do not carry the resource attributes a condition reads
# (cloud.google.com/iam/docs/conditions-resource-attributes lists no aiplatform), and no
# page says how such a condition evaluates for them, so it could take the agent's
# Vertex AI permissions away. docs/deploy.md ("Vertex AI's service agent") says so.
resource "google_project_iam_member" "vertex_agent" {
  #checkov:skip=CKV_GCP_49:The role Google grants Vertex AI's own service agent (iam.serviceAccounts.actAs is in it); held by that agent alone, never by an account of ours.
  project = var.project
  role    = "roles/aiplatform.serviceAgent"
  member  = google_project_service_identity.vertex_agent.member
}
