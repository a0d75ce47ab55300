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
  description = "Bucket for haystacks, token caches, the tokenizer model, batch files and reports (created here; globally unique). The function sources go to a second bucket, BUCKET-sources."
  type        = string
  # Google's bucket names are 3-63 characters; BUCKET-sources must fit too.
  validation {
    condition     = length(var.bucket) <= 55
    error_message = "bucket must be at most 55 characters, so that the sources bucket \"BUCKET-sources\" is a valid name (63 at most)."
  }
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
  # Each member is granted the dispatcher's invoker role and read access to the bucket
  # and Firestore: allUsers or allAuthenticatedUsers would open all three to anyone. So
  # only named principals pass, as scripts/deploy.sh checks INVOKER, for a direct
  # `terraform apply` too.
  validation {
    condition     = alltrue([for member in var.run_invokers : can(regex("^(user|group|serviceAccount|domain):[A-Za-z0-9@._-]+$", member))])
    error_message = "Each run_invokers member must be user:, group:, serviceAccount: or domain: followed by an address or domain; allUsers and allAuthenticatedUsers are refused, since they would make the dispatcher public and the bucket and Firestore readable to anyone."
  }
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

variable "budget_amount" {
  description = "The monthly budget on this project, in the billing account's currency (budget_currency_code); the kill switch trips when its actual cost reaches it. Fractions are kept (cents as the budget's nanos)."
  type        = number
  default     = 3000
  validation {
    condition     = var.budget_amount > 0
    error_message = "budget_amount must be above 0 (a budget of nothing would trip the kill switch at once)."
  }
}

variable "budget_currency_code" {
  description = "The budget's ISO 4217 currency (EUR, JPY...). Google: if given it \"must match the currency of the billing account\"; null (the default) sends none, and Google takes the account's own."
  type        = string
  default     = null
  validation {
    condition     = var.budget_currency_code == null || can(regex("^[A-Z]{3}$", var.budget_currency_code))
    error_message = "budget_currency_code is three capital letters (ISO 4217: USD, EUR, JPY), or null for the billing account's own currency."
  }
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

variable "openai_base_url" {
  description = "An OpenAI-compatible endpoint for --model_provider openai_compatible (https://.../v1); empty for none. Setting it makes the Secret Manager secret niah-openai-api-key for its key (docs/deploy.md)."
  type        = string
  default     = ""
  validation {
    condition     = var.openai_base_url == "" || startswith(var.openai_base_url, "https://")
    error_message = "openai_base_url must start with https://: the worker sends the API key to it."
  }
}

variable "openai_api_key_version" {
  description = "The version of the niah-openai-api-key secret the worker reads as NIAH_OPENAI_API_KEY (\"1\", ...; add it with gcloud, docs/deploy.md); empty until there is one."
  type        = string
  default     = ""
  validation {
    condition     = var.openai_api_key_version == "" || can(regex("^[1-9][0-9]*$", var.openai_api_key_version))
    error_message = "openai_api_key_version is a version number such as \"1\" (pinned, so a new key is a deliberate apply), or empty."
  }
}

variable "sentinels" {
  description = "Sentinels: small runs on a schedule that watch a model for change (sentinels.tf). The key is the sentinel's name; schedule is unix-cron as Cloud Scheduler reads it, in time_zone (a tz database name, default Etc/UTC); request is the run request as JSON text, the body a user POSTs to the dispatcher; baseline_run (optional) pins the run each firing is weighed against, else its first runs are (docs/sentinels.md). Each sentinel run's report is published to niah-alerts (output alerts_topic) with the attributes sentinel, run_id and flagged (\"true\" or \"false\"): subscribe with the filter attributes.flagged = \"true\" to receive only the runs that changed. {} (the default): none."
  type        = map(object({ schedule = string, time_zone = optional(string, "Etc/UTC"), request = string, baseline_run = optional(string, "") }))
  default     = {}

  # The name becomes the Scheduler job niah-sentinel-NAME (job names take letters,
  # digits, hyphens and underscores) and the Firestore document sentinels/NAME.
  validation {
    condition     = alltrue([for name in keys(var.sentinels) : can(regex("^[a-z][a-z0-9-]{0,39}$", name))])
    error_message = "Each sentinels name (the map's key) must start with a lower-case letter and hold only lower-case letters, digits and hyphens, 40 characters at most (such as \"flash-daily\"); rename: ${join(", ", [for name in keys(var.sentinels) : jsonencode(name) if !can(regex("^[a-z][a-z0-9-]{0,39}$", name))])}."
  }
  # Checked here so a typo stops the plan, not a firing at 3 a.m.; what the request asks
  # (its model, lengths, depths) the dispatcher checks when the sentinel fires.
  validation {
    condition     = alltrue([for sentinel in values(var.sentinels) : can(keys(jsondecode(sentinel.request)))])
    error_message = "Each sentinel's request must be a JSON object, the body a run is started with (such as {\"model_name\": \"gemini-3.8-flash\", \"context_lengths\": [1000, 8000]}); not one: ${join(", ", [for name, sentinel in var.sentinels : name if !can(keys(jsondecode(sentinel.request)))])}."
  }
  # The dispatcher sets these two on a sentinel's run (its name, and the firing's time
  # that names the run): a request may not set them itself.
  validation {
    condition     = alltrue([for sentinel in values(var.sentinels) : length(setintersection(try(keys(jsondecode(sentinel.request)), []), ["sentinel", "scheduled_at"])) == 0])
    error_message = "A sentinel's request may not set \"sentinel\" or \"scheduled_at\": the dispatcher sets them when the sentinel fires. Remove them from: ${join(", ", [for name, sentinel in var.sentinels : name if length(setintersection(try(keys(jsondecode(sentinel.request)), []), ["sentinel", "scheduled_at"])) > 0])}."
  }
}
