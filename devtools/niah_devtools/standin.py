"""An HTTP-level stand-in of the Vertex AI Gemini API (and of OpenAI-style chat).

It lets the real ``google-genai`` SDK (and our OpenAI-compatible provider) be exercised
offline: requests go over HTTP to ``generateContent`` / ``countTokens`` /
``chat/completions`` exactly as they would to Google. It answers every task's question
as a good model would (``standin_answers``), thinks as the served model does by default
and spends ``maxOutputTokens`` on thoughts first (``standin_thinking``); token counts
come from the Gemma 3 tokenizer (Gemini's vocabulary).

Batch prediction jobs (create, get, list, cancel) are served as ``client.batches``
sends them (``standin_batch``): each line answered as an online call.

Faults are scripted through ``POST /_standin/config``: a latency, the first N calls
failing with a status, every call failing, blocked answers, a fixed (wrong) answer, an
input limit, a thinking table of its own, another model answering an asked one
(``served_versions``), a model that counts tokens otherwise (``token_count_ratio``, or
another tokenization: ``tokenization``).
Replies name the model that answered, as Vertex's do. Every request is counted and
kept (``GET /_standin/requests``) for tests to inspect.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from niah_devtools.standin_answers import answer_text as right_answer
from niah_devtools.standin_batch import BatchJobs
from niah_devtools.standin_cache import PromptCache, _cached_prefix_tokens
from niah_devtools.standin_curve import MISSED, KnownCurve
from niah_devtools.standin_replies import (
    as_openai,
    reply_identity,
    traffic_type_for,
    with_vertex_usage_details,
)
from niah_devtools.standin_thinking import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    InvalidThinking,
    generation_limits,
    retired,
    shared_limit,
    spend,
    thinking_config,
    thought_tokens,
)
from niah_devtools.standin_tiers import SHARED_REQUEST_TYPE_HEADER
from niah_devtools.standin_tokens import count_tokens, modelled_prompt_tokens

MODEL_IN_PATH = re.compile(r"/models/([^/:]+):generateContent$")
LOCATION_IN_PATH = re.compile(r"/locations/([^/]+)/")
# Config keys whose posted dicts are merged over the stand-in's thinking table.
MERGED_KEYS = ("thinking", "thinking_levels", "level_models", "shared_limits", "retired")


class StandinState:
    """What the stand-in has been told to do, and what it has seen."""

    def __init__(self, **defaults: Any) -> None:
        """Start from ``defaults``, the server's own settings (``--implicit-cache``).

        Every reset returns to them, so a test's reset keeps what the local stack
        started the stand-in with.
        """
        self.defaults = defaults
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.config: dict[str, Any] = {}
        # Prompts answered, with when: what the modelled implicit cache holds.
        self.cache = PromptCache()
        # Generate calls seen since the last reset (``fail_first`` counts them).
        self.generates = 0
        # Batch prediction jobs; they outlive a config reset, as Vertex's outlive a test.
        self.batch = BatchJobs()
        self.reset()

    def reset(self, **config: Any) -> None:
        """Clear the log and set a new script (see ``_script`` for the keys)."""
        with self.lock:
            self.requests = []
            self.cache = PromptCache()
            self.generates = 0
            self.config = {
                "latency_seconds": 0.0,
                # countTokens answers after this long (a test can act while it waits).
                "count_latency_seconds": 0.0,
                "fail_first": 0,  # the first N generate calls fail with fail_status
                "fail_status": 429,
                "fail_always": False,
                "block": False,  # answer with finishReason SAFETY and no content
                "input_limit": 1_048_576,  # prompts above this get a 400
                "answer": None,  # a fixed answer text instead of retrieving
                # A known curve (standin_curve.KnownCurve's fields): the share answered
                # right falls with the prompt's length; the rest get MISSED.
                "curve": None,
                "estimate_tokens": False,  # count len(text) // 4 instead of tokenizing
                # A model that counts prompts otherwise than Gemma 3: countTokens and
                # promptTokenCount (and the input limit, the cached share) are our count
                # times this, rounded half up (1.05: 5 % more tokens).
                "token_count_ratio": 1.0,
                # A model on another tokenizer than ours (issue 52: Gemini 3.5 and later are
                # not on Gemma 3): "chunks4" counts every run of letters and digits as one
                # token per 4 characters (rounded up) and every other non-space character
                # as one, so its count is not ours times a constant (the essays: 1.20-1.34
                # of ours, a needle's digits fewer). "gemma3": ours.
                "tokenization": "gemma3",
                # Overrides of the thinking table: N thought tokens whatever the model and
                # its thinking settings (still spent before the answer), and with
                # thinking_only no answer at all (MAX_TOKENS).
                "thoughts_tokens": None,
                "thinking_only": False,
                # How each model thinks: see standin_thinking (dicts merge over it).
                **thinking_config(),
                # Prompt tokens reported as served from the implicit cache.
                "cached_tokens": 0,
                # Vertex's implicit caching, modelled: a prompt whose prefix matches a
                # prompt answered within the window is billed that prefix as cached,
                # if it is at least the minimum (see _cached_prefix_tokens).
                "implicit_cache": False,
                # None: the model's own minimum (standin_tiers.cache_min_tokens, Google's).
                "cache_min_tokens": None,
                "cache_window_seconds": 300.0,
                # The trafficType replies name: None, from the tier header the call
                # sent (standin_replies.traffic_type_for); "" names none.
                "traffic_type": None,
                # A blocked prompt: no candidates, promptFeedback.blockReason.
                "prompt_block": None,
                # Google's routing, modelled: the modelVersion a reply names for an asked
                # model ({"gemini-3.5-flash": "gemini-3.6-flash"}); by default the asked ID.
                "served_versions": {},
                # Batch jobs: seconds from created to done, lines that fail (from 0), a
                # terminal state the job ends in instead (JOB_STATE_FAILED, _EXPIRED).
                "batch_delay_seconds": 0.5,
                "batch_fail_lines": [],
                "batch_job_fails": None,
                "batch_job_error": None,
                **self.defaults,
            }
            for key, value in config.items():
                merged = key in MERGED_KEYS and isinstance(value, dict)
                self.config[key] = {**self.config[key], **value} if merged else value


def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    names = {
        400: "INVALID_ARGUMENT",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }
    return status, {
        "error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}
    }


def _generate(
    state: StandinState, request: _ModelRequest, call_index: int, cached: int = 0
) -> tuple[int, dict[str, Any]]:
    config = state.config
    prompt = request.prompt
    if config["fail_always"] or call_index < config["fail_first"]:
        status = int(config["fail_status"])
        message = {
            429: "Resource exhausted. Please try again later.",
            403: "Permission denied on resource project.",
            404: "Publisher Model was not found or your project does not have access.",
        }
        return _error(status, message.get(status, "The service is currently unavailable."))
    if retired(config, request.model):
        return _error(404, "Publisher Model was not found or your project does not have access.")
    try:
        thoughts = thought_tokens(config, request.model, request.budget, request.level)
    except InvalidThinking as invalid:
        return _error(400, str(invalid))
    if config["thoughts_tokens"] is not None:
        thoughts = int(config["thoughts_tokens"])
    estimate = bool(config["estimate_tokens"])
    prompt_tokens = modelled_prompt_tokens(config, prompt)
    if prompt_tokens > int(config["input_limit"]):
        return _error(
            400,
            f"The input token count ({prompt_tokens}) exceeds the maximum "
            f"number of tokens allowed ({config['input_limit']}).",
        )
    shared = shared_limit(config, request.model)
    asked = request.asked_output_tokens
    if shared is not None and asked is not None and prompt_tokens + asked > shared:
        # Not Google's wording: no public source shows this refusal (see SHARED_LIMITS).
        return _error(
            400,
            f"The input token count ({prompt_tokens}) plus max_output_tokens ({asked}) "
            f"exceeds the maximum number of tokens allowed ({shared}).",
        )
    usage: dict[str, Any] = {"promptTokenCount": prompt_tokens}
    traffic = traffic_type_for(config, request.shared_request_type, request.model, request.location)
    cached = min(cached, prompt_tokens)
    if cached:
        usage["cachedContentTokenCount"] = cached
    if config["prompt_block"]:
        usage["totalTokenCount"] = prompt_tokens
        return 200, {
            "promptFeedback": {"blockReason": config["prompt_block"]},
            "usageMetadata": with_vertex_usage_details(usage, traffic),
            **reply_identity(config, request.model),
        }
    text = "" if config["block"] else answer_text(prompt, config["answer"])
    if config["curve"] and not KnownCurve.from_config(config["curve"]).answers_right(
        prompt, prompt_tokens
    ):
        text = MISSED  # the known curve says this prompt is missed
    answer_tokens = count_tokens(text, estimate)
    spent = spend(request.max_output_tokens, thoughts, answer_tokens)
    if config["thinking_only"]:  # the script says the budget went to thinking
        capped = min(thoughts, request.max_output_tokens)
        spent = spend(capped, capped, answer_tokens)
    thought_parts = [{"text": "Let me look for it.", "thought": True}] if spent.thoughts else []
    if spent.thoughts:
        usage["thoughtsTokenCount"] = spent.thoughts
    usage["totalTokenCount"] = prompt_tokens + spent.thoughts
    if config["block"]:
        candidate: dict[str, Any] = {"finishReason": "SAFETY"}
    elif spent.answer_tokens is None:
        # Thinking took the whole budget: no answer part and no candidatesTokenCount.
        candidate = {
            "content": {"role": "model", "parts": thought_parts},
            "finishReason": "MAX_TOKENS",
        }
    else:
        if spent.truncated:
            text = _first_tokens(text, spent.answer_tokens, estimate)
        candidate = {
            "content": {"role": "model", "parts": [*thought_parts, {"text": text}]},
            "finishReason": "MAX_TOKENS" if spent.truncated else "STOP",
        }
        usage["candidatesTokenCount"] = spent.answer_tokens
        usage["totalTokenCount"] += spent.answer_tokens
    return 200, {
        "candidates": [candidate],
        "usageMetadata": with_vertex_usage_details(usage, traffic),
        **reply_identity(config, request.model),
    }


def answer_text(prompt: str, fixed: str | None) -> str:
    """The scripted answer if there is one, else the right one."""
    return fixed if fixed is not None else right_answer(prompt)


def _first_tokens(text: str, count: int, estimate: bool) -> str:
    """The answer cut where the budget ran out."""
    if estimate:
        return text[: count * 4]
    from niah.models.tokenizer import get_tokenizer

    tokenizer = get_tokenizer()
    return tokenizer.decode(tokenizer.encode(text)[:count])


@dataclass(frozen=True)
class _ModelRequest:
    """What a generate call asks, from either API's body."""

    model: str
    prompt: str
    max_output_tokens: int
    budget: int | None = None
    level: str | None = None
    # maxOutputTokens as the request set it (None: unset, Vertex's default applies).
    asked_output_tokens: int | None = None
    # The X-Vertex-AI-LLM-Shared-Request-Type header (flex, priority), if sent.
    shared_request_type: str | None = None
    # The endpoint's location in the path (global, us, eu, a region).
    location: str = ""

    @classmethod
    def parse(cls, path: str, body: dict[str, Any]) -> _ModelRequest:
        """A Vertex ``generateContent`` body, or an OpenAI-style ``chat/completions`` one."""
        if path.endswith("/chat/completions"):
            limit = body.get("max_completion_tokens") or body.get("max_tokens")
            return cls(
                model=str(body.get("model", "")),
                prompt="\n".join(str(m.get("content", "")) for m in body.get("messages", [])),
                max_output_tokens=int(limit) if limit else DEFAULT_MAX_OUTPUT_TOKENS,
            )
        served = MODEL_IN_PATH.search(path)
        asked, budget, level = generation_limits(body)
        return cls(
            model=served.group(1) if served else "",
            prompt=_transcript(body.get("contents", [])),
            max_output_tokens=asked or DEFAULT_MAX_OUTPUT_TOKENS,
            budget=budget,
            level=level,
            asked_output_tokens=asked,
            location=located.group(1) if (located := LOCATION_IN_PATH.search(path)) else "",
        )


class _Handler(BaseHTTPRequestHandler):
    state: StandinState

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``/_standin/requests`` instead."""

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing to answer

    def do_GET(self) -> None:
        """Inspection: the requests seen so far; and batch jobs, got or listed."""
        routed = self.state.batch.handle("GET", self.path, {}, self.state.config, self._answer_line)
        if routed is not None:
            self._send(*routed)
        elif self.path.startswith("/_standin/requests"):
            with self.state.lock:
                self._send(200, {"requests": list(self.state.requests)})
        else:
            self._send(200, {"ok": True})

    def do_POST(self) -> None:
        """Model calls, and the stand-in's own configuration."""
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/_standin/config":
            self.state.reset(**body)
            self._send(200, {"config": self.state.config})
            return
        routed = self.state.batch.handle(
            "POST", self.path, body, self.state.config, self._answer_line
        )
        if routed is not None:
            self._send(*routed)
            return
        with self.state.lock:
            call_index = self.state.generates
            kind = "count" if self.path.endswith(":countTokens") else "generate"
            self.state.generates += kind == "generate"
            self.state.requests.append(
                {
                    "path": self.path,
                    "kind": kind,
                    "body": body,
                    "authorization": self.headers.get("Authorization"),
                    "shared_request_type": self.headers.get(SHARED_REQUEST_TYPE_HEADER),
                    "time": time.time(),
                }
            )
            latency = float(self.state.config["latency_seconds"])
        if kind == "count":
            time.sleep(float(self.state.config["count_latency_seconds"]))
            text = "".join(
                p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", [])
            )
            self._send(200, {"totalTokens": modelled_prompt_tokens(self.state.config, text)})
            return
        openai = self.path.endswith("/chat/completions")
        request = replace(
            _ModelRequest.parse(self.path, body),
            shared_request_type=self.headers.get(SHARED_REQUEST_TYPE_HEADER),
        )
        cached = _cached_prefix_tokens(self.state, request.prompt, request.model)  # on arrival
        if latency:
            time.sleep(latency)
        status, reply = _generate(self.state, request, call_index, cached)
        if status == 200 and self.state.config["implicit_cache"]:
            self.state.cache.add(request.prompt.encode())
        self._send(status, as_openai(status, reply) if openai else reply)

    def _answer_line(self, body: dict[str, Any], model: str) -> tuple[int, dict[str, Any]]:
        """A batch line answered as the online call with the same body would be."""
        path = f"/publishers/google/models/{model}:generateContent"
        with self.state.lock:
            call_index = self.state.generates
            self.state.requests.append(
                {"path": path, "kind": "batch_line", "body": body, "time": time.time()}
            )
        request = _ModelRequest.parse(path, body)
        cached = _cached_prefix_tokens(self.state, request.prompt, request.model)
        status, reply = _generate(self.state, request, call_index, cached)
        if status == 200 and self.state.config["implicit_cache"]:
            self.state.cache.add(request.prompt.encode())
        return status, reply


def _transcript(contents: list[dict[str, Any]]) -> str:
    """One prompt's text; a conversation of several turns written out as MRCR's are."""
    texts = ["".join(p.get("text", "") for p in c.get("parts", [])) for c in contents]
    if len(contents) == 1:
        return texts[0]
    return "\n\n".join(
        f"{'Assistant' if c.get('role') == 'model' else 'User'}: {text}"
        for c, text in zip(contents, texts, strict=True)
    )


class _Server(ThreadingHTTPServer):
    # Vertex takes a whole grid's calls at once; the standard backlog of 5 would reset
    # the connections of a burst (a naive 121-cell grid, many workers).
    request_queue_size = 256
    daemon_threads = True


def serve(
    port: int = 0, host: str = "127.0.0.1", **defaults: Any
) -> tuple[ThreadingHTTPServer, StandinState]:
    """Start the stand-in on a thread; port 0 picks a free one (``server.server_port``).

    ``defaults`` are config keys every reset returns to (``implicit_cache=True``).
    """
    state = StandinState(**defaults)
    handler = type("Handler", (_Handler,), {"state": state})
    server = _Server((host, port), handler)
    # A short poll: shutdown() waits up to one interval, and each test stops its own.
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, state


def main(argv: list[str] | None = None) -> None:
    """``python -m niah_devtools.standin --port P``: run the stand-in in the foreground."""
    parser = argparse.ArgumentParser(prog="niah-standin", description=__doc__)
    parser.add_argument("--port", type=int, default=8476)
    parser.add_argument(
        "--implicit-cache",
        action="store_true",
        help="model Vertex's implicit cache by default (a config reset keeps it on)",
    )
    args = parser.parse_args(argv)
    server, _ = serve(args.port, implicit_cache=args.implicit_cache)
    print(f"Vertex stand-in on http://127.0.0.1:{server.server_port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
