# ---------- functions (Cloud Run functions, 2nd gen) ----------
# Three sources (scripts/package_functions.sh): the dispatcher's serves the dispatcher
# and the sweep, the worker's the worker and the dead-letter handler. Each of the five
# functions runs as its own service account; only the dispatcher accepts traffic from
# outside Google's network, and only from callers with the invoker role. Every entry of
# internal_functions has the same attributes of the same types, so for_each takes it.

resource "google_cloudfunctions2_function" "dispatcher" {
  #checkov:skip=CKV_GCP_124:Users start runs from their own machines or Cloud Shell over HTTPS (scripts/start_run.sh, niah run --url), which ingress "internal" would refuse; the function takes no unauthenticated call (only run_invokers hold roles/run.invoker).
  name     = "niah-dispatcher"
  location = var.region

  build_config {
    runtime         = "python311"
    entry_point     = "dispatch"
    service_account = google_service_account.build.id
    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.source["dispatcher"].name
      }
    }
  }

  service_config {
    available_memory = "512M"
    # Past the publish timeout (NIAH_PUBLISH_TIMEOUT_SECONDS, 60 s), so a slow publish
    # ends in the dispatcher's own 503 naming it, not in the platform's cut-off.
    timeout_seconds       = 120
    max_instance_count    = 5
    service_account_email = google_service_account.runs["dispatcher"].email
    ingress_settings      = "ALLOW_ALL"
    environment_variables = merge(local.common_env, local.limits_env, local.openai_env)
  }

  # Built as niah-build once its roles have had time to take effect (iam.tf).
  depends_on = [time_sleep.build_roles]
}

# The functions Pub/Sub push and Cloud Scheduler call. Those callers in the same
# project count as internal traffic for Cloud Run ingress
# (cloud.google.com/run/docs/securing/ingress, read 2026-11-26), so these take no
# traffic from outside Google's network at all.
locals {
  internal_functions = {
    # One cell per request: builds the prompt, calls the model, stores the result. A
    # 2M-token cell needs well under 512 MiB; 2 GiB leaves room for concurrent cells
    # (and for Gemma 3 270M where the deployment carries it).
    worker = {
      name          = "niah-worker"
      entry_point   = "handle_cell"
      source        = "worker"
      memory        = "2Gi"
      cpu           = "1"
      timeout       = 540
      max_instances = var.worker_max_instances
      concurrency   = var.worker_concurrency
    }
    # Records the cells whose messages were dead-lettered as failed, so runs finish.
    dead_letter = {
      name          = "niah-dead-letter"
      entry_point   = "handle_dead_letter"
      source        = "worker"
      memory        = "512M"
      cpu           = null
      timeout       = 60
      max_instances = 2
      concurrency   = 1
    }
    # Renders a finished run's heatmap and summary.
    report = {
      name          = "niah-report"
      entry_point   = "handle_report"
      source        = "report"
      memory        = "1Gi"
      cpu           = null
      timeout       = 300
      max_instances = 2
      concurrency   = 1
    }
    # Republishes the missing cells of stalled runs (a crashed worker's message that
    # Pub/Sub stopped redelivering); Cloud Scheduler calls it every minute. A run is
    # quiet after NIAH_SWEEP_QUIET_AFTER_SECONDS (30 s) with nothing leased anywhere, and
    # stalled (the last resort) after NIAH_SWEEP_STALLED_AFTER_SECONDS, 2 hours.
    sweep = {
      name          = "niah-sweep"
      entry_point   = "sweep"
      source        = "dispatcher"
      memory        = "512M"
      cpu           = null
      timeout       = 300
      max_instances = 1
      concurrency   = 1
    }
  }
}

resource "google_cloudfunctions2_function" "internal" {
  for_each = local.internal_functions
  name     = each.value.name
  location = var.region

  build_config {
    runtime         = "python311"
    entry_point     = each.value.entry_point
    service_account = google_service_account.build.id
    source {
      storage_source {
        bucket = google_storage_bucket.sources.name
        object = google_storage_bucket_object.source[each.value.source].name
      }
    }
  }

  service_config {
    available_memory                 = each.value.memory
    available_cpu                    = each.value.cpu
    timeout_seconds                  = each.value.timeout
    max_instance_count               = each.value.max_instances
    max_instance_request_concurrency = each.value.concurrency
    service_account_email            = google_service_account.runs[each.key].email
    ingress_settings                 = "ALLOW_INTERNAL_ONLY"
    environment_variables            = merge(local.common_env, local.openai_env)

    # The worker alone reads the OpenAI-compatible endpoint's key, from Secret Manager
    # (secrets.tf), once a version of it is named: never a plain environment variable.
    dynamic "secret_environment_variables" {
      for_each = each.key == "worker" && var.openai_api_key_version != "" ? google_secret_manager_secret.openai_api_key : []
      content {
        key        = "NIAH_OPENAI_API_KEY"
        project_id = var.project
        secret     = secret_environment_variables.value.secret_id
        version    = var.openai_api_key_version
      }
    }
  }

  # Built as niah-build once its roles have had time to take effect (iam.tf); the worker
  # may read its secret before its new revision starts.
  depends_on = [time_sleep.build_roles, google_secret_manager_secret_iam_member.worker_reads_openai_key]
}

resource "google_cloud_scheduler_job" "sweep" {
  name   = "niah-sweep"
  region = var.region
  # Every minute (Scheduler's finest): a cell whose worker died (its lease lapsed), or a
  # run whose messages were lost with it (nothing leased, no progress for
  # NIAH_SWEEP_QUIET_AFTER_SECONDS), is published again within about 90 s of the death
  # even where Pub/Sub's redelivery is slower (docs/reliability.md, "Recovery times").
  # Idle, a pass reads one document: 1,440 reads a day, inside Firestore's free 50,000.
  schedule = "* * * * *"
  # The sweep may run 300 s; Scheduler's default deadline for HTTP targets is 180 s.
  attempt_deadline = "320s"

  http_target {
    http_method = "POST"
    uri         = google_cloudfunctions2_function.internal["sweep"].service_config[0].uri
    oidc_token {
      service_account_email = google_service_account.pusher.email
    }
  }

  depends_on = [time_sleep.pusher_invokes]
}
