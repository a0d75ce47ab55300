"""Gemini on Vertex AI through ``google-genai`` (``vertexai.generative_models`` is deprecated).

Temperature 0, safety filters off as in the harness, explicit retries (the SDK retries
nothing by default) bounded below the function timeout, and every API error mapped
through ``niah.errors.classify_http_error``.
"""

from __future__ import annotations

import time
from typing import Any

from niah.catalog.models import GEMMA3_TOKENIZER
from niah.catalog.tiers import TIER_HEADER
from niah.core.interfaces import BatchJob, CompletionStats, ModelAnswer, Turn
from niah.core.prompts.texts import HARNESS_TEMPLATE
from niah.errors import (
    RETRYABLE_STATUS_CODES,
    ConfigurationError,
    PermanentCellError,
    RetryableError,
    UnreadableLineError,
    classify_http_error,
)
from niah.models.providers.gemini_request import (
    HARM_CATEGORIES,
    SAFETY_THRESHOLD,
    generation_for,
)
from niah.settings import Settings, get_settings


def _api_value(value: Any) -> str | None:
    """An SDK enum as the API writes it ("PROHIBITED_CONTENT"), not its Python repr."""
    if value is None:
        return None
    return str(getattr(value, "value", value))


def _answer_of(response: Any, latency: float) -> ModelAnswer:
    """A ``GenerateContentResponse`` as the service's answer: text, finish, usage, who.

    ``modelVersion`` says which model answered (Google routes some IDs to others);
    it and ``responseId`` may be absent (an older reply, a stand-in), and are None then.
    """
    candidates = response.candidates or []
    finish = _api_value(candidates[0].finish_reason) if candidates else None
    if not candidates and response.prompt_feedback is not None:
        finish = f"PROMPT_BLOCKED:{_api_value(response.prompt_feedback.block_reason)}"
    usage = response.usage_metadata
    return ModelAnswer(
        text=response.text or "",  # the SDK leaves thought parts out of .text
        finish_reason=finish,
        prompt_tokens=usage.prompt_token_count if usage else None,
        output_tokens=usage.candidates_token_count if usage else None,
        latency_seconds=latency,
        thinking_tokens=usage.thoughts_token_count if usage else None,
        cached_tokens=usage.cached_content_token_count if usage else None,
        total_tokens=usage.total_token_count if usage else None,
        model_version=response.model_version or None,
        response_id=response.response_id or None,
        traffic_type=_api_value(usage.traffic_type) if usage else None,
    )


def tier_headers(tier: str | None) -> dict[str, str]:
    """The header that asks Vertex for a pricing tier, as Google's pages spell it.

    The Flex PayGo and Priority PayGo pages (``niah.catalog.tiers``, read 2026-12-04):
    "X-Vertex-AI-LLM-Shared-Request-Type: flex" (or "priority"). google-genai 2.34 also
    has ``GenerateContentConfig.service_tier`` (sent as a body field, ``serviceTier``),
    which Google's Vertex pages do not document; the header is what they document.
    Without Provisioned Throughput (this service buys none), that header is the tier.
    """
    return {TIER_HEADER: tier} if tier and tier != "standard" else {}


def thinking_options(types: Any, budget: int | None, level: str | None) -> dict[str, Any]:
    """``GenerateContentConfig``'s thinking fields for a budget or a level ("XHIGH").

    A level the SDK's ``ThinkingLevel`` does not list (XHIGH, Gemini 4's; google-genai
    2.34 lacks it) becomes a pseudo-member that Python 3.11.2's ``deepcopy`` cannot
    rebuild ("AttributeError: XHIGH" inside ``generate_content``, seen with Debian's
    python3; 3.11.7 copies it), so it goes into the request body as the API spells it,
    through the SDK's own ``extra_body``. The API refuses a budget with a level.
    """
    if budget is not None:
        return {"thinking_config": types.ThinkingConfig(thinking_budget=budget)}
    if level is None:
        return {}
    if level.upper() in types.ThinkingLevel.__members__:
        return {"thinking_config": types.ThinkingConfig(thinking_level=level.upper())}
    extra = {"generationConfig": {"thinkingConfig": {"thinkingLevel": level.upper()}}}
    return {"http_options": types.HttpOptions(extra_body=extra)}


# What a reply carries at least one of; a ``response`` with none of them is no reply
# (a failed line's ``{}``), and reading it as an empty answer would score it wrong.
_REPLY_FIELDS = ("candidates", "promptFeedback", "usageMetadata")


def answer_from_json(reply: Any) -> ModelAnswer:
    """A batch prediction line's ``response`` (the REST JSON), read as an online reply is.

    google-genai's models forbid unknown fields, and Google adds fields to its replies
    without notice (a recorded batch line carries ``usageMetadata.billablePromptUsage``
    and a candidate's ``score``, neither in google-genai 2.34). Online, the SDK drops
    what its models lack before validating (``BaseModel._from_response``, which walks
    the models' fields and camelCase aliases at every depth); a batch line goes through
    that same converter, so it reads exactly as the online call would have.

    Raises:
        UnreadableLineError: the response is not a JSON object, carries none of
            candidates, promptFeedback and usageMetadata, or has a field the SDK cannot
            read (a count that is not a number). Batch ingest records that line failed
            with the error's ``reason`` and reads the next one.
    """
    import copy

    from google.genai import types

    if not isinstance(reply, dict):
        raise UnreadableLineError(f"the response is {type(reply).__name__}, not a JSON object")
    if not any(field in reply for field in _REPLY_FIELDS):
        raise UnreadableLineError(
            "the response carries no candidates, promptFeedback or usageMetadata"
        )
    try:
        # The converter prunes in place: the caller's line stays as Google wrote it.
        response = types.GenerateContentResponse._from_response(
            response=copy.deepcopy(reply), kwargs={}
        )
    except (ValueError, TypeError) as error:  # pydantic's ValidationError is a ValueError
        raise UnreadableLineError(
            f"the SDK cannot read the response: {_first_error(error)}"
        ) from error
    return _answer_of(response, 0.0)


def _first_error(error: Exception) -> str:
    """Where and what, from a pydantic error ("usageMetadata.promptTokenCount: ...")."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return str(error)
    first = errors(include_url=False)[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", error))


def retry_budget_seconds(settings: Settings) -> float:
    """Worst-case seconds one call may take with all its retries."""
    attempts = settings.gemini_retry_attempts
    backoff = sum(
        min(settings.gemini_retry_initial_delay * 2**n + 1, settings.gemini_retry_max_delay)
        for n in range(attempts - 1)
    )
    return attempts * settings.gemini_timeout_seconds + backoff


class GeminiProvider:
    """One ``genai.Client`` per instance; thread-safe for concurrent cells."""

    tokenizer_name = GEMMA3_TOKENIZER
    default_template = HARNESS_TEMPLATE

    def __init__(self, model_name: str, *, client: Any = None) -> None:
        from google import genai
        from google.genai import types

        settings = get_settings()
        budget = retry_budget_seconds(settings)
        if budget >= settings.function_timeout_seconds:
            raise ConfigurationError(
                f"Gemini retries may take {budget:.0f} s, not below the function timeout "
                f"({settings.function_timeout_seconds:.0f} s); lower NIAH_GEMINI_RETRY_ATTEMPTS "
                "or NIAH_GEMINI_TIMEOUT_SECONDS"
            )
        self.model_name = model_name
        self._types = types
        http_options = types.HttpOptions(
            base_url=settings.vertex_base_url,
            timeout=int(settings.gemini_timeout_seconds * 1000),  # milliseconds
            retry_options=types.HttpRetryOptions(
                attempts=settings.gemini_retry_attempts,
                initial_delay=settings.gemini_retry_initial_delay,
                max_delay=settings.gemini_retry_max_delay,
                exp_base=2,
                jitter=1,
                http_status_codes=list(RETRYABLE_STATUS_CODES),
            ),
        )
        credentials = None
        if settings.vertex_access_token:
            import google.oauth2.credentials

            credentials = google.oauth2.credentials.Credentials(token=settings.vertex_access_token)
        self._client = client or genai.Client(
            vertexai=True,
            project=settings.project,
            location=settings.vertex_location,
            credentials=credentials,
            http_options=http_options,
        )

    def _config(
        self,
        max_output_tokens: int,
        thinking_budget: int | None,
        thinking_level: str | None,
        tier: str | None = None,
    ) -> Any:
        """The SDK's config from the one ``Generation`` batch lines are built from too.

        A tier's header goes in the call's own ``http_options`` (with the thinking
        level's ``extra_body`` where there is one): one client serves every run.
        """
        types = self._types
        generation = generation_for(
            self.model_name,
            max_output_tokens=max_output_tokens,
            thinking_budget=thinking_budget,
            thinking_level=thinking_level,
        )
        options = thinking_options(types, generation.thinking_budget, generation.thinking_level)
        headers = tier_headers(tier)
        if headers:
            extra = options.pop("http_options", None)
            options["http_options"] = types.HttpOptions(
                headers=headers, extra_body=extra.extra_body if extra else None
            )
        return types.GenerateContentConfig(
            temperature=generation.temperature,
            max_output_tokens=generation.max_output_tokens,
            **options,
            safety_settings=[
                types.SafetySetting(category=category, threshold=SAFETY_THRESHOLD)
                for category in HARM_CATEGORIES
            ],
        )

    def _contents(self, prompt: str, turns: tuple[Turn, ...] | None) -> Any:
        if turns is None:
            return prompt
        types = self._types
        return [
            types.Content(role=role, parts=[types.Part.from_text(text=text)])
            for role, text in turns
        ]

    def _call(self, function: Any, **kwargs: Any) -> Any:
        """Call the SDK, turning its errors into the service's taxonomy."""
        import httpx
        from google.genai import errors

        try:
            return function(model=self.model_name, **kwargs)
        except errors.APIError as error:
            raise classify_http_error(
                int(error.code or 0), str(error.status or ""), str(error.message or error)
            ) from error
        except (httpx.TimeoutException, httpx.TransportError) as error:
            raise RetryableError(f"{type(error).__name__}: {error}") from error
        except (ValueError, TypeError) as error:
            # The SDK refuses what it cannot send or parse (a malformed model name, an
            # unknown response shape) with these: the same request fails the same way,
            # so redelivering it would loop. Fail the cell and say what the SDK said.
            raise PermanentCellError(
                f"the SDK refused the call: {type(error).__name__}: {error}"
            ) from error

    def generate(
        self,
        prompt: str,
        *,
        max_output_tokens: int,
        thinking_budget: int | None = None,
        thinking_level: str | None = None,
        turns: tuple[Turn, ...] | None = None,
        tier: str | None = None,
    ) -> ModelAnswer:
        """Ask the model; a blocked or empty answer is returned with its reason.

        With ``turns``, the conversation goes as ``contents`` with user and model roles;
        with ``tier``, on that pricing tier (``tier_headers``).
        """
        started = time.monotonic()
        response = self._call(
            self._client.models.generate_content,
            contents=self._contents(prompt, turns),
            config=self._config(max_output_tokens, thinking_budget, thinking_level, tier),
        )
        return _answer_of(response, time.monotonic() - started)

    def batches(self) -> GeminiBatchJobs:
        """Vertex AI batch jobs through this provider's client (its project and location)."""
        return GeminiBatchJobs(self._client, self.model_name)

    def count_tokens(self, prompt: str) -> int:
        """The API's own count of the prompt's tokens."""
        result = self._call(self._client.models.count_tokens, contents=prompt)
        if result.total_tokens is None:
            raise PermanentCellError("countTokens returned no count")
        return int(result.total_tokens)


class GeminiBatchJobs:
    """``niah.core.interfaces.BatchClient`` on google-genai's ``client.batches``.

    google-genai rather than google-cloud-aiplatform's JobServiceClient: the same
    client, credentials, base URL (the stand-in) and error classes as the online calls,
    and ``client.batches`` drives Vertex batch prediction jobs directly.
    """

    def __init__(self, client: Any, model_name: str) -> None:
        self._client = client
        self.model_name = model_name

    def _call(self, function: Any, **kwargs: Any) -> Any:
        from google.genai import errors

        try:
            return function(**kwargs)
        except errors.APIError as error:
            raise classify_http_error(
                int(error.code or 0), str(error.status or ""), str(error.message or error)
            ) from error

    def submit(self, input_uri: str, output_prefix: str, display_name: str) -> BatchJob:
        """Create a job over ``input_uri``; its predictions go under ``output_prefix``."""
        job = self._call(
            self._client.batches.create,
            model=self.model_name,
            src=input_uri,
            config={"dest": output_prefix, "display_name": display_name},
        )
        return _job_of(job)

    def get(self, name: str) -> BatchJob:
        """The job's state now."""
        return _job_of(self._call(self._client.batches.get, name=name))

    def find(self, display_name: str) -> BatchJob | None:
        """The job of that display name (a submit cut off before it was recorded)."""
        for job in self._call(self._client.batches.list):
            if job.display_name == display_name:
                return _job_of(job)
        return None

    def cancel(self, name: str) -> None:
        """Ask Vertex to cancel the job (it ends JOB_STATE_CANCELLED)."""
        self._call(self._client.batches.cancel, name=name)


def _job_of(job: Any) -> BatchJob:
    output = job.output_info.gcs_output_directory if job.output_info else None
    if output is None and job.dest is not None:
        output = job.dest.gcs_uri
    error = job.error
    return BatchJob(
        name=str(job.name),
        state=_api_value(job.state) or "JOB_STATE_UNSPECIFIED",
        output_dir=output,
        error=(error.message if hasattr(error, "message") else str(error)) if error else None,
        stats=_stats_of(getattr(job, "completion_stats", None)),
    )


def _stats_of(stats: Any) -> CompletionStats | None:
    """The job's ``completion_stats`` (google-genai's CompletionStats), or None if absent."""
    if stats is None:
        return None
    counts = [getattr(stats, name, None) for name in ("successful_count", "failed_count",
                                                      "incomplete_count")]  # fmt: skip
    return CompletionStats(*(None if count is None else int(count) for count in counts))
