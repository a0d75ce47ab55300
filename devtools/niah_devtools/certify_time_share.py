"""How much of a grid's model time a certificate of the local model takes (issue 54).

A simulation, not a measurement: the service's own planner (``plan_progress``, under the
plan a certify run of the local model is admitted with: its budget in prompt tokens)
asked on answers drawn at an assumed share per length, with each call's time modelled
as its prompt at ``PREFILL_PER_SECOND`` tokens a second (growing with the length, as
attention does) plus its reply at ``DECODE_PER_SECOND``. Rough figures of the local
model on two cores (2026-12-06): a 7,600-token prompt in about 17 s, replies at about 20
to 30 tokens a second. It shows why docs/certify.md's measured share of model seconds
(64.7 %) is far above the share of prompt tokens (21.9 %): on a CPU the reply, not the
prompt, is most of a call's time.

    .venv/bin/python -m niah_devtools.certify_time_share
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

LENGTHS = (250, 500, 1000, 2000, 4000, 8000, 16000)
# The local model's multi-value curve as read off its raw answers to 2,000 tokens, then
# assumed to keep falling.
SHARES = (1.0, 0.98, 0.83, 0.58, 0.30, 0.10, 0.0)
DEPTHS = 3
PREFILL_PER_SECOND = 600.0
DECODE_PER_SECOND = 25.0
CONTEXT = 32_768  # the local model's window: attention's cost grows towards it
REPLY_TOKENS = (128, 48, 16)


def call_seconds(length: int, reply_tokens: int) -> float:
    """One call's modelled time: its prompt, then its reply."""
    return length / PREFILL_PER_SECOND * (1 + length / CONTEXT) + reply_tokens / DECODE_PER_SECOND


@dataclass(frozen=True)
class TimeShare:
    """The certificate's share of the grid's model time over the seeds, and its answers."""

    reply_tokens: int
    mean: float
    worst: float
    answers: dict[str | int, int]


def simulate(reply_tokens: int, seeds: int = 40) -> TimeShare:
    """The certificate's model time over the grid's (5 samples a point), seed by seed."""
    import niah.tasks  # noqa: F401  (the task registry, before a request is read)
    from niah.core.request.spec import RunRequest
    from niah.core.results.certify import plan_progress
    from niah.core.results.certify_run import GRID_SAMPLES, certify_plan, plan_record, sample_cost

    spec = RunRequest.model_validate(
        {
            "model_name": "gemma-3-270m-local",
            "task": "multi_value",
            "context_lengths": list(LENGTHS),
            "document_depth_percents": [10, 50, 90][:DEPTHS],
            "mode": "certify",
        }
    )
    record = plan_record(spec, 500)
    plan, cost = certify_plan(spec, record=record), sample_cost(record)
    share = dict(zip(LENGTHS, SHARES, strict=True))
    grid = GRID_SAMPLES * DEPTHS * sum(call_seconds(n, reply_tokens) for n in LENGTHS)
    shares: list[float] = []
    answers: dict[str | int, int] = {}
    for seed in range(seeds):
        rng = random.Random(seed)
        scores: dict[int, list[float]] = {}
        while (progress := plan_progress(plan, scores, cost)).next_round:
            asked = progress.next_round
            have = scores.setdefault(asked.length, [])
            have += [
                float(rng.random() < share[asked.length]) for _ in range(len(have), asked.samples)
            ]
        spent = sum(call_seconds(n, reply_tokens) * len(s) for n, s in scores.items())
        shares.append(spent / grid)
        found = progress.certificate
        key = "none" if found is None or found.length is None else found.length
        answers[key] = answers.get(key, 0) + 1
    return TimeShare(reply_tokens, statistics.fmean(shares), max(shares), answers)


def main() -> None:
    """Print the share of the grid's model time by reply length."""
    print(f"lengths {LENGTHS}, assumed shares {SHARES}, {DEPTHS} depths, 40 seeds")
    for tokens in REPLY_TOKENS:
        found = simulate(tokens)
        print(
            f"replies of {tokens} tokens: certify takes {100 * found.mean:.1f} % of the grid's "
            f"model time (worst {100 * found.worst:.1f} %); certified {found.answers}"
        )


if __name__ == "__main__":
    main()
