"""The shapes of the Vertex stand-in's replies that every answer shares.

Who answered and which reply it is (Vertex's ``modelVersion``, ``createTime`` and
``responseId``), and a Vertex reply rewritten as an OpenAI-style chat completion.
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
from typing import Any

from niah_devtools.standin_tiers import served_traffic_type


def reply_identity(config: dict[str, Any], model: str) -> dict[str, str]:
    """Who answered and which reply this is, as Vertex's generateContent says it.

    Google's reference of ``GenerateContentResponse`` (aiplatform v1, docs.cloud.google.
    com/python/docs/reference/aiplatform/latest/google.cloud.aiplatform_v1.types.
    GenerateContentResponse, and the JSON names of googleapis.dev/dotnet/Google.Apis.
    Aiplatform.v1 ``GoogleCloudAiplatformV1GenerateContentResponse``; read 2026-11-27):
    top-level ``modelVersion`` ("the model version used to generate the response"),
    ``createTime`` (a Timestamp: RFC 3339, UTC, "Z") and ``responseId``. A recorded
    Vertex reply (github.com/inputhacker/ai_generated_code, rest_examples/
    vertexai_gemini_flash.sh, read 2026-11-27) shows their form: ``"modelVersion":
    "gemini-2.0-flash-001"`` for that ID asked, ``"createTime":
    "2025-06-18T14:45:09.008876Z"``, ``"responseId": "9dBSaKxFwKTr3g_RjJXICg"`` (22
    URL-safe base64 characters: 16 bytes). ``served_versions`` models a routed ID.
    """
    served = (config.get("served_versions") or {}).get(model, model)
    stamp = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    return {
        "modelVersion": served,
        "createTime": stamp,
        "responseId": base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("="),
    }


def traffic_type_for(
    config: dict[str, Any], shared_request_type: str | None, model: str = "", location: str = ""
) -> str | None:
    """The ``trafficType`` Vertex names for a call that sent this tier header.

    ``standin_tiers`` holds Google's header, and the models and endpoints each tier is
    offered on (read 2026-12-04); a tier asked where it is not offered is served
    standard (ON_DEMAND). google-genai 2.34's ``TrafficType`` names ON_DEMAND,
    ON_DEMAND_FLEX and ON_DEMAND_PRIORITY. A script may name another
    (``traffic_type``), or none at all (``traffic_type: ""``: a reply that is silent).
    """
    scripted = config.get("traffic_type")
    if scripted is not None:
        return scripted or None
    return served_traffic_type(shared_request_type, model, location)


def with_vertex_usage_details(
    usage: dict[str, Any], traffic_type: str | None = "ON_DEMAND"
) -> dict[str, Any]:
    """``usageMetadata`` with the fields real Vertex replies carry besides the counts.

    Recorded Vertex batch lines (tests/data/google_recorded: batch_line_max_tokens.json
    from docs.litellm.ai/docs/providers/vertex_batch, batch_line_unknown_fields.json
    from github.com/dllewellyn/reflex; read 2026-11-27) carry per-modality token details
    and ``trafficType``, and one carries ``billablePromptUsage``, which google-genai's
    models lack: the stand-in sends it too, so every reader meets a field it does not know.
    """
    details = dict(usage)
    details["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": usage["promptTokenCount"]}]
    if "candidatesTokenCount" in usage:
        details["candidatesTokensDetails"] = [
            {"modality": "TEXT", "tokenCount": usage["candidatesTokenCount"]}
        ]
    if traffic_type:
        details["trafficType"] = traffic_type
    details["billablePromptUsage"] = {"textCount": usage["promptTokenCount"] * 4}
    return details


OPENAI_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}


def as_openai(status: int, reply: dict[str, Any]) -> dict[str, Any]:
    """A Vertex reply (or error) as an OpenAI-style ``chat/completions`` one."""
    if status != 200:
        return {"error": {"message": reply["error"]["message"], "code": status}}
    candidate = reply["candidates"][0]
    parts = candidate.get("content", {}).get("parts", [])
    answer = "".join(p["text"] for p in parts if not p.get("thought"))
    usage = reply["usageMetadata"]
    thoughts = usage.get("thoughtsTokenCount", 0)
    created = dt.datetime.fromisoformat(reply["createTime"].replace("Z", "+00:00"))
    # OpenAI's chat completion object: "id", "object": "chat.completion", "created" in
    # Unix seconds, and "model", the model that answered (OpenAI's API reference, as
    # mirrored by learn.microsoft.com/javascript/api/@azure-rest/ai-inference/
    # chatcompletionsoutput and docs.rs/deepseek-sdk chat::Chat; read 2026-11-27).
    return {
        "id": f"chatcmpl-{reply['responseId']}",
        "object": "chat.completion",
        "created": int(created.timestamp()),
        "model": reply["modelVersion"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer},
                "finish_reason": OPENAI_FINISH.get(candidate["finishReason"], "content_filter"),
            }
        ],
        "usage": {
            "prompt_tokens": usage["promptTokenCount"],
            # OpenAI counts reasoning inside the completion, and names it apart.
            "completion_tokens": usage.get("candidatesTokenCount", 0) + thoughts,
            "completion_tokens_details": {"reasoning_tokens": thoughts},
        },
    }
