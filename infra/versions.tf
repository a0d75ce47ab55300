# Terraform and provider versions this configuration is written for.
# Sources (read 2026-11-26): releases.hashicorp.com/terraform-provider-google and the
# conda-forge terraform-provider-google file list show 7.x releases up to 7.46.0 and a
# new major version, 8.0.0, whose breaking changes this configuration was not checked
# against; so the provider is held to 7.x. The newest 7.x is 7.46.1 (cdktn-provider-google
# 20.3.1's package.json, cdktn.provider.version, read 2026-11-26), the schema the offline
# check validates and plans against (tests/deploy/test_terraform_offline.py).
# hashicorp/google-beta gives google_project_service_identity alone (the Vertex AI service
# agent, created before it is granted roles: iam.tf); held to the same 7.x, newest 7.46.1
# (cdktn-provider-google-beta 20.3.1's package.json, read 2026-11-27).
# hashicorp/time gives time_sleep, the waits for IAM grants to take effect; its newest
# release is 0.14.2 (cdktn-provider-time 14.0.2's package.json, read 2026-11-26).
terraform {
  required_version = ">= 1.5.0, < 2.0.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 7.0"
    }
    google-beta = {
      source  = "hashicorp/google-beta"
      version = "~> 7.0"
    }
    time = {
      source  = "hashicorp/time"
      version = "~> 0.14"
    }
  }

  # State is local by default (terraform.tfstate beside this file): keep it, it is the
  # only record of what was created. To share it, create a bucket for state (not the
  # service's bucket) and uncomment this block, then run `terraform init -migrate-state`.
  # backend "gcs" {
  #   bucket = "MY_PROJECT-tfstate"
  #   prefix = "needle-service"
  # }
}
