variable "project" {
  description = "Google Cloud project ID."
  type        = string
}

variable "region" {
  description = "Region of the functions, bucket, Firestore database and scheduler job."
  type        = string
  default     = "us-central1"
}

variable "bucket" {
  description = "Bucket for haystacks, token caches, the tokenizer model, function sources and reports (created here; globally unique)."
  type        = string
}

variable "vertex_location" {
  description = "Vertex AI location for Gemini calls (a region, or \"global\")."
  type        = string
  default     = "global"
}

variable "default_model" {
  description = "The model a run request that names none is run on."
  type        = string
  default     = "gemini-3.8-flash"
}

variable "local_model" {
  description = "Whether the worker carries Gemma 3 270M and llama.cpp (build the sources with scripts/package_functions.sh --local-model, as deploy.sh LOCAL_MODEL=1 does)."
  type        = bool
  default     = false
}

variable "worker_max_instances" {
  description = "Worker instances at most: with worker_concurrency, the one knob for parallel model calls (keep it within your Vertex AI quota)."
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

variable "sources_dir" {
  description = "Folder of the per-function zips built by scripts/package_functions.sh (dispatcher.zip, worker.zip, report.zip)."
  type        = string
  default     = "../build/functions"
}

variable "tokenizer_model" {
  description = "The Gemma 3 SentencePiece model file deploy.sh builds (build/tokenizers/gemma3.model); uploaded under its checksum."
  type        = string
  default     = "../build/tokenizers/gemma3.model"
}

variable "haystacks_dir" {
  description = "Folder of haystack folders uploaded under haystacks/ (deploy.sh puts the default, paul_graham_essays, there)."
  type        = string
  default     = "../build/haystacks"
}

variable "billing_account" {
  description = "Cloud Billing account ID (XXXXXX-XXXXXX-XXXXXX) for the budget whose alerts trip the kill switch (budget.tf, docs/limits.md); null: no budget, no kill switch from billing."
  type        = string
  default     = null
}

variable "budget_amount_usd" {
  description = "The monthly budget on this project in USD; the kill switch trips when its actual cost reaches it."
  type        = number
  default     = 3000
}

variable "operators" {
  description = "E-mail addresses that may cancel, resume or relabel any run (NIAH_OPERATORS); a run's creator always may."
  type        = list(string)
  default     = []
}

variable "spend_ceilings_usd" {
  description = "Overrides of the dispatcher's spend ceilings in USD: keys daily, monthly, caller_daily (0 turns one off); unset keys keep the defaults of shared/niah/settings.py."
  type        = map(number)
  default     = {}

  validation {
    condition     = alltrue([for key, usd in var.spend_ceilings_usd : contains(["daily", "monthly", "caller_daily"], key) && usd >= 0])
    error_message = "spend_ceilings_usd takes the keys daily, monthly and caller_daily, each 0 or more."
  }
}
