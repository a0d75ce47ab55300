"""Certify a model's effective length adaptively: bisection over lengths, samples in rounds.

A grid answers "up to what length can I trust this model?" by buying every (length,
depth) point; most of that money goes to lengths far from the answer. Certification
asks only where the answer is decided. The candidate lengths are fixed up front; a
bracket ``[lo, hi)`` holds the longest length known to pass and the shortest known to
fail (none at first). Each round looks at one length, the middle candidate of the
bracket: it adds samples there (depths drawn per sample, stratified over the grid's
depths) and asks whether the mean score is at or above the threshold, below it, or not
yet known. The bracket closes when no untried candidate is left inside it, or the
budget is spent. The effective length is then the longest length certified to pass.

**The stopping rule, honestly.** Looking at an interval after every round and stopping
when it clears the threshold is optional stopping: a 95 % interval checked that way
covers less than 95 % of the time. Each round ``t`` therefore uses the service's own
interval (Wilson for right/wrong scores, the bootstrap for graded ones;
``niah.core.results.uncertainty``) at level ``1 - alpha_t`` with
``alpha_t = alpha * 6 / (pi^2 t^2)``. The ``alpha_t`` sum to ``alpha`` over
``t = 1, 2, ...``, so by the union bound every round's interval covers its length's
true mean at once with probability at least ``1 - alpha``: the discrete time-uniform
schedule of Howard, Ramdas, McAuliffe and Sekhon (2021), "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Annals of Statistics 49(2), 1055-1080. Then every
pass and fail verdict is right, and, if the score does not rise with length (the
assumption bisection rests on), so is the bracket. The Wilson interval's own coverage
is approximate at small n; that is the service's interval everywhere else too.

The planner is a pure function of the scores stored so far (in sample order per
length): it replays every round from the start, so a retried or duplicated step plans
the same round, and the cells it asks for have the same IDs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

# The service's 95 % (niah.core.results.uncertainty.CONFIDENCE), kept here so the
# dispatcher, which plans a run's first round, never loads the interval code's numpy.
CONFIDENCE = 0.95
# The interval of a mean of scores in [0, 1] at a confidence level, in percent (low,
# high), or None: the service's own, ``niah.core.results.uncertainty.interval``, passed
# in by the worker and the report (the dispatcher's first round looks at nothing).
IntervalOf = Callable[[Sequence[float], float], tuple[float, float] | None]


PASS, FAIL, OPEN = "pass", "fail", "open"
# A look at most this many times the samples of the last: an early, noisy mean never
# commits the budget to one length at once.
GROWTH = 4


@dataclass(frozen=True)
class CertifyPlan:
    """What a certification may do: its lengths, threshold, confidence and budget.

    ``lengths``: the candidate lengths, ascending (a grid's lengths over the range).
    ``threshold``: the mean score (percent) a length must reach. ``first_look``: the
    samples of a length's first round, small so a clear failure costs little.
    ``max_samples``: a length is left open past this many samples. ``budget``: the
    most the rounds may cost, in the unit of ``cost`` (a sample at a length), None for
    no limit; ``max_total_samples`` the most samples over all lengths (the service's
    cells-per-run limit) and ``max_tokens`` the most prompt tokens (a sample at a length
    is that many), None for no limit.
    """

    lengths: tuple[int, ...]
    threshold: float
    confidence: float = CONFIDENCE
    first_look: int = 8
    max_samples: int = 256
    budget: float | None = None
    max_total_samples: int | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if list(self.lengths) != sorted(set(self.lengths)) or not self.lengths:
            raise ValueError("certify lengths must be distinct and ascending")
        if not 0 < self.threshold <= 100:
            raise ValueError("certify threshold is a percent in (0, 100]")


@dataclass(frozen=True)
class Look:
    """One round's look at one length: its samples so far, mean and verdict."""

    round: int
    length: int
    samples: int
    mean: float  # percent
    low: float | None
    high: float | None
    level: float  # the interval's confidence this round (1 - alpha_t)
    verdict: str  # PASS, FAIL or OPEN


@dataclass(frozen=True)
class Certificate:
    """The answer: the longest length certified to pass, and what it took.

    ``length``: the longest candidate whose mean is at or above the threshold with the
    plan's confidence (None: not even the shortest). ``below``: the shortest candidate
    certified to fail (None: none failed, so the answer is "at least ``length``").
    ``determined``: no untried candidate lies between them. ``reason``: why it stopped.
    """

    length: int | None
    below: int | None
    determined: bool
    reason: str  # "determined", "budget", "undecided" (lengths left open at max_samples)
    open_lengths: tuple[int, ...]
    samples: int
    tokens: int  # the prompt tokens of the samples looked at
    cost: float  # the same in the plan's unit (dollars, or tokens)
    looks: tuple[Look, ...]

    def as_dict(self) -> dict[str, Any]:
        """As stored on the run and written to results."""
        return {
            "length": self.length,
            "below": self.below,
            "determined": self.determined,
            "reason": self.reason,
            "open_lengths": list(self.open_lengths),
            "samples": self.samples,
            "tokens": self.tokens,
            "cost": self.cost,
            "looks": [look.__dict__ for look in self.looks],
        }


@dataclass(frozen=True)
class Round:
    """The next round: bring ``length`` to ``samples`` samples (it has fewer)."""

    round: int
    length: int
    samples: int


@dataclass
class Progress:
    """Where a certification stands: the next round, or the certificate."""

    looks: list[Look] = field(default_factory=list)
    next_round: Round | None = None
    certificate: Certificate | None = None


def round_alpha(t: int, confidence: float = CONFIDENCE) -> float:
    """Round ``t``'s share of ``1 - confidence``: alpha * 6 / (pi^2 t^2), summing to alpha."""
    return (1 - confidence) * 6 / (math.pi**2 * t**2)


def _z(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence``."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def samples_to_pass(t: int, threshold: float, confidence: float = CONFIDENCE) -> int:
    """The fewest samples, all right, whose round-``t`` Wilson interval clears ``threshold``.

    All right, the Wilson lower bound is n / (n + z^2); it reaches p when
    n >= z^2 p / (1 - p). A look with fewer samples can fail a length but never pass it.
    """
    p = min(threshold / 100, 0.999)
    z = _z(1 - round_alpha(t, confidence))
    return math.ceil(z * z * p / (1 - p) - 1e-9)


def _look_size(t: int, looked: Sequence[float], plan: CertifyPlan) -> int:
    """How many samples round ``t`` looks at, given those already looked at.

    A first look is small (``first_look``): a clear failure costs little. After that,
    the fewest samples at which, if the mean seen so far held, round ``t``'s Wilson
    interval would clear the threshold (above it, or below it): at least half as many
    again as before (every round spends some of the confidence), at most ``GROWTH``
    times as many (an early, noisy mean never commits the budget to one length).
    """
    have = len(looked)
    if not have:
        return plan.first_look
    p, threshold = sum(looked) / have, plan.threshold / 100
    z = _z(1 - round_alpha(t, plan.confidence))
    least, most = math.ceil(1.5 * have), GROWTH * have
    for n in range(least, most + 1):
        low, high = _wilson(p, n, z)
        if low >= threshold or high < threshold:
            return n
    return most


def _wilson(p: float, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval of a share ``p`` of ``n`` samples, as fractions.

    Only to size a round: the verdict is the service's own interval.
    """
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def plan_progress(
    plan: CertifyPlan,
    scores: Mapping[int, Sequence[float]],
    interval_of: IntervalOf,
    cost: Callable[[int], float] = float,
) -> Progress:
    """Replay the certification over the stored scores and say what comes next.

    ``scores``: each length's scores (in [0, 1]) in sample order. The answer is a round
    to run, or the certificate. ``cost(length)``: one sample's cost at a length
    (default: its tokens), for the budget.
    """
    lengths = plan.lengths
    lo, hi = -1, len(lengths)  # the bracket, as indices: lo passes, hi fails
    seen: dict[int, int] = {}  # samples looked at per length index
    open_at_cap: set[int] = set()
    unaffordable: set[int] = set()  # left open: their next look did not fit the budget
    deferred: set[int] = set()  # asked again once the cheaper candidates are settled
    revisited: set[int] = set()
    progress = Progress()
    spent = 0.0
    current: int | None = None  # a length looked at and still open
    t = 0
    while True:
        left_open = open_at_cap | unaffordable
        inside = [i for i in range(lo + 1, hi) if i not in left_open | deferred]
        if current is None and not inside and deferred & set(range(lo + 1, hi)):
            revisited |= deferred  # every cheaper question is settled: back to the hard one
            deferred.clear()
            continue
        if current is None:
            if not inside:
                return _finish(progress, plan, lo, hi, open_at_cap, unaffordable, spent)
            current = inside[len(inside) // 2]
        t += 1
        have = seen.get(current, 0)
        stored = scores.get(lengths[current], ())
        wanted = min(_look_size(t, stored[:have], plan), plan.max_samples)
        extra = (wanted - have) * cost(lengths[current])
        if plan.budget is not None and have and current not in revisited:
            # A length near the threshold takes many samples to settle; its neighbours
            # may settle the answer for less, so it waits while they are asked first.
            steps = math.ceil(math.log2(len(inside) + 1))
            if extra > (plan.budget - spent) / max(steps, 1):
                deferred.add(current)
                current, t = None, t - 1
                continue
        more = wanted - have
        over_count = (
            plan.max_total_samples is not None
            and sum(seen.values()) + more > plan.max_total_samples
        ) or (
            plan.max_tokens is not None
            and sum(lengths[i] * n for i, n in seen.items()) + more * lengths[current]
            > plan.max_tokens
        )
        if over_count or (plan.budget is not None and spent + extra > plan.budget + 1e-9):
            # Left open: the rest of the budget may still settle a cheaper candidate.
            unaffordable.add(current)
            current, t = None, t - 1
            continue
        if len(stored) < wanted:
            progress.next_round = Round(t, lengths[current], wanted)
            return progress
        spent += extra
        seen[current] = wanted
        look = _look(t, lengths[current], stored[:wanted], plan, interval_of)
        progress.looks.append(look)
        if look.verdict == PASS:
            lo, current = current, None
        elif look.verdict == FAIL:
            hi, current = current, None
        elif wanted >= plan.max_samples:
            open_at_cap.add(current)
            current = None


def _look(
    t: int, length: int, scores: Sequence[float], plan: CertifyPlan, interval_of: IntervalOf
) -> Look:
    """Round ``t``'s verdict on ``length`` from its first samples."""
    level = 1 - round_alpha(t, plan.confidence)
    found = interval_of([float(s) for s in scores], level)
    mean = 100 * sum(scores) / len(scores)
    low, high = found if found else (None, None)
    if low is not None and low >= plan.threshold:
        verdict = PASS
    elif high is not None and high < plan.threshold:
        verdict = FAIL
    else:
        verdict = OPEN
    return Look(t, length, len(scores), round(mean, 2), low, high, level, verdict)


def _finish(
    progress: Progress,
    plan: CertifyPlan,
    lo: int,
    hi: int,
    open_at_cap: set[int],
    unaffordable: set[int],
    spent: float,
) -> Progress:
    """The certificate once no candidate inside the bracket can be looked at."""
    inside = range(lo + 1, hi)
    determined = not inside
    reason = "determined"
    if not determined:  # what kept the bracket open: the budget, or lengths at max_samples
        reason = "budget" if any(i in unaffordable for i in inside) else "undecided"
    last = _last_looks(progress.looks)
    samples = sum(look.samples for look in last)
    progress.certificate = Certificate(
        length=plan.lengths[lo] if lo >= 0 else None,
        below=plan.lengths[hi] if hi < len(plan.lengths) else None,
        determined=determined,
        reason=reason,
        open_lengths=tuple(plan.lengths[i] for i in inside),
        samples=samples,
        tokens=sum(look.samples * look.length for look in last),
        cost=spent,
        looks=tuple(progress.looks),
    )
    return progress


def _last_looks(looks: Sequence[Look]) -> list[Look]:
    """Each length's last look (its samples are cumulative)."""
    last: dict[int, Look] = {}
    for look in looks:
        last[look.length] = look
    return list(last.values())
