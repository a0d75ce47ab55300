# ---------- the spend kill switch (docs/limits.md) ----------
# A Cloud Billing budget on this project whose every update goes to a Pub/Sub topic;
# a push subscription hands each to the dispatcher's /budget-alert route (as niah-pusher,
# whose ID token the route requires: NIAH_BUDGET_ALERT_PUSHER), which sets the kill
# switch (Firestore control/kill_switch) once costAmount reaches the budget. Nothing of
# it is made unless billing_account is set.
#
# Budget updates are sent to the topic several times a day whatever the thresholds
# (cloud.google.com/billing/docs/how-to/budgets-programmatic-notifications, read
# 2026-11-27). The Budget API grants Cloud Billing's publisher on the topic itself; the
# caller needs pubsub.topics.setIamPolicy on it (the deployer owns the project) and a
# billing role on the account (Billing Account Costs Manager or Administrator).

locals {
  # One of each, or none (the budget's API is enabled with the others, main.tf: enabling
  # it costs nothing).
  budget_alerts = var.billing_account == null ? 0 : 1
}

resource "google_pubsub_topic" "budget_alerts" {
  #checkov:skip=CKV_GCP_83:Messages are encrypted at rest with Google-managed keys; a customer-managed key needs a Cloud KMS key ring for budget figures the billing account's users already see.
  count      = local.budget_alerts
  name       = "niah-budget-alerts"
  depends_on = [time_sleep.apis]
}

resource "google_billing_budget" "kill_switch" {
  count           = local.budget_alerts
  billing_account = var.billing_account
  display_name    = "niah ${var.project}"

  budget_filter {
    projects        = ["projects/${data.google_project.this.number}"]
    calendar_period = "MONTH"
  }

  # google.type.Money: whole units (an int64 as a string) and nanos. currency_code "is
  # optional. If specified when creating a budget, it must match the currency of the
  # billing account" (BudgetAmount.specified_amount, Cloud Billing Budget API v1 reference,
  # read 2026-12-04): left out unless the deployer names it. The kill switch compares
  # costAmount with budgetAmount, both in the budget's currency, so any currency works.
  amount {
    specified_amount {
      currency_code = var.budget_currency_code
      units         = tostring(floor(var.budget_amount))
      nanos         = floor((var.budget_amount - floor(var.budget_amount)) * 1000000000 + 0.5)
    }
  }

  # E-mails to the billing account's administrators at half and all of the budget; the
  # kill switch itself goes by the topic's updates (alertThresholdExceeded is only set
  # once a threshold rule is passed).
  threshold_rules {
    threshold_percent = 0.5
  }
  threshold_rules {
    threshold_percent = 1.0
  }

  all_updates_rule {
    pubsub_topic   = google_pubsub_topic.budget_alerts[0].id
    schema_version = "1.0"
  }

  depends_on = [time_sleep.apis]
}

# niah-pusher may invoke the dispatcher for two routes' sake: /budget-alert, here (the
# route refuses any other caller but an operator), and /sentinel, which the sentinels'
# Scheduler jobs call (sentinels.tf). One grant, made when either is on, under the
# address it had when budget alerts were its only reason.
resource "google_cloud_run_service_iam_member" "pusher_invokes_dispatcher" {
  count    = local.budget_alerts == 1 || length(var.sentinels) > 0 ? 1 : 0
  location = var.region
  service  = google_cloudfunctions2_function.dispatcher.name
  role     = "roles/run.invoker"
  member   = google_service_account.pusher.member
}

resource "google_pubsub_subscription" "budget_alerts_push" {
  count                = local.budget_alerts
  name                 = "niah-budget-alerts-push"
  topic                = google_pubsub_topic.budget_alerts[0].id
  ack_deadline_seconds = 60

  push_config {
    push_endpoint = "${google_cloudfunctions2_function.dispatcher.service_config[0].uri}/budget-alert"
    oidc_token {
      service_account_email = google_service_account.pusher.email
      # Cloud Run takes the service's root URL as the audience, not a path on it.
      audience = google_cloudfunctions2_function.dispatcher.service_config[0].uri
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

  # Pushes as niah-pusher only once it may invoke the dispatcher (and after the wait
  # for the other invoker grants, iam.tf); a push refused meanwhile is retried.
  depends_on = [
    google_cloud_run_service_iam_member.pusher_invokes_dispatcher,
    time_sleep.pusher_invokes,
  ]
}
