# needle-service on Google Cloud: five Cloud Run functions (2nd gen) from three sources,
# Pub/Sub push subscriptions with a dead-letter topic, Firestore in native mode, one
# private bucket, one service account per function (and one for Pub/Sub push and
# Cloud Scheduler, one for Cloud Build) with the least roles each needs. Nothing is
# public. This is the one definition of what is deployed: scripts/deploy.sh runs it.

# Bill API calls to this project: with a user's Application Default Credentials (Cloud
# Shell, a laptop) some APIs otherwise refuse calls that name no quota project.
provider "google" {
  project               = var.project
  region                = var.region
  billing_project       = var.project
  user_project_override = true
}

# The same project and billing, for the one beta-only resource (the Vertex AI service
# agent's identity, iam.tf).
provider "google-beta" {
  project               = var.project
  region                = var.region
  billing_project       = var.project
  user_project_override = true
}

data "google_project" "this" {}

locals {
  services = [
    "artifactregistry.googleapis.com",
    "aiplatform.googleapis.com",
    # The budget whose alerts trip the kill switch (budget.tf): free to enable.
    "billingbudgets.googleapis.com",
    "cloudbuild.googleapis.com",
    "cloudfunctions.googleapis.com",
    "cloudresourcemanager.googleapis.com",
    "cloudscheduler.googleapis.com",
    "firestore.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
  ]
  # Pub/Sub's service agent: forwards dead letters, and mints the push identity's tokens.
  # Named by hand, because nothing in the GA provider makes it: Google creates service
  # agents "automatically as you enable and use" a service, and asks for one in advance
  # only through a beta or alpha surface
  # (cloud.google.com/iam/docs/create-service-agents; `gcloud beta services identity
  # create`, Service Usage v1beta1 generateServiceIdentity,
  # google_project_service_identity in hashicorp/google-beta only; hashicorp/google
  # 7.46.1's schema has neither that resource nor a Pub/Sub agent data source: read
  # 2026-11-26). So its bindings come after the API wait (time_sleep.apis) and after
  # Pub/Sub's first use (a topic or subscription of ours); an apply that still finds it
  # missing ("does not exist") succeeds on a re-run (README, "First apply on a fresh
  # project", which also gives the beta command).
  pubsub_agent = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  common_env = {
    NIAH_PROJECT               = var.project
    NIAH_BUCKET                = google_storage_bucket.data.name
    NIAH_CELLS_TOPIC           = google_pubsub_topic.cells.name
    NIAH_REPORTS_TOPIC         = google_pubsub_topic.reports.name
    NIAH_ALERTS_TOPIC          = google_pubsub_topic.alerts.name
    NIAH_VERTEX_LOCATION       = var.vertex_location
    NIAH_DEFAULT_MODEL_NAME    = var.default_model
    NIAH_LOCAL_MODEL_AVAILABLE = tostring(var.local_model)
    NIAH_CACHE_DIR             = "/tmp/niah"
  }
  # Who may change any run, who sends budget alerts and fires sentinels (the accounts
  # of the budget push and of the sentinels' Scheduler jobs: both niah-pusher), how the
  # caller is known (behind Cloud Run's IAM, which checks each ID token and removes its
  # signature: niah.cloud.identity), and the ceilings' overrides (docs/limits.md); the
  # dispatcher reads them, the others ignore them.
  limits_env = merge(
    {
      NIAH_OPERATORS           = jsonencode(var.operators)
      NIAH_BUDGET_ALERT_PUSHER = google_service_account.pusher.email
      NIAH_SENTINEL_SCHEDULER  = google_service_account.pusher.email
      NIAH_IDENTITY_MODE       = "cloud_run"
    },
    { for key, usd in var.spend_ceilings_usd : "NIAH_${upper(key)}_SPEND_CEILING_USD" => tostring(usd) },
  )
  # The OpenAI-compatible endpoint, where one is deployed: the dispatcher checks a request
  # for it can be served, the worker calls it (its key: secrets.tf).
  openai_env = { for name, value in { NIAH_OPENAI_BASE_URL = var.openai_base_url } : name => value if value != "" }
}

resource "google_project_service" "apis" {
  for_each           = toset(local.services)
  service            = each.value
  disable_on_destroy = false
}

# An API is not wholly usable the moment google_project_service returns: "service
# activation is not guaranteed by the time the google_project_service resource is done
# provisioning", and the provider's guide answers it with a time_sleep between the
# services and what uses them (its "Newly activated service errors" guide,
# magic-modules .../website/docs/guides/google_project_service.html.markdown, read
# 2026-11-26). Enabling Cloud Build, Cloud Functions and Cloud Run also creates their
# service agents and grants them roles, and those grants take a while to spread: a
# function build that failed on a fresh project was put down to "the Cloud Build
# Service Agent not having the permissions immediately on project creation"
# (terraform-docs-samples PR 179, review of 2022-09-29). So nothing here uses an API
# before this wait; 60 s is what Google's samples most often wait, and every build
# waits a further 120 s for niah-build's roles (iam.tf), so no build starts sooner
# than 3 minutes after its APIs, past IAM's "typically 2 minutes". The wait runs on
# the first apply, and again only when the list of services changes.
resource "time_sleep" "apis" {
  create_duration = "60s"
  triggers = {
    services = join(",", sort([for api in google_project_service.apis : api.service]))
  }
}

# ---------- Cloud Storage: private, uniform access, no public access ----------
resource "google_storage_bucket" "data" {
  #checkov:skip=CKV_GCP_62:Usage logs need a second bucket; Cloud Audit Logs (Data Access for storage.googleapis.com) record object access where a project needs it, and reports and caches hold no personal data.
  name                        = var.bucket
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  # Versioning keeps an overwritten or deleted object for a week (function sources,
  # reports), then lifecycle removes it, so it costs little.
  versioning {
    enabled = true
  }

  lifecycle_rule {
    condition {
      days_since_noncurrent_time = 7
      with_state                 = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [time_sleep.apis]
}

# The function sources, in a bucket of their own: no function's account holds any role
# on it, so none can overwrite the code the next build deploys (in the data bucket, an
# account that writes reports or caches could). Only the deployer writes here; Cloud
# Functions copies each zip into its own gcf-v2-sources bucket for the build (iam.tf).
resource "google_storage_bucket" "sources" {
  #checkov:skip=CKV_GCP_62:Usage logs need a further bucket; only the deployer writes here and Cloud Audit Logs (Admin Activity, always on) record who changed the bucket's policy or objects' metadata.
  name                        = "${var.bucket}-sources"
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  # A replaced zip stays a week, then goes, as in the data bucket.
  versioning {
    enabled = true
  }

  lifecycle_rule {
    condition {
      days_since_noncurrent_time = 7
      with_state                 = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }

  depends_on = [time_sleep.apis]
}

# Each function's source, named by its checksum: a changed zip is a new object, and
# only the functions whose source changed are rebuilt.
resource "google_storage_bucket_object" "source" {
  for_each = toset(["dispatcher", "worker", "report"])
  name     = "functions/${each.key}-${filemd5("${var.sources_dir}/${each.key}.zip")}.zip"
  bucket   = google_storage_bucket.sources.name
  source   = "${var.sources_dir}/${each.key}.zip"
}

# The Gemma 3 tokenizer model (no weights), content-addressed as the worker expects it:
# niah.models.catalog.tokenizer_object (tests/deploy/test_infra.py checks they agree).
resource "google_storage_bucket_object" "tokenizer" {
  name         = "tokenizers/gemma3-${substr(filesha256(var.tokenizer_model), 0, 16)}.model"
  bucket       = google_storage_bucket.data.name
  source       = var.tokenizer_model
  content_type = "application/octet-stream"
}

# The default haystack (the NIAH harness's Paul Graham essays, fetched by deploy.sh), so
# a first run that names no haystack finds one. More: scripts/upload_haystack.sh.
resource "google_storage_bucket_object" "haystack" {
  for_each     = fileset(var.haystacks_dir, "*/*.txt")
  name         = "haystacks/${each.value}"
  bucket       = google_storage_bucket.data.name
  source       = "${var.haystacks_dir}/${each.value}"
  content_type = "text/plain"
}

# ---------- Firestore (server-side access only: no client-SDK rules opened) ----------
resource "google_firestore_database" "default" {
  name        = "(default)"
  location_id = var.region
  type        = "FIRESTORE_NATIVE"
  depends_on  = [time_sleep.apis]
}
