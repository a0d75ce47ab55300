variable "project" {
  description = "Google Cloud project ID."
  type        = string
}

variable "region" {
  description = "Region of the functions, bucket and topics."
  type        = string
  default     = "us-central1"
}

variable "vertex_location" {
  description = "Vertex AI location for Gemini calls (a region, or \"global\")."
  type        = string
  default     = "global"
}

variable "bucket" {
  description = "Bucket for haystacks, token caches, contexts and reports (created here)."
  type        = string
}

variable "source_archive" {
  description = "Path of the zip built by scripts/package_functions.sh (the functions plus shared/niah)."
  type        = string
  default     = "../build/functions.zip"
}

variable "worker_max_instances" {
  description = "Worker instances at most: with worker_concurrency, the one knob for parallel model calls."
  type        = number
  default     = 10
}

variable "worker_concurrency" {
  description = "Requests one worker instance serves at once."
  type        = number
  default     = 4
}

variable "run_invokers" {
  description = "Members allowed to start runs and read results, e.g. [\"user:you@example.com\"]."
  type        = list(string)
  default     = []
}
