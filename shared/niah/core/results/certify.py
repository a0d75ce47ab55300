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
et al. 2021, mixed on one side): "pass" shows the share above the threshold less the
indifference zone, "fail" below it plus the zone (``certify_plan.ZONE``: a share
within the zone may be called either way), each at its length's share ``alpha_i`` of
``alpha`` (``certify_tests``: in proportion to a sample's price there), and each holds
at every sample size at once whatever the planner does. Of a length's two
verdicts only one can be wrong (at or above threshold + zone, only "fail"; below
threshold - zone, only "pass"), so the union bound over the ``K`` lengths (a set and a
split fixed in advance) makes every verdict right, give or take the zone, together with
probability at least ``1 - alpha``. Then, if the score does
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

from collections.abc import Callable, Mapping, Sequence

from niah.core.results.certify_plan import (
    BASE,
    BASE_SAMPLES,
    CONFIDENCE,
    DEFER_AFTER,
    FAIL,
    FIRST_LOOK,
    MAX_SAMPLES,
    NOLIMA,
    NOLIMA_MAX_SAMPLES,
    NOLIMA_SHARE,
    OPEN,
    PASS,
    RULER,
    ZONE,
    Certificate,
    CertifyPlan,
    Look,
    Progress,
    Round,
    Thresholds,
)
from niah.core.results.certify_tests import (
    DEAR_SHARE,
    base_alpha,
    first_look,
    length_alphas,
    look_at,
    look_plan,
    ruler_thresholds,
    samples_to_pass,
)
from niah.core.results.confidence_sequence import fixed_bounds

# What callers import from here: the plan's names live in certify_plan, the tests' in
# certify_tests; this module is the planner's one entry point.
__all__ = [
    "BASE_SAMPLES",
    "CONFIDENCE",
    "FAIL",
    "FIRST_LOOK",
    "MAX_SAMPLES",
    "NOLIMA",
    "NOLIMA_MAX_SAMPLES",
    "OPEN",
    "PASS",
    "RULER",
    "ZONE",
    "Certificate",
    "CertifyPlan",
    "Look",
    "Progress",
    "Round",
    "Thresholds",
    "plan_progress",
    "samples_to_pass",
]


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
    limits = ruler_thresholds(plan)
    alphas = length_alphas(plan, cost)
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
        first = first_look(plan, lengths[current], cost, alphas[current], limits)
        wanted, settles_at = look_plan(stored[:have], plan, limits, alphas[current], first)
        wanted = min(wanted, plan.max_samples)
        extra = (wanted - have) * cost(lengths[current])
        others = [i for i in inside if i != current]
        hard, asked_enough = settles_at is None, have >= DEFER_AFTER * plan.first_look
        if plan.by_price() and settles_at is not None and (plan.budget or plan.max_tokens):
            # Design 2: dear to settle counts as hard, judged after a second look, where
            # a cheaper candidate inside the bracket might settle the answer instead.
            price_of, left = _budget_left(plan, cost, seen, spent)
            price = price_of(lengths[current])
            dear = (settles_at - have) * price > DEAR_SHARE * left and any(
                price_of(lengths[i]) < price for i in others
            )
            hard, asked_enough = hard or dear, asked_enough or (dear and have > first)
        if hard and asked_enough and others and (current not in revisited):
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
        seen_now = look_at(
            len(progress.looks) + 1, lengths[current], stored[:wanted], limits, alphas[current]
        )
        progress.looks.append(seen_now)
        if seen_now.verdict == PASS:
            lo, current = current, None
        elif seen_now.verdict == FAIL:
            hi, current = current, None
        elif wanted >= plan.max_samples:
            open_at_cap.add(current)
            current = None


def _budget_left(
    plan: CertifyPlan, cost: Callable[[int], float], seen: Mapping[int, int], spent: float
) -> tuple[Callable[[int], float], float]:
    """A sample's price at a length and what is left, in the budget's unit.

    Dollars (``cost``) where the plan has a budget in them; else prompt tokens (an
    unpriced model's ``max_tokens``).
    """
    if plan.budget is not None:
        return cost, plan.budget - spent
    used = sum(plan.lengths[i] * n for i, n in seen.items())
    return float, (plan.max_tokens or 0) - used


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
    low, high = fixed_bounds(right, need, base_alpha(plan))
    level = 1 - base_alpha(plan)
    progress.looks.append(
        Look(1, length, need, round(100 * right / need, 2), 100 * low, 100 * high, level, BASE)
    )
    return Thresholds(NOLIMA_SHARE * high, NOLIMA_SHARE * low)


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
    limits = progress.thresholds or ruler_thresholds(plan)
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
