# ---------- sentinels: small runs on a schedule that watch a model for change ----------
# Each entry of var.sentinels is a Firestore document, sentinels/NAME, holding the run
# request, and a Cloud Scheduler job that POSTs {"sentinel": NAME} to the dispatcher's
# /sentinel route as niah-pusher. The dispatcher reads the document, starts the run and
# names it by the sentinel and the firing's due time (Scheduler's
# X-CloudScheduler-ScheduleTime header: niah.service.sentinel.firing), so a retried
# firing is the same run, not a second one paid for. When the run's report is done,
# the report function publishes to niah-alerts with the attributes sentinel, run_id and
# flagged ("true" when the run found the model changed, else "false"). Nothing here
# subscribes: a user adds a subscription of their own (a push to chat, a pull, an
# e-mail bridge), with the filter attributes.flagged = "true" to hear only of changes
# (docs/deploy.md, "Sentinels").

resource "google_pubsub_topic" "alerts" {
  #checkov:skip=CKV_GCP_83:Messages are encrypted at rest with Google-managed keys; a customer-managed key needs a Cloud KMS key ring for sentinel names, run IDs and a flag that are not secret.
  name       = "niah-alerts"
  depends_on = [time_sleep.apis]
}

# Terraform owns these documents: the dispatcher only reads them (a field it wrote would
# be put back on the next apply). The request stays the JSON text it was given, which
# the dispatcher validates as it validates a POSTed run request.
resource "google_firestore_document" "sentinel" {
  for_each    = var.sentinels
  database    = google_firestore_database.default.name
  collection  = "sentinels"
  document_id = each.key
  # Firestore's typed JSON (the REST API's Document.fields): four strings. baseline_run
  # pins the run each firing is weighed against ("": its first runs; docs/sentinels.md).
  fields = jsonencode(
    {
      request      = { stringValue = each.value.request }
      schedule     = { stringValue = each.value.schedule }
      time_zone    = { stringValue = each.value.time_zone }
      baseline_run = { stringValue = each.value.baseline_run }
    }
  )
}

resource "google_cloud_scheduler_job" "sentinel" {
  for_each  = var.sentinels
  name      = "niah-sentinel-${each.key}"
  region    = var.region
  schedule  = each.value.schedule
  time_zone = each.value.time_zone
  # Past the dispatcher's 120 s timeout (functions.tf), as the sweep's deadline is past
  # the sweep's: Scheduler never gives up on a call the dispatcher is still serving. The
  # run itself goes on after the call returns (its cells over Pub/Sub).
  attempt_deadline = "320s"

  http_target {
    http_method = "POST"
    uri         = "${google_cloudfunctions2_function.dispatcher.service_config[0].uri}/sentinel"
    body        = base64encode(jsonencode({ sentinel = each.key }))
    # Scheduler sends a body as application/octet-stream unless told otherwise, and the
    # dispatcher takes application/json alone.
    headers = {
      "Content-Type" = "application/json"
    }
    oidc_token {
      service_account_email = google_service_account.pusher.email
      # Cloud Run takes the service's root URL as the audience, not a path on it
      # (Scheduler's default is the whole target URI).
      audience = google_cloudfunctions2_function.dispatcher.service_config[0].uri
    }
  }

  # A failed firing (a cold start that timed out, a 5xx) is tried again, with
  # Scheduler's backoff; a retry is due at the same time as the firing, so it names (and
  # resumes) the same run.
  retry_config {
    retry_count = 3
  }

  # Calls as niah-pusher only once it may invoke the dispatcher (budget.tf, and the wait
  # after it, iam.tf), and only once its sentinel's document is there to read.
  depends_on = [time_sleep.pusher_invokes, google_firestore_document.sentinel]
}
