output "dispatcher_url" {
  description = "POST run requests here with an identity token (scripts/start_run.sh, niah run --url)."
  value       = google_cloudfunctions2_function.dispatcher.service_config[0].uri
}

output "bucket" {
  description = "The service's bucket: haystacks under haystacks/NAME/, reports under reports/RUN_ID/."
  value       = google_storage_bucket.data.name
}

output "report_prefix" {
  description = "Each run's heatmap.png and summary.json are under this prefix, in a folder named by the run ID."
  value       = "gs://${google_storage_bucket.data.name}/reports/"
}

output "cells_subscription" {
  description = "The worker's push subscription, with its dead-letter policy."
  value       = google_pubsub_subscription.cells_push.name
}

output "tokenizer_object" {
  description = "The tokenizer model the worker reads (content-addressed)."
  value       = "gs://${google_storage_bucket.data.name}/${google_storage_bucket_object.tokenizer.name}"
}

output "alerts_topic" {
  description = "Each sentinel run's alert is published here, with the attributes sentinel, run_id and flagged (\"true\" or \"false\"); subscribe with the filter attributes.flagged = \"true\" to receive only the runs that found a change (docs/deploy.md, \"Sentinels\")."
  value       = google_pubsub_topic.alerts.name
}
