output "dispatcher_url" {
  description = "POST run requests here with an identity token (niah run --url ...)."
  value       = google_cloudfunctions2_function.dispatcher.service_config[0].uri
}

output "bucket" {
  value = google_storage_bucket.data.name
}

output "worker_subscription_note" {
  description = "Eventarc creates the worker's push subscription; scripts/deploy.sh adds the dead-letter policy and backoff to it."
  value       = "run scripts/deploy.sh --post-terraform to attach the dead-letter topic"
}
