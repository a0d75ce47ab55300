"""An always-valid confidence sequence for a right/wrong share: look as often as you like.

Checking a fixed-n interval after every round and stopping when it clears a threshold
is optional stopping: the error rate grows with the number of looks. A confidence
sequence holds at every sample size at once. This one is Robbins' beta-binomial mixture
(Robbins 1970, "Statistical methods related to the law of the iterated logarithm",
Annals of Mathematical Statistics 41(5); the modern treatment: Howard, Ramdas,
McAuliffe and Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", Annals of Statistics 49(2), section 3): against a share ``p``, with ``s``
right of ``n``, the likelihood ratio mixed over a uniform prior is

    M_n(p) = B(s + 1, n - s + 1) / (p^s (1 - p)^(n - s)),

a nonnegative martingale with mean 1 when ``p`` is the true share, so by Ville's
inequality it ever reaches ``1 / alpha`` with probability at most ``alpha``. The
sequence is the set of ``p`` where it stays below; it is wider than Wilson's interval
at the same counts, which is the price of looking whenever the planner likes. Pure
Python (``math.lgamma``), so the dispatcher, which plans a run's first round, loads
nothing heavy.
"""

from __future__ import annotations

import math

EDGE = 1e-12  # p is kept inside (0, 1): log p and log(1 - p) stay finite


def log_mixture(successes: float, trials: int, p: float) -> float:
    """Log M_n(p): how far the mixture has grown against the share ``p``."""
    p = min(max(p, EDGE), 1 - EDGE)
    failures = trials - successes
    log_beta = math.lgamma(successes + 1) + math.lgamma(failures + 1) - math.lgamma(trials + 2)
    return log_beta - successes * math.log(p) - failures * math.log(1 - p)


def excludes(successes: float, trials: int, p: float, alpha: float) -> bool:
    """Whether the sequence at level ``1 - alpha`` has ruled the share ``p`` out."""
    return trials > 0 and log_mixture(successes, trials, p) >= math.log(1 / alpha)


def bounds(successes: float, trials: int, alpha: float) -> tuple[float, float]:
    """The sequence's interval at these counts, as fractions (by bisection, to 1e-6).

    ``log M_n(p)`` is convex in ``p`` with its least value at ``s / n``, so the set it
    keeps is one interval around the observed share.
    """
    if trials == 0:
        return 0.0, 1.0
    share = successes / trials
    return _edge(successes, trials, alpha, share, 0.0), _edge(successes, trials, alpha, share, 1.0)


def _edge(successes: float, trials: int, alpha: float, inside: float, outside: float) -> float:
    """Where, between the observed share and 0 (or 1), the sequence's edge lies."""
    if not excludes(successes, trials, outside, alpha):
        return outside
    for _ in range(60):
        middle = (inside + outside) / 2
        if excludes(successes, trials, middle, alpha):
            outside = middle
        else:
            inside = middle
    return inside
