"""How much of a grid's model time a certificate of the local model takes (issue 54).

A simulation, not a measurement: the service's own planner (``plan_progress``, under the
plan a certify run of the local model is admitted with: its budget a quarter of the
grid's model seconds, each sample priced by the catalog's measured speed with the call's
whole output budget) asked on answers drawn at an assumed share per length. Each call's
true time is its prompt and its actual reply at that same speed, so a reply that ends
before the output budget costs less than the planner counted. Until 2026-12-06 the
budget was in prompt tokens, and the certificate took 48 % of the grid's time with
128-token replies (docs/certify.md): on a CPU the reply, not the prompt, is most of a
short call's time.

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
MODEL = "gemma-3-270m-local"
# Replies as long as the output budget (multi-value's run on to it, 356 tokens), and
# shorter ones that end.
REPLY_TOKENS = (356, 128, 16)


def call_seconds(length: int, reply_tokens: int) -> float:
    """One call's time at the catalog's measured speed: its prompt, then its reply."""
    from niah.catalog.models import find_model

    model = find_model(MODEL)
    speed = model.speed if model else None
    assert speed is not None, "the local model's entry gives its speed"
    return speed.seconds(length, reply_tokens)


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
            "model_name": MODEL,
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
