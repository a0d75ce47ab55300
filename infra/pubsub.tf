# ---------- Pub/Sub ----------
# Every function is invoked by a push subscription of our own (Google's recommended
# "direct Pub/Sub trigger", cloud.google.com/run/docs/triggering/pubsub-triggers, read
# 2026-11-26) rather than an Eventarc trigger: the subscription carries the retry
# backoff and the dead-letter policy, and no Eventarc agent needs roles.
resource "google_pubsub_topic" "cells" {
  #checkov:skip=CKV_GCP_83:Messages are encrypted at rest with Google-managed keys; a customer-managed key needs a Cloud KMS key ring, billed per key version, for cell coordinates that are not secret.
  name       = "niah-cells"
  depends_on = [time_sleep.apis]
}

resource "google_pubsub_topic" "reports" {
  #checkov:skip=CKV_GCP_83:Messages are encrypted at rest with Google-managed keys; a customer-managed key needs a Cloud KMS key ring for run IDs that are not secret.
  name       = "niah-reports"
  depends_on = [time_sleep.apis]
}

resource "google_pubsub_topic" "dead_letter" {
  #checkov:skip=CKV_GCP_83:Messages are encrypted at rest with Google-managed keys; a customer-managed key needs a Cloud KMS key ring for cell coordinates that are not secret.
  name       = "niah-dead-letter"
  depends_on = [time_sleep.apis]
}

# Dead letters are also kept for a week, to look at by hand.
resource "google_pubsub_subscription" "dead_letter_hold" {
  name                       = "niah-dead-letter-hold"
  topic                      = google_pubsub_topic.dead_letter.id
  message_retention_duration = "604800s"

  # A subscription idle for 31 days is deleted unless told otherwise: never.
  expiration_policy {
    ttl = ""
  }
}

# Cells: bounded backoff, then the dead-letter topic after 5 deliveries.
resource "google_pubsub_subscription" "cells_push" {
  name                 = "niah-cells-push"
  topic                = google_pubsub_topic.cells.id
  ack_deadline_seconds = 600

  push_config {
    push_endpoint = google_cloudfunctions2_function.internal["worker"].service_config[0].uri
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

  # A subscription idle for 31 days is deleted unless told otherwise: never.
  expiration_policy {
    ttl = ""
  }

  # Pushes as niah-pusher only once it may invoke the worker (iam.tf).
  depends_on = [time_sleep.pusher_invokes]
}

# Report requests: retried with backoff, then the dead-letter topic after 5 deliveries,
# whose handler records the report's failure on the run (the store or the bucket out
# of reach all along, or a renderer that dies). A report that cannot be drawn from its
# data is recorded and acknowledged by the report function at once.
resource "google_pubsub_subscription" "reports_push" {
  name                 = "niah-reports-push"
  topic                = google_pubsub_topic.reports.id
  ack_deadline_seconds = 300

  push_config {
    push_endpoint = google_cloudfunctions2_function.internal["report"].service_config[0].uri
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

  # A subscription idle for 31 days is deleted unless told otherwise: never.
  expiration_policy {
    ttl = ""
  }

  # Pushes as niah-pusher only once it may invoke the report function (iam.tf).
  depends_on = [time_sleep.pusher_invokes]
}

# It was one of the pushes below, before it had a dead-letter policy: the same
# subscription, not a new one.
moved {
  from = google_pubsub_subscription.push["report"]
  to   = google_pubsub_subscription.reports_push
}

# The dead-letter handler's subscription: retried with backoff, never dead-lettered
# (onto its own topic).
locals {
  pushes = {
    dead_letter = { name = "niah-dead-letter-push", topic = "dead_letter", ack_deadline = 60 }
  }
  topic_ids = {
    dead_letter = google_pubsub_topic.dead_letter.id
  }
}

resource "google_pubsub_subscription" "push" {
  for_each             = local.pushes
  name                 = each.value.name
  topic                = local.topic_ids[each.value.topic]
  ack_deadline_seconds = each.value.ack_deadline

  push_config {
    push_endpoint = google_cloudfunctions2_function.internal[each.key].service_config[0].uri
    oidc_token {
      service_account_email = google_service_account.pusher.email
    }
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }

  # A subscription idle for 31 days is deleted unless told otherwise: never.
  expiration_policy {
    ttl = ""
  }

  # Pushes as niah-pusher only once it may invoke the function (iam.tf).
  depends_on = [time_sleep.pusher_invokes]
}

# Pub/Sub's own agent forwards dead letters and acknowledges the originals.
resource "google_pubsub_topic_iam_member" "agent_publishes_dead_letters" {
  topic  = google_pubsub_topic.dead_letter.name
  role   = "roles/pubsub.publisher"
  member = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "agent_acks_dead_letters" {
  subscription = google_pubsub_subscription.cells_push.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "agent_acks_dead_reports" {
  subscription = google_pubsub_subscription.reports_push.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}

# The agent mints the push identity's OIDC tokens (needed in projects made before
# 8 April 2021; harmless after).
resource "google_service_account_iam_member" "agent_mints_push_tokens" {
  service_account_id = google_service_account.pusher.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_agent
  # After Pub/Sub's first use (a topic), as the other two are, so the agent has had
  # every chance to exist (main.tf, local.pubsub_agent).
  depends_on = [google_pubsub_topic.cells]
}
