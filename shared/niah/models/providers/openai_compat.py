"""Any OpenAI-compatible chat endpoint (vLLM, llama.cpp server, Ollama, ...).

Users compare Gemini with open models; this is the whole provider. Errors go through
the same taxonomy as Gemini's.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from niah.catalog.models import GEMMA3_TOKENIZER, temperature_for
from niah.core.interfaces import ModelAnswer, Turn
from niah.core.prompts.texts import HARNESS_TEMPLATE
from niah.errors import ConfigurationError, RetryableError, classify_http_error
from niah.settings import get_settings


class OpenAICompatibleProvider:
    """``POST {base_url}/chat/completions`` with the harness's prompt as one user turn."""

    # Lengths are budgeted in Gemma 3 tokens; the endpoint's usage reports its own count.
    tokenizer_name = GEMMA3_TOKENIZER
    default_template = HARNESS_TEMPLATE

    def __init__(self, model_name: str) -> None:
        import requests

        settings = get_settings()
        if not settings.openai_base_url:
            raise ConfigurationError(
                "model_provider openai_compatible needs NIAH_OPENAI_BASE_URL on the worker"
            )
        self.model_name = model_name
        self._url = settings.openai_base_url.rstrip("/") + "/chat/completions"
        self._timeout = settings.openai_timeout_seconds
        self._session = requests.Session()
        if settings.openai_api_key:
            self._session.headers["Authorization"] = f"Bearer {settings.openai_api_key}"

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
        """Ask the endpoint; HTTP errors are classified, transport errors retried.

        With ``turns``, the conversation goes as chat messages (user and assistant).
        """
        import requests

        messages = [
            {"role": "assistant" if role == "model" else "user", "content": text}
            for role, text in (turns or (("user", prompt),))
        ]
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            "max_tokens": max_output_tokens,
        }
        temperature = temperature_for(self.model_name)
        if temperature is not None:
            body["temperature"] = temperature
        started = time.monotonic()
        try:
            response = self._session.post(self._url, json=body, timeout=self._timeout)
        except requests.RequestException as error:
            raise RetryableError(f"{type(error).__name__}: {error}") from error
        latency = time.monotonic() - started
        if response.status_code != 200:
            message = response.text[:500]
            with contextlib.suppress(ValueError, KeyError, TypeError):
                message = str(response.json()["error"]["message"])
            raise classify_http_error(response.status_code, response.reason or "", message)
        reply = response.json()
        choice = reply["choices"][0]
        usage = reply.get("usage") or {}
        # OpenAI counts reasoning inside completion_tokens; split it out as thinking.
        thinking = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
        completion = usage.get("completion_tokens")
        return ModelAnswer(
            text=str(choice["message"].get("content") or ""),
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            output_tokens=completion - thinking
            if completion is not None and thinking
            else completion,
            latency_seconds=latency,
            thinking_tokens=thinking,
            cached_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens"),
            total_tokens=usage.get("total_tokens"),
            # The chat completion's ``model`` (the model that answered) and ``id``.
            model_version=_text_or_none(reply.get("model")),
            response_id=_text_or_none(reply.get("id")),
        )

    def count_tokens(self, prompt: str) -> int:
        """No standard count endpoint: the Gemma 3 count the lengths were budgeted in."""
        from niah.models.tokenizer import get_tokenizer

        return len(get_tokenizer(self.tokenizer_name).encode(prompt))


def _text_or_none(value: Any) -> str | None:
    """A reply's string field, None where it is missing, empty or not text."""
    return value if isinstance(value, str) and value else None
