"""What a certification may do and what it says: its plan, looks, rounds and certificate.

Plain data, apart from the statistics (``certify_tests``) and the walk over the
lengths (``certify``), so each can be read alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
# The indifference zone under RULER's rule, in points (issue 54): a length whose true
# share is within this of the threshold may be called either way, so a pass shows the
# share above threshold - zone and a fail below threshold + zone. What the certificate
# claims is "at or above the threshold, give or take the zone".
ZONE = 5.0
# The planner's design. 1: every length tested at 1 - alpha / K against the threshold
# itself, 8 samples a first look (runs admitted before 2026-12-05 keep it, so their
# certificates replay as they were). 2 (issue 54): the zone; each length's share of
# alpha in proportion to a sample's price there; first looks sized by price.
DESIGN = 2


@dataclass(frozen=True)
class CertifyPlan:
    """What a certification may do: its lengths, threshold, confidence and budget.

    ``lengths``: the candidate lengths, ascending (a grid's lengths over the range).
    ``threshold``: the mean score (percent) a length must reach. ``first_look``: the
    samples of a length's first round, small so a clear failure costs little (design 2:
    fewer where a sample is dear). ``max_samples``: a length is left open past this many
    samples. ``budget``: the most the rounds may cost, in the unit of ``cost`` (a sample
    at a length), None for no limit; ``max_total_samples`` the most samples over all
    lengths (the service's cells-per-run limit) and ``max_tokens`` the most prompt
    tokens (a sample at a length is that many), None for no limit. ``zone`` (points) and
    ``design``: see ``ZONE`` and ``DESIGN``.
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
    zone: float = ZONE
    design: int = DESIGN

    def __post_init__(self) -> None:
        if not self.max_samples:
            cap = NOLIMA_MAX_SAMPLES if self.rule == NOLIMA else MAX_SAMPLES
            object.__setattr__(self, "max_samples", cap)
        if list(self.lengths) != sorted(set(self.lengths)) or not self.lengths:
            raise ValueError("certify lengths must be distinct and ascending")
        if not 0 < self.threshold <= 100:
            raise ValueError("certify threshold is a percent in (0, 100]")
        if self.design < 2 or self.rule == NOLIMA:  # no zone: the threshold itself
            object.__setattr__(self, "zone", 0.0)

    def by_price(self) -> bool:
        """Whether alpha and first looks follow a sample's price (design 2, RULER's rule)."""
        return self.design >= 2 and self.rule != NOLIMA


@dataclass(frozen=True)
class Look:
    """One round's look at one length: its samples so far, mean and verdict."""

    round: int
    length: int
    samples: int
    mean: float  # percent
    low: float  # the sequence's bounds, percent
    high: float
    level: float  # the sequence's confidence at this length (1 - its alpha)
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
    # threshold -/+ the zone under RULER's rule, a band under NoLiMa's.
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

    RULER's rule: the threshold less the zone, and plus it (design 1: the threshold
    both ways). NoLiMa's: 85 % of the base share, which is itself known only within its
    bounds, so a pass must clear 85 % of the base's upper bound and a fail fall under
    85 % of its lower one; a length between is left open.
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
