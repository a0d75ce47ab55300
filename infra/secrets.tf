# ---------- Secret Manager: the OpenAI-compatible endpoint's key ----------
# Made only where an endpoint is deployed (var.openai_base_url). Terraform makes the
# secret, its name and who may read it, never its value: the key is a version added with
# gcloud (docs/deploy.md, "An OpenAI-compatible endpoint"), so it is in no Terraform
# file, variable, plan or state. The worker reads the version var.openai_api_key_version
# names as NIAH_OPENAI_API_KEY (functions.tf); a pinned version, so a new key reaches the
# worker by a deliberate apply, not at the next cold start.
resource "google_secret_manager_secret" "openai_api_key" {
  # Google-managed encryption at rest: a customer-managed key needs a Cloud KMS key ring,
  # billed per key version, for one API key that IAM and audit logs already guard.
  count     = var.openai_base_url == "" ? 0 : 1
  secret_id = "niah-openai-api-key"

  replication {
    auto {}
  }

  depends_on = [time_sleep.apis]
}

# The worker, and no other account of ours, may read the key.
resource "google_secret_manager_secret_iam_member" "worker_reads_openai_key" {
  count     = length(google_secret_manager_secret.openai_api_key)
  secret_id = google_secret_manager_secret.openai_api_key[0].id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runs["worker"].member
}
