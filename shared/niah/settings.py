"""The one place configuration is read from the environment.

Every setting has the prefix ``NIAH_`` (for example ``NIAH_BUCKET``); the project also
falls back to ``GOOGLE_CLOUD_PROJECT``, which the Google client libraries and Cloud
Functions already set. Nothing else in the code calls ``os.getenv``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# Google's caps on one Gemini batch job (see ``Settings.batch_max_lines``).
BATCH_MAX_REQUESTS = 200_000
BATCH_MAX_INPUT_BYTES = 1_000_000_000

# Hosts an OpenAI-compatible endpoint may be reached on over plain http: this machine
# (the local stand-in), where the key never crosses a network.
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def https_or_loopback(url: str | None) -> str | None:
    """The endpoint's URL, refused unless https or http on this machine.

    The API key goes to it as a bearer header: over plain http to another host, anyone
    on the way reads it.
    """
    if not url:
        return url
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and (parts.hostname or "").lower() in LOOPBACK_HOSTS:
        return url
    raise ValueError(
        f"NIAH_OPENAI_BASE_URL must be an https:// URL (http:// only for localhost or "
        f"127.0.0.1, the local stand-in): got {url!r}, which would send the API key in "
        "the clear"
    )


class Settings(BaseSettings):
    """Service configuration, read once per process."""

    model_config = SettingsConfigDict(env_prefix="NIAH_", extra="ignore")

    project: str = Field(
        default="niah-local",
        validation_alias=AliasChoices("NIAH_PROJECT", "GOOGLE_CLOUD_PROJECT"),
    )
    bucket: str = "niah-local"
    cells_topic: str = "niah-cells"
    reports_topic: str = "niah-reports"
    # Sentinels' checks (niah.service.sentinels), for users to wire to mail or chat.
    alerts_topic: str = "niah-alerts"
    dead_letter_topic: str = "niah-dead-letter"
    haystacks_prefix: str = "haystacks/"
    # Where MRCR v2's published CSV files are copied (docs/tasks/mrcr.md): a run's
    # mrcr_source must be under it, as its haystack_dir must be under haystacks_prefix,
    # so a run never reads the bucket's other prefixes (saved prompts, reports, batches).
    mrcr_sources_prefix: str = "mrcr_v2/"
    default_haystack: str = "paul_graham_essays"
    reports_prefix: str = "reports/"
    contexts_prefix: str = "contexts/"
    # Paid answers the store could not take, kept for the next delivery to store.
    kept_answers_prefix: str = "kept-answers/"
    # Batch runs' input and output JSONL (batches/RUN_ID/input-000.jsonl, output-000/).
    batches_prefix: str = "batches/"
    cache_dir: Path = Path.home() / ".cache" / "niah"

    # Budgets that protect a user's bill; override per deployment.
    max_cells_per_run: int = 500
    max_tokens_per_run: int = 200_000_000
    # The most bytes a haystack or an MRCR source may list. The dispatcher streams every
    # byte of an MRCR source within its 120 s request, and a worker tokenizes the whole
    # haystack in its 2 GiB; the longest context any model takes (2M tokens) is ~8 MB of
    # text, and a 1M-token MRCR row ~4 MB, so 512 MiB holds ~120 such rows: generous for
    # any real run, and it stops a prefix of gigabytes before anything is read.
    max_source_bytes: int = Field(default=512 * 1024 * 1024, ge=1)

    # Spend ceilings in USD, checked at dispatch against each new run's worst case plus
    # what runs admitted in the same UTC day (month) hold (niah.service.admission;
    # docs/limits.md). $300 a day admits one 10-length x 10-depth sweep to 1M tokens on
    # gemini-3.8-flash ($219 at worst with every retry; about $44 if each call succeeds
    # at once) or to 128K on gemini-3.1-pro-preview ($262), and refuses the review's
    # 200-cell 1M-token Pro grid ($1,036 without retries). $3,000 a month is ten such
    # days. 0 turns a ceiling off.
    daily_spend_ceiling_usd: float = Field(default=300.0, ge=0)
    monthly_spend_ceiling_usd: float = Field(default=3_000.0, ge=0)
    # One caller's share of a UTC day; 0 (the default): only the service's ceilings.
    caller_daily_spend_ceiling_usd: float = Field(default=0.0, ge=0)
    # Runs one caller may have running at once; 0 (the default): no limit.
    max_running_runs_per_caller: int = Field(default=0, ge=0)
    # Who may cancel, resume or relabel any run (a run's creator always may), and lift
    # the kill switch through the dispatcher: e-mail addresses, as a JSON list.
    operators: list[str] = Field(default_factory=list)
    # The account whose ID token a budget alert's push carries (infra/budget.tf: the
    # push subscription's service account); only it (or an operator) may trip the
    # kill switch through the dispatcher's /budget-alert route.
    budget_alert_pusher: str | None = None
    # The account whose ID token Cloud Scheduler's sentinel jobs carry (infra/sentinels.tf:
    # their oidc_token's service account); only it (or an operator, by hand) may fire a
    # sentinel through the dispatcher's /sentinel route (niah.service.route_owners).
    sentinel_scheduler: str | None = None
    # How the dispatcher knows who calls (niah.cloud.identity, docs/limits.md). "verify":
    # it checks each ID token itself (signature against identity_certs_url, expiry,
    # audience, issuer): the local stack, whose tokens a key of its own signs. "cloud_run":
    # behind Cloud Run's IAM, which checked the token and removed its signature; a
    # deployment sets it (infra/main.tf). Never "cloud_run" where IAM is not in front.
    identity_mode: Literal["verify", "cloud_run"] = "verify"
    # Where the keys that sign ID tokens are published ({key id: PEM}); http(s) or file.
    identity_certs_url: str = "https://www.googleapis.com/oauth2/v1/certs"
    # Who may have signed an ID token (its iss claim).
    identity_issuers: list[str] = Field(
        default_factory=lambda: ["https://accounts.google.com", "accounts.google.com"]
    )
    # The audiences a token the function verifies may name; none: the root URL the
    # request was sent to (https or http), as Cloud Run's own check takes it.
    identity_audiences: list[str] = Field(default_factory=list)
    # The local stack's token signer (a JSON file: private key, key ID, issuer; made by
    # niah_devtools.local_identity at `up`): with it, the CLI signs its own ID tokens for
    # a dispatcher on this machine, as local_identity_email (else local@niah.localhost).
    local_identity_key: Path | None = None
    local_identity_email: str | None = None
    # A budget alert trips the kill switch when costAmount reaches this share of
    # budgetAmount (1.0: the budget is spent).
    budget_trip_share: float = Field(default=1.0, gt=0)
    # How long a dispatcher instance trusts its last read of the kill switch.
    kill_switch_cache_seconds: float = Field(default=5.0, ge=0)

    # The model a run request that names none gets; a deployment sets a Gemini model.
    default_model_name: str = "gemma-3-270m-local"
    # Whether this deployment's worker has llama.cpp and the GGUF (a deployment asks for
    # them: scripts/deploy.sh LOCAL_MODEL=1); without them local-model runs are refused.
    local_model_available: bool = True

    # Local model (Gemma 3 270M through llama.cpp).
    local_model_threads: int = 2
    local_model_max_context: int = 32_768

    # Gemini on Vertex AI (google-genai). vertex_base_url points the SDK at another
    # endpoint (the local stand-in); vertex_access_token then stands in for ADC.
    vertex_location: str = "global"
    vertex_base_url: str | None = None
    vertex_access_token: str | None = None
    # Retries: the SDK retries nothing unless told. Worst case per call is
    # attempts x timeout + the backoff between them; keep it below the function timeout.
    gemini_timeout_seconds: float = 120.0
    gemini_retry_attempts: int = 3
    gemini_retry_initial_delay: float = 2.0
    gemini_retry_max_delay: float = 30.0
    function_timeout_seconds: float = 540.0

    # Any OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama): https, or
    # http on this machine only. The key: in production from Secret Manager, which the
    # worker's deployment puts in NIAH_OPENAI_API_KEY (infra/secrets.tf); locally, the
    # environment variable itself.
    openai_base_url: str | None = None
    openai_api_key: str | None = None

    @field_validator("openai_base_url")
    @classmethod
    def _openai_base_url_keeps_the_key_safe(cls, url: str | None) -> str | None:
        """Refuse an endpoint the key would reach in the clear (``https_or_loopback``)."""
        return https_or_loopback(url)

    openai_timeout_seconds: float = 120.0

    # JSON object merged over niah.pricing.DEFAULT_PRICES.
    price_table: str | None = None

    # The Firestore emulator a client talks to, if any (the client libraries read the
    # same variable); the CLI checks it answers before waiting on it.
    firestore_emulator_host: str | None = Field(
        default=None, validation_alias=AliasChoices("FIRESTORE_EMULATOR_HOST")
    )

    # The Cloud Storage emulator, if any (the client library reads the same variable):
    # report links point at it instead of storage.cloud.google.com.
    storage_emulator_host: str | None = Field(
        default=None, validation_alias=AliasChoices("STORAGE_EMULATOR_HOST")
    )

    # Where clients send run requests (the CLI's default).
    dispatcher_url: str | None = Field(
        default=None, validation_alias=AliasChoices("NIAH_DISPATCHER_URL", "DISPATCHER_URL")
    )

    # After this many retryable failures of one cell (counted across deliveries), the
    # worker records it failed instead of raising: a run ends even where dead-lettering
    # is slow. The subscription's dead-letter policy stays as the backstop for crashes.
    max_cell_failures: int = 5

    # A run none of whose cells is leased, on a fleet that holds no lease for any run,
    # with no progress and no retryable failure for this long, has nothing in flight and
    # nothing queued ahead of it: its missing cells' messages were lost (a push cut off
    # by a dead worker, a dispatcher or a release killed before it published). The sweep
    # publishes them again (niah.service.sweep, "quiet runs"). Pub/Sub pushes a waiting
    # message to an idle endpoint within seconds, and a dead holder's lease lapses within
    # cell_lease_seconds, so this need not be longer than one lease.
    sweep_quiet_after_seconds: float = Field(default=30.0, ge=1)
    # A cell that failed retryably is back in Pub/Sub's backoff for up to this long (the
    # subscriptions' maximum_backoff, infra/pubsub.tf): its run is not quiet meanwhile.
    sweep_retry_backoff_seconds: float = Field(default=600.0, ge=0)

    # The last resort, for what nothing above explains: a running run with no progress
    # for this long gets its missing cells republished by the sweep. Longer than a cell
    # can legitimately be in retry (5 deliveries of up to a 600 s ack deadline plus
    # 600 s backoff), so it rarely races a live cell.
    sweep_stalled_after_seconds: float = 7200.0
    # A spend hold left open this long by a run that is gone or ended is settled by the
    # sweep (niah.service.spend_settlement): longer than a dispatch takes between
    # taking a hold and storing its run or resetting its cells.
    sweep_settle_holds_after_seconds: float = Field(default=600.0, ge=0)

    # How long a cell's lease holds off other deliveries unless renewed. Its holder
    # renews it every tenth of this while it works (niah.service.lease), each renewal
    # apart from any still waiting, so a live holder's lease lapses only if every
    # renewal fails for nine tenths of it (27 s), and a dead holder's lapses within
    # this: its cell is answered again within about a minute. The holder stores only
    # while its claim is sure to hold (docs/reliability.md, "One paid call per cell").
    cell_lease_seconds: float = Field(default=30.0, ge=1, le=600)

    # How long a run's report claim holds off other renderers unless renewed; renewed
    # every tenth of this while the renderer works, as a cell's lease is. A renderer
    # killed mid-render lets it lapse within this, and the sweep's next pass asks for
    # the report again; the report is asked for again no sooner than this either.
    report_lease_seconds: float = Field(default=30.0, ge=1, le=600)

    # A dead-lettered cell is published again this many times (always while its lease
    # is live) before it is stored failed: its deliveries may have run out on a slow
    # call, a dead holder or a store outage, none of them the cell's fault.
    dead_letter_republishes: int = Field(default=3, ge=0, le=100)

    # How long storing a cell may take before its answer is kept in the bucket for the
    # next delivery (the Firestore client's own default deadline is 60 s).
    store_timeout_seconds: float = Field(default=60.0, gt=0, le=600)

    # The most documents a run's counts are spread over (one per 32 cells up to this).
    # Firestore sustains about one write per second per document; at 1,000 samples a
    # minute (16.7 writes/s) 32 shards take about 0.52 writes/s each (docs/architecture.md,
    # "Counting at scale"). Each run keeps its own count (``counter_shards``), so a
    # change here applies to new runs only.
    counter_shards: int = Field(default=32, ge=1, le=500)

    # How a new run's cells are published. "cache_aware": first the one cell whose prompt
    # shares the longest prefix with every other (the deepest needle at the longest
    # length), the rest when it is answered, so their prefixes hit Vertex's implicit
    # cache (README, "Cache-aware dispatch"); "naive": all at once.
    dispatch_order: Literal["cache_aware", "naive"] = "cache_aware"

    # Seconds a dispatcher waits for all publishes to be acknowledged.
    publish_timeout_seconds: float = 60.0

    # A batch run's input is split into files (one job each) of at most this many lines
    # and bytes. Google caps a Gemini batch job at 200,000 requests and, from Cloud
    # Storage, a 1 GB input file (cloud.google.com/vertex-ai/generative-ai/docs/
    # multimodal/batch-prediction-gemini, "Quotas and limits", read 2026-11-27), so
    # neither may be set above that. The defaults stay lower: 10,000 lines keeps a job's
    # output quick to ingest, and the worker holds one file in memory
    # while it writes it (a 1M-token prompt is about 4 MB of text), hence 256 MB.
    batch_max_lines: int = Field(default=10_000, ge=1, le=BATCH_MAX_REQUESTS)
    batch_max_bytes: int = Field(default=256_000_000, ge=1_000, le=BATCH_MAX_INPUT_BYTES)
    # A job's output is ingested in pieces of this many bytes of a file, one message
    # each; a piece that runs this many seconds hands the rest of its range on, well
    # inside the worker's 540 s timeout (infra/functions.tf).
    batch_ingest_piece_bytes: int = Field(default=32 * 1024 * 1024, ge=1_024)
    batch_ingest_seconds: float = Field(default=240.0, gt=0)
    # Failed lines of one reason that reach this share of a job's lines (and at least
    # batch_systemic_min_lines of them) are a fault of the deployment or the service
    # (a permission, a quota, a service agent not yet made): their cells are failed with
    # the reason rather than bought again online. Below it, failed lines go online, at
    # most batch_online_fallback_max a job.
    batch_systemic_share: float = Field(default=0.5, gt=0, le=1)
    batch_systemic_min_lines: int = Field(default=5, ge=1)
    batch_online_fallback_max: int = Field(default=200, ge=0)
    # A job that ended is settled only once its output holds the rows its completionStats
    # count (successful + failed); no Google page says the export is complete when the
    # state turns terminal. Files that lag are waited for this long after the job ended,
    # then the rows never seen are recorded on the job and their cells fail, saying so.
    batch_output_wait_seconds: float = Field(default=1800.0, ge=0)
    # A settle stores at most this many lines of cells sharing a prompt per call, and a
    # job's unanswered cells are stored failed this many per message: bounded calls.
    batch_settle_lines: int = Field(default=50, ge=1)
    batch_fail_cells: int = Field(default=500, ge=1)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the process-wide settings (read from the environment on first use)."""
    return Settings()
