"""Certify a model's effective length adaptively: bisection over lengths, samples in rounds.

A grid answers "up to what length can I trust this model?" by buying every (length,
depth) point; most of that money goes to lengths far from the answer. Certification
asks only where the answer is decided. The candidate lengths are fixed up front; a
bracket ``[lo, hi)`` holds the longest length known to pass and the shortest known to
fail (none at first). Each round looks at one length, the middle candidate of the
bracket: it adds samples there (each at a depth drawn at random from the grid's) and
asks whether the mean score is at or above the threshold, below it, or not yet known.
The bracket closes when no candidate is left inside it, or the budget is spent. The
effective length is then the longest length certified to pass.

**The stopping rule, honestly.** Looking at an interval after every round and stopping
when it clears the threshold is optional stopping: a fixed-n 95 % interval checked that
way covers less than 95 % of the time. Each length's verdict is therefore an always-valid
test (``niah.core.results.confidence_sequence``: Robbins' beta-binomial mixture, Howard
et al. 2021, mixed on one side): "pass" shows the share above the threshold, "fail"
below it, each at level ``1 - alpha / K`` for the ``K`` candidate lengths, and each
holds at every sample size at once whatever the planner does. Of a length's two
verdicts only one can be wrong (at or above the threshold, only "fail"; below, only
"pass"), so the union bound over the ``K`` lengths (a set fixed in advance) makes every
verdict right together with probability at least ``1 - alpha``. Then, if the score does
not rise with length (the assumption bisection rests on), so is the bracket. The
samples at a length are independent draws of a right/wrong outcome with the length's
mean over depths as its chance (a random depth each; a graded score is turned into
right/wrong by a seeded draw with its value as the chance, which keeps the mean:
``niah.core.results.certify_run``).

The planner is a pure function of the scores stored so far (in sample order per
length): it replays every round from the start, so a retried or duplicated step plans
the same round, and the cells it asks for have the same IDs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from niah.core.results.confidence_sequence import (
    bounds,
    fixed_bounds,
    shows_above,
    shows_below,
)

# The service's 95 % (niah.core.results.uncertainty.CONFIDENCE), kept here so the
# dispatcher, which plans a run's first round, never loads the interval code's numpy.
CONFIDENCE = 0.95


PASS, FAIL, OPEN, BASE = "pass", "fail", "open", "base"
# The rules a threshold is set by (niah.core.results.effective): RULER's fixed 85.6 %,
# or NoLiMa's share of the model's own base score at a short length.
RULER, NOLIMA = "ruler", "nolima"
NOLIMA_SHARE = 0.85
# NoLiMa's base: the first look at the shortest candidate (at most 1,000 tokens), this
# many samples, once; its bounds make the threshold a band (see ``Thresholds``). Many:
# at the shortest length a sample is cheap (512 at 1,000 tokens are 0.3 % of an 11 x 11
# x 5 grid's tokens over 1K-1M), and with 48 the band of a base near 80 % reached the
# base itself, so nothing could pass.
BASE_SAMPLES = 1024
# Under NoLiMa's rule a length's share is tested against a band below the base, often
# near 80 % where right/wrong varies most: it is given up to this many samples (with
# 256, a model right 80 % of the time at best was within one length in 5 of 10 seeds,
# with 512 in 9; scripts/bench.sh --only certify_nolima).
NOLIMA_MAX_SAMPLES = 512
# A length's first look (small: a clear failure costs little) and the most samples it
# is given before it is left open.
FIRST_LOOK = 8
MAX_SAMPLES = 256
# A look at most this many times the samples of the last: an early, noisy mean never
# commits the budget to one length at once.
GROWTH = 4
# A length is judged too close to call (and waits for its neighbours) only once it has
# this many first looks' worth of samples: 8 samples say little of a share near 86 %.
DEFER_AFTER = 4


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
    first_look: int = FIRST_LOOK
    max_samples: int = 0  # 0: MAX_SAMPLES, or NOLIMA_MAX_SAMPLES under NoLiMa's rule
    budget: float | None = None
    max_total_samples: int | None = None
    max_tokens: int | None = None
    rule: str = RULER
    base_samples: int = BASE_SAMPLES

    def __post_init__(self) -> None:
        if not self.max_samples:
            cap = NOLIMA_MAX_SAMPLES if self.rule == NOLIMA else MAX_SAMPLES
            object.__setattr__(self, "max_samples", cap)
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
    low: float  # the sequence's bounds, percent
    high: float
    level: float  # the sequence's confidence at this length (1 - alpha / K)
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
    reason: str  # "determined", "budget", "failing", "undecided" (open at max_samples)
    open_lengths: tuple[int, ...]
    samples: int
    tokens: int  # the prompt tokens of the samples looked at
    cost: float  # the same in the plan's unit (dollars, or tokens)
    looks: tuple[Look, ...]
    # The shares (percent) a length had to be shown above to pass and below to fail:
    # one number under RULER's rule, a band under NoLiMa's.
    pass_at: float = 0.0
    fail_at: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """As stored on the run and written to results."""
        return {
            "pass_at": round(self.pass_at, 2),
            "fail_at": round(self.fail_at, 2),
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


@dataclass(frozen=True)
class Thresholds:
    """The shares (fractions) a length must be shown above to pass, and below to fail.

    RULER's rule: one number. NoLiMa's: 85 % of the base share, which is itself known
    only within its bounds, so a pass must clear 85 % of the base's upper bound and a
    fail fall under 85 % of its lower one; a length between is left open.
    """

    pass_at: float
    fail_at: float


@dataclass
class Progress:
    """Where a certification stands: the next round, or the certificate."""

    looks: list[Look] = field(default_factory=list)
    next_round: Round | None = None
    certificate: Certificate | None = None
    thresholds: Thresholds | None = None


def length_alpha(plan: CertifyPlan) -> float:
    """Each test's share of ``1 - confidence``: the union bound over the candidates.

    Under NoLiMa's rule the base's two bounds are tests too: K + 1 in all (the base
    length's own verdict is not asked).
    """
    tests = len(plan.lengths) + (1 if plan.rule == NOLIMA else 0)
    return (1 - plan.confidence) / tests


def fixed_thresholds(plan: CertifyPlan) -> Thresholds:
    """RULER's rule: the plan's threshold, both ways."""
    return Thresholds(plan.threshold / 100, plan.threshold / 100)


def samples_to_pass(plan: CertifyPlan) -> int:
    """The fewest samples, all right, whose sequence clears the threshold."""
    alpha, threshold = length_alpha(plan), fixed_thresholds(plan).pass_at
    n = 1
    while not shows_above(n, n, threshold, alpha):
        n += 1
    return n


def _look_size(looked: Sequence[float], plan: CertifyPlan, limits: Thresholds) -> tuple[int, bool]:
    """How many samples the next look at a length takes, given those already looked at.

    A first look is small (``first_look``): a clear failure costs little. After that,
    the fewest samples at which, if the share seen so far held, the sequence would clear
    the threshold (above it, or below it): at least half as many again as before, at
    most ``GROWTH`` times as many (an early, noisy mean never commits the budget to one
    length at once). Any size is valid: the sequence holds at every size. With it,
    whether ``max_samples`` would settle the length if the share held.
    """
    have = len(looked)
    if not have:
        return plan.first_look, True
    share, alpha = sum(looked) / have, length_alpha(plan)
    least, most = math.ceil(1.5 * have), GROWTH * have
    for n in range(least, max(most, plan.max_samples) + 1):
        if _settled(share * n, n, limits, alpha):
            # Settled within the cap if the share held; past it, the length is open.
            return min(n, most), n <= plan.max_samples
    return most, False


def plan_progress(
    plan: CertifyPlan,
    scores: Mapping[int, Sequence[float]],
    cost: Callable[[int], float] = float,
    *,
    failing: frozenset[int] = frozenset(),
) -> Progress:
    """Replay the certification over the stored scores and say what comes next.

    ``scores``: each length's outcomes (1 right, 0 wrong) in sample order. The answer is a round
    to run, or the certificate. ``cost(length)``: one sample's cost at a length
    (default: its tokens), for the budget. ``failing``: lengths whose calls keep failing,
    asked no more (left open: only a look that would ask for more is stopped, so the
    looks already taken replay as they were).
    """
    lengths = plan.lengths
    lo, hi = -1, len(lengths)  # the bracket, as indices: lo passes, hi fails
    seen: dict[int, int] = {}  # samples looked at per length index
    open_at_cap: set[int] = set()
    unaffordable: set[int] = set()  # left open: their next look did not fit the budget
    stopped: set[int] = set()  # left open: their calls keep failing
    deferred: set[int] = set()  # asked again once the cheaper candidates are settled
    revisited: set[int] = set()
    progress = Progress()
    spent = 0.0
    limits = fixed_thresholds(plan)
    if plan.rule == NOLIMA:  # the base first: the threshold is a share of it
        base = _base(plan, scores, cost, failing, progress)
        if base is None:  # to be asked, or it cannot be: ``progress`` says which
            return progress
        limits, spent = base, plan.base_samples * cost(lengths[0])
        seen[0] = plan.base_samples
        progress.thresholds = limits
        if not sum(scores[lengths[0]][: plan.base_samples]):
            # A base that scored nothing: no length has an effective share of it.
            return _finish(progress, plan, -1, 0, unaffordable, stopped, spent)
        lo = 0  # the base length passes its own share of itself
    progress.thresholds = limits
    current: int | None = None  # a length looked at and still open
    while True:
        left_open = open_at_cap | unaffordable | stopped
        inside = [i for i in range(lo + 1, hi) if i not in left_open | deferred]
        if current is None and not inside and deferred & set(range(lo + 1, hi)):
            revisited |= deferred  # every cheaper question is settled: back to the hard one
            deferred.clear()
            continue
        if current is None:
            if not inside:
                return _finish(progress, plan, lo, hi, unaffordable, stopped, spent)
            # The middle candidate; of two middles the shorter, the cheaper to ask.
            current = inside[(len(inside) - 1) // 2]
        have = seen.get(current, 0)
        stored = scores.get(lengths[current], ())
        wanted, settles = _look_size(stored[:have], plan, limits)
        wanted = min(wanted, plan.max_samples)
        extra = (wanted - have) * cost(lengths[current])
        others = [i for i in inside if i != current]
        if (
            not settles
            and have >= DEFER_AFTER * plan.first_look
            and others
            and (current not in revisited)
        ):
            # A length near the threshold takes many samples to settle; its neighbours
            # may settle the answer for less, so it waits while they are asked first,
            # and is asked again, with what is left, once they are.
            deferred.add(current)
            current = None
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
            current = None
            continue
        if len(stored) < wanted:
            if lengths[current] in failing:
                stopped.add(current)
                current = None
                continue
            progress.next_round = Round(len(progress.looks) + 1, lengths[current], wanted)
            return progress
        spent += extra
        seen[current] = wanted
        look = _look(len(progress.looks) + 1, lengths[current], stored[:wanted], plan, limits)
        progress.looks.append(look)
        if look.verdict == PASS:
            lo, current = current, None
        elif look.verdict == FAIL:
            hi, current = current, None
        elif wanted >= plan.max_samples:
            open_at_cap.add(current)
            current = None


def _base(
    plan: CertifyPlan,
    scores: Mapping[int, Sequence[float]],
    cost: Callable[[int], float],
    failing: frozenset[int],
    progress: Progress,
) -> Thresholds | None:
    """NoLiMa's thresholds from the base's first look; None while it is to be asked.

    The base is the shortest candidate's share, looked at once with ``base_samples``
    samples; its one-sided bounds (each at the plan's per-test level) make the band.
    None with ``progress.next_round`` set: ask it; None with a certificate: it cannot be
    (its calls keep failing, or it does not fit the budget).
    """
    length = plan.lengths[0]
    stored = scores.get(length, ())
    need = plan.base_samples
    if len(stored) < need:
        over = (
            (plan.budget is not None and need * cost(length) > plan.budget + 1e-9)
            or (plan.max_total_samples is not None and need > plan.max_total_samples)
            or (plan.max_tokens is not None and need * length > plan.max_tokens)
        )
        if length in failing or over:
            stopped = {0} if length in failing else set()
            _finish(progress, plan, -1, len(plan.lengths), {0} - stopped, stopped, 0.0)
            return None
        progress.next_round = Round(1, length, need)
        return None
    right = sum(stored[:need])
    # One look of a size fixed in advance: Wilson's bounds hold (no sequence is needed).
    low, high = fixed_bounds(right, need, length_alpha(plan))
    level = 1 - length_alpha(plan)
    progress.looks.append(
        Look(1, length, need, round(100 * right / need, 2), 100 * low, 100 * high, level, BASE)
    )
    return Thresholds(NOLIMA_SHARE * high, NOLIMA_SHARE * low)


def _settled(right: float, n: int, limits: Thresholds, alpha: float) -> bool:
    """Whether ``right`` of ``n`` would give a verdict: above the threshold, or below."""
    share = right / n
    if share > limits.pass_at:
        return shows_above(right, n, limits.pass_at, alpha)
    if share < limits.fail_at:
        return shows_below(right, n, limits.fail_at, alpha)
    return False


def _look(
    t: int, length: int, scores: Sequence[float], plan: CertifyPlan, limits: Thresholds
) -> Look:
    """Round ``t``'s verdict on ``length`` from its first samples."""
    alpha = length_alpha(plan)
    right, n = sum(scores), len(scores)
    low, high = bounds(right, n, alpha)
    if right / n >= limits.pass_at and shows_above(right, n, limits.pass_at, alpha):
        verdict = PASS
    elif right / n < limits.fail_at and shows_below(right, n, limits.fail_at, alpha):
        verdict = FAIL
    else:
        verdict = OPEN
    return Look(t, length, n, round(100 * right / n, 2), 100 * low, 100 * high, 1 - alpha, verdict)


def _finish(
    progress: Progress,
    plan: CertifyPlan,
    lo: int,
    hi: int,
    unaffordable: set[int],
    stopped: set[int],
    spent: float,
) -> Progress:
    """The certificate once no candidate inside the bracket can be looked at."""
    inside = range(lo + 1, hi)
    determined = not inside
    reason = "determined"
    if not determined:  # what kept the bracket open
        if any(i in stopped for i in inside):
            reason = "failing"  # calls at a length kept failing
        elif any(i in unaffordable for i in inside):
            reason = "budget"
        else:
            reason = "undecided"  # a length still open at max_samples
    last = _last_looks(progress.looks)
    limits = progress.thresholds or fixed_thresholds(plan)
    progress.certificate = Certificate(
        length=plan.lengths[lo] if lo >= 0 else None,
        below=plan.lengths[hi] if hi < len(plan.lengths) else None,
        determined=determined,
        reason=reason,
        open_lengths=tuple(plan.lengths[i] for i in inside),
        samples=sum(look.samples for look in last),
        tokens=sum(look.samples * look.length for look in last),
        cost=spent,
        looks=tuple(progress.looks),
        pass_at=100 * limits.pass_at,
        fail_at=100 * limits.fail_at,
    )
    return progress


def _last_looks(looks: Sequence[Look]) -> list[Look]:
    """Each length's last look (its samples are cumulative)."""
    last: dict[int, Look] = {}
    for look in looks:
        last[look.length] = look
    return list(last.values())
