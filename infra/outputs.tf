output "dispatcher_url" {
  description = "POST run requests here with an identity token (niah run --url ...)."
  value       = google_cloudfunctions2_function.dispatcher.service_config[0].uri
}

output "bucket" {
  value = google_storage_bucket.data.name
}

output "cells_subscription" {
  description = "The worker's push subscription, with its dead-letter policy."
  value       = google_pubsub_subscription.cells_push.name
}
