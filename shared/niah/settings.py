"""The one place configuration is read from the environment, and every variable named.

Every setting has the prefix ``NIAH_`` (for example ``NIAH_BUCKET``); the project also
falls back to ``GOOGLE_CLOUD_PROJECT``, which the Google client libraries and Cloud
Functions already set. Nothing else in the service calls ``os.getenv``. Each setting
carries its default, unit and meaning. The ``NIAH_*`` variables only tests, scripts and
the local stack read are not the service's: ``niah_devtools.developer_variables`` names
them. docs/settings.md is generated from both (``python -m niah_devtools.settings_table``),
and tests/unit/test_settings_table.py fails on any ``NIAH_*`` read anywhere that is in
neither.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
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


def setting(default: Any, unit: str, meaning: str, **field: Any) -> Any:
    """A setting's field: its default (a class or function: its factory), unit and meaning.

    docs/settings.md's tables are generated from these (``niah_devtools.settings_table``);
    ``field`` is pydantic's (bounds, aliases).
    """
    extra: dict[str, Any] = {"description": meaning, "json_schema_extra": {"unit": unit}}
    if callable(default):  # list, a lambda: a fresh value each time
        return Field(default_factory=default, **extra, **field)
    return Field(default, **extra, **field)


# Where the service writes in the bucket. Not settings: the deployment's IAM conditions
# (infra/iam.tf, ``bucket_writes``) let each function write under exactly these
# prefixes, so any other value would be refused on every write.
CONTEXTS_PREFIX = "contexts/"  # prompts and whole long answers
KEPT_ANSWERS_PREFIX = "kept-answers/"  # paid answers the store could not take yet
BATCHES_PREFIX = "batches/"  # batch runs' input and output JSONL (batches/RUN_ID/...)
REPORTS_PREFIX = "reports/"  # each run's heatmap, page and summary, and the runs index
# The dead-letter topic is the subscriptions' (infra/pubsub.tf); no function reads it,
# so a setting would change nothing deployed. The local stack names its own the same.
DEAD_LETTER_TOPIC = "niah-dead-letter"


class Settings(BaseSettings):
    """Service configuration, read once per process."""

    model_config = SettingsConfigDict(env_prefix="NIAH_", extra="ignore")

    project: str = setting(
        "niah-local", "", "the Google Cloud project (GOOGLE_CLOUD_PROJECT, which Cloud Functions "
        "sets, if NIAH_PROJECT is not)",
        validation_alias=AliasChoices("NIAH_PROJECT", "GOOGLE_CLOUD_PROJECT")
    )  # fmt: skip
    bucket: str = setting("niah-local", "", "the data bucket: haystacks, caches, reports")
    cells_topic: str = setting("niah-cells", "", "the Pub/Sub topic of cells and worker steps")
    reports_topic: str = setting("niah-reports", "", "the Pub/Sub topic of report requests")
    alerts_topic: str = setting(
        "niah-alerts", "", "the Pub/Sub topic of sentinels' checks, for users to wire to mail or "
        "chat"
    )  # fmt: skip
    haystacks_prefix: str = setting(
        "haystacks/", "", "where haystacks live in the bucket; a run's haystack_dir is under it"
    )
    # As a haystack is under haystacks_prefix: a run never reads the bucket's other
    # prefixes (saved prompts, reports, batches).
    mrcr_sources_prefix: str = setting(
        "mrcr_v2/", "", "where MRCR v2's published CSV files are copied (docs/tasks/mrcr.md); "
        "the mrcr task reads its published samples from under it only"
    )  # fmt: skip
    default_haystack: str = setting(
        "paul_graham_essays", "", "the haystack a run request that names none gets"
    )
    cache_dir: Path = setting(
        Path.home() / ".cache" / "niah", "", "where token caches and the local model's files are "
        "kept on this instance"
    )  # fmt: skip

    # Budgets that protect a user's bill; override per deployment.
    max_cells_per_run: int = setting(500, "cells", "the most cells one run may have")
    max_tokens_per_run: int = setting(
        200_000_000, "tokens", "the most prompt tokens one run may ask for"
    )
    # The dispatcher streams every byte of an MRCR source within its 120 s request, and
    # a worker tokenizes the whole haystack in its 2 GiB; the longest context any model
    # takes (2M tokens) is ~8 MB of text, and a 1M-token MRCR row ~4 MB, so 512 MiB
    # holds ~120 such rows: generous for any real run, and it stops a prefix of
    # gigabytes before anything is read.
    max_source_bytes: int = setting(
        512 * 1024 * 1024, "bytes", "the most bytes a haystack or an MRCR source may list", ge=1
    )

    # Checked at dispatch against each new run's worst case plus what runs admitted in
    # the same UTC day (month) hold (niah.service.runs.admission; docs/limits.md). $300 a day
    # admits one 10-length x 10-depth sweep to 1M tokens on gemini-3.8-flash ($219 at
    # worst with every retry; about $44 if each call succeeds at once) or to 128K on
    # gemini-3.1-pro-preview ($262), and refuses the review's 200-cell 1M-token Pro grid
    # ($1,036 without retries). $3,000 a month is ten such days.
    daily_spend_ceiling_usd: float = setting(
        300.0, "USD", "the worst case of every run admitted in a UTC day; 0: off", ge=0
    )
    monthly_spend_ceiling_usd: float = setting(
        3_000.0, "USD", "the same over a UTC month; 0: off", ge=0
    )
    caller_daily_spend_ceiling_usd: float = setting(
        0.0, "USD", "one caller's share of a UTC day; 0: only the service's ceilings", ge=0
    )
    max_running_runs_per_caller: int = setting(
        0, "runs", "runs one caller may have running at once; 0: no limit", ge=0
    )
    operators: list[str] = setting(
        list, "JSON list", "e-mail addresses that may cancel, resume or relabel any run (a run's "
        "creator always may) and lift the kill switch"
    )  # fmt: skip
    budget_alert_pusher: str | None = setting(
        None, "", "the account whose ID token a budget alert's push carries (infra/budget.tf); only"
        " it or an operator may call /budget-alert"
    )  # fmt: skip
    sentinel_scheduler: str | None = setting(
        None, "", "the account Cloud Scheduler's sentinel jobs call as (infra/sentinels.tf); only "
        "it or an operator may call /sentinel (niah.service.routes.owners)"
    )  # fmt: skip
    # docs/sentinels.md states what these give at the recommended sentinel (simulated).
    sentinel_false_alarms_per_year: float = setting(
        1.0, "alarms a year", "the false alarms a year a sentinel may raise on a model that did "
        "not change (each held on average by its sequential test: niah.core.results."
        "sentinel_watch); fewer make a fall slower to flag", gt=0, le=365
    )  # fmt: skip
    sentinel_margin_points: float = setting(
        10.0, "points", "the fall a sentinel is tuned to flag, in points of percent below its "
        "baseline; 'unchanged' means within ± this of the baseline", gt=0, le=50
    )  # fmt: skip
    # "verify": the local stack, whose tokens a key of its own signs. "cloud_run": behind
    # Cloud Run's IAM, which checked the token and removed its signature; a deployment
    # sets it (infra/main.tf). Never "cloud_run" where IAM is not in front.
    identity_mode: Literal["verify", "cloud_run"] = setting(
        "verify", "", "how the dispatcher knows who calls (niah.cloud.identity): verify each ID "
        "token itself, or take Cloud Run's check (cloud_run)"
    )  # fmt: skip
    identity_certs_url: str = setting(
        "https://www.googleapis.com/oauth2/v1/certs", "", "where the keys that sign ID tokens are "
        "published ({key id: PEM}); http(s) or file"
    )  # fmt: skip
    identity_issuers: list[str] = setting(
        lambda: ["https://accounts.google.com", "accounts.google.com"], "JSON list", "who may have "
        "signed an ID token (its iss claim)"
    )  # fmt: skip
    identity_audiences: list[str] = setting(
        list, "JSON list", "the audiences a token may name; none: the root URL the request was sent"
        " to, as Cloud Run's own check takes it"
    )  # fmt: skip
    # Made by niah_devtools.local_identity at `up`.
    local_identity_key: Path | None = setting(
        None, "", "the local stack's token signer (a JSON file): with it, the CLI signs its own ID "
        "tokens for a dispatcher on this machine"
    )  # fmt: skip
    local_identity_email: str | None = setting(
        None, "", "who the CLI's own tokens name (else local@niah.localhost)"
    )
    budget_trip_share: float = setting(
        1.0, "fraction", "a budget alert trips the kill switch when costAmount reaches this share "
        "of budgetAmount", gt=0
    )  # fmt: skip
    kill_switch_cache_seconds: float = setting(
        5.0, "s", "how long a dispatcher trusts its last read of the kill switch", ge=0
    )

    default_model_name: str = setting(
        "gemma-3-270m-local", "", "the model a run request that names none gets; a deployment sets "
        "a Gemini model"
    )  # fmt: skip
    local_model_available: bool = setting(
        True, "", "whether this worker has llama.cpp and the GGUF (scripts/deploy.sh "
        "LOCAL_MODEL=1); without them local-model runs are refused"
    )  # fmt: skip
    local_model_threads: int = setting(2, "threads", "llama.cpp's threads per call")
    local_model_max_context: int = setting(32_768, "tokens", "the local model's context window")

    vertex_location: str = setting("global", "", "the Vertex AI location Gemini is called in")
    vertex_base_url: str | None = setting(
        None, "", "another endpoint for the SDK to call (the local stand-in)"
    )
    vertex_access_token: str | None = setting(
        None, "", "a token that stands in for ADC, with vertex_base_url"
    )
    # The SDK retries nothing unless told. Worst case per call is attempts x timeout +
    # the backoff between them; keep it below the function timeout.
    gemini_timeout_seconds: float = setting(120.0, "s", "one Gemini call's timeout")
    gemini_retry_attempts: int = setting(3, "attempts", "tries per Gemini call, the first included")
    gemini_retry_initial_delay: float = setting(2.0, "s", "the first backoff between Gemini tries")
    gemini_retry_max_delay: float = setting(30.0, "s", "the longest such backoff")
    function_timeout_seconds: float = setting(
        540.0, "s", "the worker's timeout (infra/functions.tf): a provider whose worst case is "
        "longer is refused"
    )  # fmt: skip

    # In production the key comes from Secret Manager, which the worker's deployment puts
    # in NIAH_OPENAI_API_KEY (infra/secrets.tf); locally, the environment variable itself.
    openai_base_url: str | None = setting(
        None, "", "any OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama): https, or "
        "http on this machine only"
    )  # fmt: skip
    openai_api_key: str | None = setting(None, "", "that endpoint's API key (a bearer token)")

    @field_validator("openai_base_url")
    @classmethod
    def _openai_base_url_keeps_the_key_safe(cls, url: str | None) -> str | None:
        """Refuse an endpoint the key would reach in the clear (``https_or_loopback``)."""
        return https_or_loopback(url)

    openai_timeout_seconds: float = setting(120.0, "s", "one call's timeout on that endpoint")

    price_table: str | None = setting(
        None, "JSON object", "model name to some of its prices (USD per 1M tokens), merged over "
        "genai-prices' (niah.catalog.prices)"
    )  # fmt: skip

    # The client libraries read the same variables.
    firestore_emulator_host: str | None = setting(
        None, "", "the Firestore emulator a client talks to, if any; the CLI checks it answers",
        validation_alias=AliasChoices("FIRESTORE_EMULATOR_HOST")
    )  # fmt: skip
    storage_emulator_host: str | None = setting(
        None, "", "the Cloud Storage emulator, if any: report links point at it",
        validation_alias=AliasChoices("STORAGE_EMULATOR_HOST")
    )  # fmt: skip
    dispatcher_url: str | None = setting(
        None, "", "where clients send run requests (the CLI's default)",
        validation_alias=AliasChoices("NIAH_DISPATCHER_URL", "DISPATCHER_URL")
    )  # fmt: skip

    # Counted across deliveries, so a run ends even where dead-lettering is slow; the
    # subscription's dead-letter policy stays as the backstop for crashes.
    max_cell_failures: int = setting(
        5, "failures", "after this many retryable failures of one cell the worker records it failed"
    )

    # A run none of whose cells is leased, on a fleet that holds no lease for any run,
    # with no progress and no retryable failure for this long, has nothing in flight and
    # nothing queued ahead of it: its missing cells' messages were lost (a push cut off
    # by a dead worker, a dispatcher or a release killed before it published). Pub/Sub
    # pushes a waiting message to an idle endpoint within seconds, and a dead holder's
    # lease lapses within cell_lease_seconds, so this need not be longer than one lease.
    sweep_quiet_after_seconds: float = setting(
        30.0, "s", "a quiet run's missing cells are published again by the sweep after this "
        "(niah.service.runs.sweep)", ge=1
    )  # fmt: skip
    sweep_retry_backoff_seconds: float = setting(
        600.0, "s", "the subscriptions' maximum_backoff (infra/pubsub.tf): a run with a cell failed"
        " this recently is not quiet", ge=0
    )  # fmt: skip
    # Longer than a cell can legitimately be in retry (5 deliveries of up to a 600 s ack
    # deadline plus 600 s backoff), so it rarely races a live cell.
    sweep_stalled_after_seconds: float = setting(
        7200.0, "s", "the last resort: a running run with no progress this long gets its missing "
        "cells republished"
    )  # fmt: skip
    # Longer than a dispatch takes between taking a hold and storing its run or
    # resetting its cells.
    sweep_settle_holds_after_seconds: float = setting(
        600.0, "s", "a spend hold left open this long by a run gone or ended is settled by the "
        "sweep", ge=0
    )  # fmt: skip
    # Renewed every tenth of this while its holder works (niah.service.lease), each
    # renewal apart from any still waiting, so a live holder's lease lapses only if every
    # renewal fails for nine tenths of it (27 s), and a dead holder's lapses within this.
    # The holder stores only while its claim is sure to hold (docs/reliability.md).
    cell_lease_seconds: float = setting(
        30.0, "s", "how long a cell's lease holds off other deliveries unless renewed", ge=1, le=600
    )
    # A renderer killed mid-render lets it lapse within this, and the sweep's next pass
    # asks for the report again; it is asked for again no sooner than this either.
    report_lease_seconds: float = setting(
        30.0, "s", "how long a run's report claim holds off other renderers unless renewed",
        ge=1, le=600
    )  # fmt: skip
    # Its deliveries may have run out on a slow call, a dead holder or a store outage,
    # none of them the cell's fault.
    dead_letter_republishes: int = setting(
        3, "times", "a dead-lettered cell is published again this often before it is stored failed",
        ge=0, le=100
    )  # fmt: skip
    # The Firestore client's own default deadline is 60 s.
    store_timeout_seconds: float = setting(
        60.0, "s", "how long storing a cell may take before its answer is kept in the bucket",
        gt=0, le=600
    )  # fmt: skip
    # Firestore sustains about one write per second per document; at 1,000 samples a
    # minute (16.7 writes/s) 32 shards take about 0.52 writes/s each (docs/architecture.md,
    # "Counting at scale"). Each run keeps its own count (``counter_shards``).
    counter_shards: int = setting(
        32, "documents", "the most documents a run's counts are spread over (one per 32 cells up to"
        " this); new runs only", ge=1, le=500
    )  # fmt: skip
    dispatch_order: Literal["cache_aware", "naive"] = setting(
        "cache_aware", "", "cache_aware: the cell sharing the longest prefix first, the rest when "
        "it is answered (README, Cache-aware dispatch); naive: all at once"
    )  # fmt: skip
    publish_timeout_seconds: float = setting(
        60.0, "s", "how long a publisher waits for its publishes to be acknowledged"
    )

    # Google caps a Gemini batch job at 200,000 requests and, from Cloud Storage, a 1 GB
    # input file (cloud.google.com/vertex-ai/generative-ai/docs/multimodal/
    # batch-prediction-gemini, "Quotas and limits", read 2026-11-27), so neither may be
    # set above that. 10,000 lines keeps a job's output quick to ingest, and the worker
    # holds one file in memory while it writes it (a 1M-token prompt is about 4 MB of
    # text), hence 256 MB.
    batch_max_lines: int = setting(
        10_000, "lines", "the most lines of a batch job's input file", ge=1, le=BATCH_MAX_REQUESTS
    )
    batch_max_bytes: int = setting(
        256_000_000, "bytes", "the most bytes of a batch job's input file",
        ge=1_000, le=BATCH_MAX_INPUT_BYTES
    )  # fmt: skip
    # Well inside the worker's 540 s timeout (infra/functions.tf).
    batch_ingest_piece_bytes: int = setting(
        32 * 1024 * 1024, "bytes", "a job's output is ingested in pieces of this many bytes, one "
        "message each", ge=1_024
    )  # fmt: skip
    batch_ingest_seconds: float = setting(
        240.0, "s", "a piece that runs this long hands the rest of its range on", gt=0
    )
    # Such failures are the deployment's or the service's (a permission, a quota, a
    # service agent not yet made): their cells are failed with the reason rather than
    # bought again online.
    batch_systemic_share: float = setting(
        0.5, "fraction", "failed lines of one reason reaching this share of a job's lines are "
        "systemic", gt=0, le=1
    )  # fmt: skip
    batch_systemic_min_lines: int = setting(5, "lines", "and at least this many of them", ge=1)
    batch_online_fallback_max: int = setting(
        200, "lines", "the most failed lines of a job sent online instead", ge=0
    )
    # No Google page says a job's export is complete when its state turns terminal: a job
    # is settled once its lines read reach completionStats (successful + failed).
    batch_output_wait_seconds: float = setting(
        1800.0, "seconds", "how long files that lag a finished batch job are waited for", ge=0
    )
    batch_settle_lines: int = setting(
        50, "lines", "a settle stores at most this many lines of cells sharing a prompt per call",
        ge=1
    )  # fmt: skip
    batch_fail_cells: int = setting(
        500, "cells", "a job's unanswered cells are stored failed this many a time", ge=1
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the process-wide settings (read from the environment on first use)."""
    return Settings()
