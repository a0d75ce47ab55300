"""An HTTP-level stand-in of the Vertex AI Gemini API (and of OpenAI-style chat).

It lets the real ``google-genai`` SDK (and our OpenAI-compatible provider) be exercised
offline: requests go over HTTP to ``generateContent`` / ``countTokens`` /
``chat/completions`` exactly as they would to Google. It "answers" like a perfect
retriever: the needle sentence found in the prompt, or a judge's "Score: N" for
judge prompts; token counts come from the Gemma 3 tokenizer (Gemini's vocabulary).

Faults are scripted through ``POST /_standin/config``: a latency, the first N calls
failing with a status, every call failing, blocked answers, an input limit. Every
request is counted and kept (``GET /_standin/requests``) for tests to inspect.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from niah.core.estimate import IMPLICIT_CACHE_MIN_TOKENS

NEEDLE = re.compile(r"The special magic ([\w ]+?) number is: (\d+)\.")
JUDGE = re.compile(r"Reference: (.*?)\nAnswer to grade: (.*?)\n", re.DOTALL)
MRCR_ASK = re.compile(
    r"Prepend (\S+) to the (\w+) (.+?) about (.+?) in a (\w+) style\. Do not include"
)
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def _mrcr_reply(transcript: str, asked: re.Match[str]) -> str:
    """A perfect MRCR answer: the prefix, then the asked reply to the repeated request."""
    prefix, ordinal, fmt, topic, style = asked.groups()
    request = f"User: Write a {fmt} about {topic} in {style} style.\n\nAssistant: "
    replies = [chunk.split("\n\nUser: ", 1)[0] for chunk in transcript.split(request)[1:]]
    index = ORDINALS.index(ordinal) if ordinal in ORDINALS else 0
    return prefix + replies[index] if index < len(replies) else "UNANSWERABLE"


class StandinState:
    """What the stand-in has been told to do, and what it has seen."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.config: dict[str, Any] = {}
        # Prompts answered, with when: what the modelled implicit cache holds.
        self.cache: list[tuple[float, bytes]] = []
        self.reset()

    def reset(self, **config: Any) -> None:
        """Clear the log and set a new script (see ``_script`` for the keys)."""
        with self.lock:
            self.requests = []
            self.cache = []
            self.config = {
                "latency_seconds": 0.0,
                "fail_first": 0,  # the first N generate calls fail with fail_status
                "fail_status": 429,
                "fail_always": False,
                "block": False,  # answer with finishReason SAFETY and no content
                "input_limit": 1_048_576,  # prompts above this get a 400
                "answer": None,  # a fixed answer text instead of retrieving
                "estimate_tokens": False,  # count len(text) // 4 instead of tokenizing
                # As a thinking model answers: N thought tokens (a thought part, billed
                # as output), and with thinking_only no answer at all (MAX_TOKENS).
                "thoughts_tokens": 0,
                "thinking_only": False,
                # Prompt tokens reported as served from the implicit cache.
                "cached_tokens": 0,
                # Vertex's implicit caching, modelled: a prompt whose prefix matches a
                # prompt answered within the window is billed that prefix as cached,
                # if it is at least the minimum (see _cached_prefix_tokens).
                "implicit_cache": False,
                "cache_min_tokens": IMPLICIT_CACHE_MIN_TOKENS,
                "cache_window_seconds": 300.0,
                # A blocked prompt: no candidates, promptFeedback.blockReason.
                "prompt_block": None,
                **config,
            }


def _count_tokens(text: str, estimate: bool = False) -> int:
    if estimate:  # for load tests, where tokenizing megabytes would be the bottleneck
        return len(text) // 4
    from niah.models.tokenizer import get_tokenizer

    return len(get_tokenizer().encode(text))


def _answer_text(prompt: str, fixed: str | None) -> str:
    if fixed is not None:
        return fixed
    judged = JUDGE.search(prompt)
    if judged:
        reference, answer = judged.groups()
        number = re.search(r"\d{5,}", reference)
        good = number.group(0) in answer if number else reference.strip() in answer
        return (
            "Score: 10\nThe answer states the reference fact."
            if good
            else ("Score: 1\nThe answer does not contain the reference fact.")
        )
    asked = MRCR_ASK.search(prompt)
    if asked:
        return _mrcr_reply(prompt, asked)
    found = NEEDLE.search(prompt)
    if found:
        return f"The special magic {found.group(1)} number is: {found.group(2)}."
    return "UNANSWERABLE"


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


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two long byte strings, by halving.

    Each step is one C-speed copy and compare (a megabyte prompt takes milliseconds;
    a memoryview compare, element by element, was 60 times slower).
    """
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a.startswith(b[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


def _cached_prefix_tokens(state: StandinState, prompt: str) -> int:
    """Tokens of ``prompt`` the modelled implicit cache serves, looked up on arrival.

    Vertex AI's context-cache overview (cloud.google.com/vertex-ai/generative-ai/docs/
    context-cache/context-cache-overview, read 2026-11-26): implicit caching is on by
    default, bills cache hits at a 90 % discount, needs at least 2,048 tokens, and hits
    when requests with a similar prefix come "in a short amount of time". The model:
    the longest prefix shared with a prompt already answered within the window (the
    window's length is not published; 300 s here), counted if at least the minimum.
    Optimistic: Vertex does not promise a hit.
    """
    config = state.config
    if not config["implicit_cache"]:
        return min(int(config["cached_tokens"]), len(prompt))
    now = time.time()
    with state.lock:
        window = float(config["cache_window_seconds"])
        state.cache = [(t, p) for t, p in state.cache if now - t <= window]
        answered = [p for _, p in state.cache]
    data = prompt.encode()
    shared = max((_common_prefix(data, p) for p in answered), default=0)
    head = data[:shared].decode(errors="ignore")  # a cut inside a character drops it
    tokens = _count_tokens(head, bool(config["estimate_tokens"]))
    return tokens if tokens >= int(config["cache_min_tokens"]) else 0


def _generate(
    state: StandinState, prompt: str, call_index: int, cached: int = 0
) -> tuple[int, dict[str, Any]]:
    config = state.config
    if config["fail_always"] or call_index < config["fail_first"]:
        status = int(config["fail_status"])
        message = {
            429: "Resource exhausted. Please try again later.",
            403: "Permission denied on resource project.",
            404: "Publisher Model was not found or your project does not have access.",
        }
        return _error(status, message.get(status, "The service is currently unavailable."))
    estimate = bool(config["estimate_tokens"])
    prompt_tokens = _count_tokens(prompt, estimate)
    if prompt_tokens > int(config["input_limit"]):
        return _error(
            400,
            f"The input token count ({prompt_tokens}) exceeds the maximum "
            f"number of tokens allowed ({config['input_limit']}).",
        )
    usage: dict[str, Any] = {"promptTokenCount": prompt_tokens}
    cached = min(cached, prompt_tokens)
    if cached:
        usage["cachedContentTokenCount"] = cached
    if config["prompt_block"]:
        usage["totalTokenCount"] = prompt_tokens
        return 200, {
            "promptFeedback": {"blockReason": config["prompt_block"]},
            "usageMetadata": usage,
        }
    thoughts = int(config["thoughts_tokens"])
    thought_parts = [{"text": "Let me look for it.", "thought": True}] if thoughts else []
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    if config["block"]:
        candidate: dict[str, Any] = {"finishReason": "SAFETY"}
        usage["totalTokenCount"] = prompt_tokens + thoughts
    elif config["thinking_only"]:
        # The budget went to thinking: no answer part and no candidatesTokenCount.
        candidate = {
            "content": {"role": "model", "parts": thought_parts},
            "finishReason": "MAX_TOKENS",
        }
        usage["totalTokenCount"] = prompt_tokens + thoughts
    else:
        text = _answer_text(prompt, config["answer"])
        output_tokens = _count_tokens(text, estimate)
        candidate = {
            "content": {"role": "model", "parts": [*thought_parts, {"text": text}]},
            "finishReason": "STOP",
        }
        usage |= {
            "candidatesTokenCount": output_tokens,
            "totalTokenCount": prompt_tokens + output_tokens + thoughts,
        }
    return 200, {"candidates": [candidate], "usageMetadata": usage}


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
        """Inspection: the requests seen so far."""
        if self.path.startswith("/_standin/requests"):
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
        with self.state.lock:
            call_index = sum(1 for r in self.state.requests if r["kind"] == "generate")
            kind = "count" if self.path.endswith(":countTokens") else "generate"
            self.state.requests.append(
                {
                    "path": self.path,
                    "kind": kind,
                    "body": body,
                    "authorization": self.headers.get("Authorization"),
                    "time": time.time(),
                }
            )
            latency = float(self.state.config["latency_seconds"])
        if kind == "count":
            text = "".join(
                p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", [])
            )
            self._send(200, {"totalTokens": _count_tokens(text)})
            return
        openai = self.path.endswith("/chat/completions")
        prompt = (
            "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            if openai
            else _transcript(body.get("contents", []))
        )
        cached = _cached_prefix_tokens(self.state, prompt)  # prefill looks up on arrival
        if latency:
            time.sleep(latency)
        status, reply = _generate(self.state, prompt, call_index, cached)
        if status == 200 and self.state.config["implicit_cache"]:
            with self.state.lock:
                self.state.cache.append((time.time(), prompt.encode()))
        self._send(status, _as_openai(status, reply) if openai else reply)


def _transcript(contents: list[dict[str, Any]]) -> str:
    """One prompt's text; a conversation of several turns written out as MRCR's are."""
    texts = ["".join(p.get("text", "") for p in c.get("parts", [])) for c in contents]
    if len(contents) == 1:
        return texts[0]
    return "\n\n".join(
        f"{'Assistant' if c.get('role') == 'model' else 'User'}: {text}"
        for c, text in zip(contents, texts, strict=True)
    )


def _as_openai(status: int, reply: dict[str, Any]) -> dict[str, Any]:
    if status != 200:
        return {"error": {"message": reply["error"]["message"], "code": status}}
    candidate = reply["candidates"][0]
    parts = candidate.get("content", {}).get("parts", [])
    usage = reply["usageMetadata"]
    return {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": parts[0]["text"] if parts else ""},
                "finish_reason": "stop"
                if candidate["finishReason"] == "STOP"
                else "content_filter",
            }
        ],
        "usage": {
            "prompt_tokens": usage["promptTokenCount"],
            "completion_tokens": usage.get("candidatesTokenCount", 0),
        },
    }


class _Server(ThreadingHTTPServer):
    # Vertex takes a whole grid's calls at once; the standard backlog of 5 would reset
    # the connections of a burst (a naive 121-cell grid, many workers).
    request_queue_size = 256
    daemon_threads = True


def serve(port: int = 0, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, StandinState]:
    """Start the stand-in on a thread; port 0 picks a free one (``server.server_port``)."""
    state = StandinState()
    handler = type("Handler", (_Handler,), {"state": state})
    server = _Server((host, port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def main(argv: list[str] | None = None) -> None:
    """``python -m niah_devtools.standin --port P``: run the stand-in in the foreground."""
    parser = argparse.ArgumentParser(prog="niah-standin", description=__doc__)
    parser.add_argument("--port", type=int, default=8476)
    args = parser.parse_args(argv)
    server, _ = serve(args.port)
    print(f"Vertex stand-in on http://127.0.0.1:{server.server_port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
