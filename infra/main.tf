# needle-service on Google Cloud: three Cloud Run functions (2nd gen), Pub/Sub with a
# dead-letter topic, Firestore in native mode, one private bucket, and one service
# account per function with the least roles it needs. No public access anywhere.

terraform {
  required_version = ">= 1.5"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0"
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}

locals {
  services = [
    "cloudfunctions.googleapis.com", "run.googleapis.com", "cloudbuild.googleapis.com",
    "eventarc.googleapis.com", "pubsub.googleapis.com", "firestore.googleapis.com",
    "aiplatform.googleapis.com", "storage.googleapis.com", "artifactregistry.googleapis.com",
    "cloudscheduler.googleapis.com",
  ]
  common_env = {
    NIAH_PROJECT           = var.project
    NIAH_BUCKET            = google_storage_bucket.data.name
    NIAH_CELLS_TOPIC       = google_pubsub_topic.cells.name
    NIAH_REPORTS_TOPIC     = google_pubsub_topic.reports.name
    NIAH_VERTEX_LOCATION   = var.vertex_location
    NIAH_CACHE_DIR         = "/tmp/niah"
  }
}

resource "google_project_service" "apis" {
  for_each           = toset(local.services)
  service            = each.value
  disable_on_destroy = false
}

# ---------- storage: private, uniform access, no public access ----------
resource "google_storage_bucket" "data" {
  name                        = var.bucket
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false
}

resource "google_storage_bucket_object" "source" {
  name   = "functions/source-${filemd5(var.source_archive)}.zip"
  bucket = google_storage_bucket.data.name
  source = var.source_archive
}

# ---------- Firestore (server-side access only: no client-SDK rules opened) ----------
resource "google_firestore_database" "default" {
  name        = "(default)"
  location_id = var.region
  type        = "FIRESTORE_NATIVE"
  depends_on  = [google_project_service.apis]
}

# ---------- Pub/Sub ----------
resource "google_pubsub_topic" "cells" {
  name = "niah-cells"
}

resource "google_pubsub_topic" "reports" {
  name = "niah-reports"
}

resource "google_pubsub_topic" "dead_letter" {
  name = "niah-dead-letter"
}

resource "google_pubsub_subscription" "dead_letter_hold" {
  name                       = "niah-dead-letter-hold"
  topic                      = google_pubsub_topic.dead_letter.id
  message_retention_duration = "604800s"
}

# The worker's own push subscription (instead of an Eventarc trigger) so that it can
# carry the dead-letter policy and bounded backoff.
resource "google_pubsub_subscription" "cells_push" {
  name                 = "niah-cells-push"
  topic                = google_pubsub_topic.cells.id
  ack_deadline_seconds = 600
  push_config {
    push_endpoint = google_cloudfunctions2_function.worker.service_config[0].uri
    oidc_token {
      service_account_email = google_service_account.pusher.email
    }
  }
  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }
  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.dead_letter.id
    max_delivery_attempts = 5
  }
}

resource "google_pubsub_subscription" "dead_letter_push" {
  name                 = "niah-dead-letter-push"
  topic                = google_pubsub_topic.dead_letter.id
  ack_deadline_seconds = 60
  push_config {
    push_endpoint = google_cloudfunctions2_function.dead_letter.service_config[0].uri
    oidc_token {
      service_account_email = google_service_account.pusher.email
    }
  }
}

# Pub/Sub's own agent forwards dead letters and acknowledges the originals.
data "google_project" "this" {}

resource "google_pubsub_topic_iam_member" "agent_publishes_dead_letters" {
  topic  = google_pubsub_topic.dead_letter.name
  role   = "roles/pubsub.publisher"
  member = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_subscription_iam_member" "agent_acks_dead_letters" {
  subscription = google_pubsub_subscription.cells_push.name
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

# ---------- service accounts ----------
resource "google_service_account" "dispatcher" {
  account_id   = "niah-dispatcher"
  display_name = "needle-service dispatcher"
}

resource "google_service_account" "worker" {
  account_id   = "niah-worker"
  display_name = "needle-service worker"
}

resource "google_service_account" "report" {
  account_id   = "niah-report"
  display_name = "needle-service report"
}

resource "google_service_account" "pusher" {
  account_id   = "niah-pusher"
  display_name = "Pub/Sub push identity for the event triggers"
}

# dispatcher: writes runs, publishes cells, lists haystacks.
resource "google_project_iam_member" "dispatcher_firestore" {
  project = var.project
  role    = "roles/datastore.user"
  member  = google_service_account.dispatcher.member
}

resource "google_pubsub_topic_iam_member" "dispatcher_publishes_cells" {
  topic  = google_pubsub_topic.cells.name
  role   = "roles/pubsub.publisher"
  member = google_service_account.dispatcher.member
}

resource "google_storage_bucket_iam_member" "dispatcher_reads_bucket" {
  bucket = google_storage_bucket.data.name
  role   = "roles/storage.objectViewer"
  member = google_service_account.dispatcher.member
}

# worker: reads haystacks, writes token caches and contexts, calls Vertex AI,
# writes cells, publishes report requests.
resource "google_project_iam_member" "worker_firestore" {
  project = var.project
  role    = "roles/datastore.user"
  member  = google_service_account.worker.member
}

resource "google_project_iam_member" "worker_vertex" {
  project = var.project
  role    = "roles/aiplatform.user"
  member  = google_service_account.worker.member
}

resource "google_storage_bucket_iam_member" "worker_objects" {
  bucket = google_storage_bucket.data.name
  role   = "roles/storage.objectUser"
  member = google_service_account.worker.member
}

resource "google_pubsub_topic_iam_member" "worker_publishes_reports" {
  topic  = google_pubsub_topic.reports.name
  role   = "roles/pubsub.publisher"
  member = google_service_account.worker.member
}

# report: reads cells, writes the run's report fields and the report objects.
resource "google_project_iam_member" "report_firestore" {
  project = var.project
  role    = "roles/datastore.user"
  member  = google_service_account.report.member
}

resource "google_storage_bucket_iam_member" "report_objects" {
  bucket = google_storage_bucket.data.name
  role   = "roles/storage.objectUser"
  member = google_service_account.report.member
}

# The users who start runs and read results; nothing is granted to the public.
resource "google_storage_bucket_iam_member" "invokers_read_reports" {
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

# ---------- functions ----------
resource "google_cloudfunctions2_function" "dispatcher" {
  name     = "niah-dispatcher"
  location = var.region
  build_config {
    runtime     = "python311"
    entry_point = "dispatch"
    source {
      storage_source {
        bucket = google_storage_bucket.data.name
        object = google_storage_bucket_object.source.name
      }
    }
    environment_variables = { GOOGLE_FUNCTION_SOURCE = "functions/dispatcher/main.py" }
  }
  service_config {
    available_memory      = "512M"
    timeout_seconds       = 60
    max_instance_count    = 5
    service_account_email = google_service_account.dispatcher.email
    ingress_settings      = "ALLOW_ALL"
    environment_variables = local.common_env
  }
}

resource "google_cloudfunctions2_function" "worker" {
  name     = "niah-worker"
  location = var.region
  build_config {
    runtime     = "python311"
    entry_point = "handle_cell"
    source {
      storage_source {
        bucket = google_storage_bucket.data.name
        object = google_storage_bucket_object.source.name
      }
    }
    environment_variables = { GOOGLE_FUNCTION_SOURCE = "functions/worker/main.py" }
  }
  service_config {
    # A 2M-token cell needs well under 512 MiB; 2 GiB leaves room for the tokenizer.
    available_memory                 = "2Gi"
    available_cpu                    = "1"
    timeout_seconds                  = 540
    max_instance_count               = var.worker_max_instances
    max_instance_request_concurrency = var.worker_concurrency
    service_account_email            = google_service_account.worker.email
    ingress_settings                 = "ALLOW_ALL" # Pub/Sub push comes from outside the VPC; IAM guards it
    environment_variables            = local.common_env
  }
  # Invoked by the niah-cells-push subscription (dead-letter policy, bounded backoff);
  # functions-framework turns the raw push body into a messagePublished CloudEvent.
}

resource "google_cloudfunctions2_function" "dead_letter" {
  name     = "niah-dead-letter"
  location = var.region
  build_config {
    runtime     = "python311"
    entry_point = "handle_dead_letter"
    source {
      storage_source {
        bucket = google_storage_bucket.data.name
        object = google_storage_bucket_object.source.name
      }
    }
    environment_variables = { GOOGLE_FUNCTION_SOURCE = "functions/worker/main.py" }
  }
  service_config {
    available_memory      = "512M"
    timeout_seconds       = 60
    max_instance_count    = 2
    service_account_email = google_service_account.worker.email
    ingress_settings      = "ALLOW_ALL"
    environment_variables = local.common_env
  }
}

resource "google_cloudfunctions2_function" "report" {
  name     = "niah-report"
  location = var.region
  build_config {
    runtime     = "python311"
    entry_point = "handle_report"
    source {
      storage_source {
        bucket = google_storage_bucket.data.name
        object = google_storage_bucket_object.source.name
      }
    }
    environment_variables = { GOOGLE_FUNCTION_SOURCE = "functions/report/main.py" }
  }
  service_config {
    available_memory      = "1Gi"
    timeout_seconds       = 300
    max_instance_count    = 2
    service_account_email = google_service_account.report.email
    ingress_settings      = "ALLOW_INTERNAL_ONLY"
    environment_variables = local.common_env
  }
  event_trigger {
    trigger_region        = var.region
    event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
    pubsub_topic          = google_pubsub_topic.reports.id
    retry_policy          = "RETRY_POLICY_RETRY"
    service_account_email = google_service_account.pusher.email
  }
}

# The sweep republishes the missing cells of stalled runs (a crashed worker's message
# that Pub/Sub stopped redelivering); Cloud Scheduler calls it every 10 minutes.
resource "google_cloudfunctions2_function" "sweep" {
  name     = "niah-sweep"
  location = var.region
  build_config {
    runtime     = "python311"
    entry_point = "sweep"
    source {
      storage_source {
        bucket = google_storage_bucket.data.name
        object = google_storage_bucket_object.source.name
      }
    }
    environment_variables = { GOOGLE_FUNCTION_SOURCE = "functions/dispatcher/main.py" }
  }
  service_config {
    available_memory      = "512M"
    timeout_seconds       = 300
    max_instance_count    = 1
    service_account_email = google_service_account.dispatcher.email
    environment_variables = merge(local.common_env, { NIAH_SWEEP_STALLED_AFTER_SECONDS = "7200" })
  }
}

resource "google_cloud_scheduler_job" "sweep" {
  name     = "niah-sweep"
  region   = var.region
  schedule = "*/10 * * * *"
  http_target {
    http_method = "POST"
    uri         = google_cloudfunctions2_function.sweep.service_config[0].uri
    oidc_token {
      service_account_email = google_service_account.pusher.email
    }
  }
}

resource "google_cloud_run_service_iam_member" "pusher_invokes_sweep" {
  location = var.region
  service  = google_cloudfunctions2_function.sweep.name
  role     = "roles/run.invoker"
  member   = google_service_account.pusher.member
}

# Only the push identity may invoke the event-driven functions; only the listed
# users may invoke the dispatcher.
resource "google_cloud_run_service_iam_member" "pusher_invokes_worker" {
  location = var.region
  service  = google_cloudfunctions2_function.worker.name
  role     = "roles/run.invoker"
  member   = google_service_account.pusher.member
}

resource "google_cloud_run_service_iam_member" "pusher_invokes_dead_letter" {
  location = var.region
  service  = google_cloudfunctions2_function.dead_letter.name
  role     = "roles/run.invoker"
  member   = google_service_account.pusher.member
}

resource "google_cloud_run_service_iam_member" "pusher_invokes_report" {
  location = var.region
  service  = google_cloudfunctions2_function.report.name
  role     = "roles/run.invoker"
  member   = google_service_account.pusher.member
}

resource "google_cloud_run_service_iam_member" "users_invoke_dispatcher" {
  for_each = toset(var.run_invokers)
  location = var.region
  service  = google_cloudfunctions2_function.dispatcher.name
  role     = "roles/run.invoker"
  member   = each.value
}
