"""What a batch job that ends partway costs, beside the batch figure of the estimate.

Google bills a batch job's completed requests only: a job unfinished 24 hours after it
started running is cancelled and only its completed requests are billed, and a job
cancelled returns its completed work and is billed for that alone (Vertex AI "Batch
inference with Gemini", "Quotas and limits": cloud.google.com/vertex-ai/generative-ai/
docs/multimodal/batch-prediction-gemini, read 2026-11-27, and its zh-CN copy under
docs.cloud.google.com/gemini-enterprise-agent-platform/models/capabilities/
batch-inference, read 2026-12-05). Google is silent on ``JOB_STATE_PARTIALLY_SUCCEEDED``
itself, and on whether a failed line is billed. So, as the settle
(``niah.service.batch.settle``) spends: a job's answered lines are billed at the batch
rate (the batch figure); lines it never wrote are not billed, not bought online, and
asked again at the batch rate by a resume; a failed line may go online at the online
rate, at most ``batch_online_fallback_max`` a job. That last is the one cost beyond the
batch figure, and what this module bounds.
"""

from __future__ import annotations

from typing import Any

from niah.core.money.pricing import Cost
from niah.core.money.tier_prices import CallTokens, price_calls
from niah.core.request.spec import RunRequest
from niah.settings import get_settings


def partial_job_figures(spec: RunRequest, calls: list[CallTokens]) -> dict[str, Any]:
    """The online fallback's most, a job: its cap of failed lines at their online price.

    ``calls``: the run's model calls, nothing cached (as the batch figure takes them).
    The cap's costliest calls are priced at the run's online tier: the most one job's
    failed lines can add to the batch figure.
    """
    cap = get_settings().batch_online_fallback_max
    tier = spec.call_tier()
    priced = [
        (price_calls(spec.model_name, [call], tier=tier), call) for call in calls
    ]  # fmt: skip
    costliest = sorted(priced, key=lambda pair: pair[0].usd, reverse=True)[:cap]
    total = sum((cost for cost, _ in costliest), Cost(0.0, priced=True))
    return {
        "online_fallback_lines_per_job": cap,
        "online_fallback_usd_per_job_at_most": round(total.usd, 6) if total.priced else None,
        "unwritten_lines": "not billed by Google; not bought online; asked again by a resume",
    }


def partial_job_note(figures: dict[str, Any]) -> str:
    """The partial job's costs in words, for the estimate's notes."""
    most = figures["online_fallback_usd_per_job_at_most"]
    dollars = f"${most:.4f}" if most is not None else "an unknown sum (no price)"
    return (
        "a batch job that ends partway (PARTIALLY_SUCCEEDED, cancelled, expired) is billed "
        "only for the lines it completed (Google); lines it never wrote are not bought online "
        "but refused, for a resume to ask again at the batch rate; its failed lines may go "
        f"online at the online rate, at most {figures['online_fallback_lines_per_job']} a job "
        f"(NIAH_BATCH_ONLINE_FALLBACK_MAX): at most {dollars} a job above the batch figure"
    )
