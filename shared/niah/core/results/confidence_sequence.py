"""An always-valid test of a right/wrong share against a threshold: look as often as you like.

Checking a fixed-n interval after every round and stopping when it clears a threshold
is optional stopping: the error rate grows with the number of looks. A test martingale
holds at every sample size at once. This one is Robbins' beta-binomial mixture
(Robbins 1970, "Statistical methods related to the law of the iterated logarithm",
Annals of Mathematical Statistics 41(5); the modern treatment: Howard, Ramdas,
McAuliffe and Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", Annals of Statistics 49(2), section 3), mixed one side at a time. With
``s`` right of ``n`` and ``f = n - s`` wrong, the likelihood ratio of a share ``q``
against ``p``, mixed over ``q`` uniform above ``p``,

    M+_n(p) = integral_p^1 q^s (1 - q)^f dq / ((1 - p) p^s (1 - p)^f),

is a nonnegative supermartingale with mean at most 1 whenever the true share is at
most ``p`` (each ratio with ``q > p`` is), so by Ville's inequality it ever reaches
``1 / alpha`` with probability at most ``alpha``: reaching it shows the share is above
``p``. ``M-_n(p)``, mixed below ``p``, shows the share is below. Mixed over the side
that matters only, a test needs fewer samples than the two-sided mixture at the same
level (48 right in a row clear 85.6 % at alpha = 0.05/11, where the two-sided mixture
needs 62). The bounds are each one-sided at ``1 - alpha``: the share is above the lower
one, and below the upper one, each with that confidence at every sample size. Pure
Python (``math.lgamma`` and a continued fraction), so the dispatcher, which plans a
run's first round, loads nothing heavy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

EDGE = 1e-12  # p is kept inside (0, 1): log p and log(1 - p) stay finite


def log_above(successes: float, trials: int, p: float) -> float:
    """Log M+_n(p): how far the evidence that the share is above ``p`` has grown."""
    p = min(max(p, EDGE), 1 - EDGE)
    failures = trials - successes
    tail = _log_beta_tail(successes + 1, failures + 1, p, upper=True)
    return tail - math.log(1 - p) - successes * math.log(p) - failures * math.log(1 - p)


def log_below(successes: float, trials: int, p: float) -> float:
    """Log M-_n(p): how far the evidence that the share is below ``p`` has grown."""
    p = min(max(p, EDGE), 1 - EDGE)
    failures = trials - successes
    tail = _log_beta_tail(successes + 1, failures + 1, p, upper=False)
    return tail - math.log(p) - successes * math.log(p) - failures * math.log(1 - p)


def shows_above(successes: float, trials: int, p: float, alpha: float) -> bool:
    """Whether the samples show, at level ``1 - alpha``, a share at or above ``p``."""
    return trials > 0 and log_above(successes, trials, p) >= math.log(1 / alpha)


def shows_below(successes: float, trials: int, p: float, alpha: float) -> bool:
    """Whether the samples show, at level ``1 - alpha``, a share below ``p``."""
    return trials > 0 and log_below(successes, trials, p) >= math.log(1 / alpha)


def bounds(successes: float, trials: int, alpha: float) -> tuple[float, float]:
    """The one-sided bounds at these counts, as fractions (by bisection, to 1e-6).

    The lower: the highest share the samples show they are above; the upper: the
    lowest they show they are below. Each holds with ``1 - alpha`` at every size.
    """
    if trials == 0:
        return 0.0, 1.0
    share = successes / trials
    low = _edge(lambda p: shows_above(successes, trials, p, alpha), share, 0.0)
    high = _edge(lambda p: shows_below(successes, trials, p, alpha), share, 1.0)
    return low, high


def _edge(shown: Callable[[float], bool], inside: float, outside: float) -> float:
    """Between the observed share and 0 (or 1), where the samples stop showing."""
    if not shown(outside):
        return outside
    for _ in range(60):
        middle = (inside + outside) / 2
        if shown(middle):
            outside = middle
        else:
            inside = middle
    return inside


def _log_beta_tail(a: float, b: float, x: float, *, upper: bool) -> float:
    """Log of the integral of t^(a-1) (1-t)^(b-1) over (x, 1) (``upper``) or (0, x).

    The incomplete beta function by its continued fraction (Numerical Recipes, 3rd ed.,
    section 6.4: evaluated where it converges fast, the other side by symmetry), all in
    logs: at 256 samples the terms are far below a float's range.
    """
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    if x < (a + 1) / (a + b + 2):
        lower = _log_fraction(a, b, x)  # log of the regularized I_x(a, b)
        return log_beta + (_log1m_exp(lower) if upper else lower)
    upper_part = _log_fraction(b, a, 1 - x)  # I_{1-x}(b, a) = 1 - I_x(a, b)
    return log_beta + (upper_part if upper else _log1m_exp(upper_part))


def _log_fraction(a: float, b: float, x: float) -> float:
    """Log I_x(a, b), where the continued fraction converges (x < (a+1)/(a+b+2))."""
    front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
        + a * math.log(x) + b * math.log1p(-x) - math.log(a)
    )  # fmt: skip
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    value = d
    for m in range(1, 400):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            value *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front + math.log(value)


def _log1m_exp(log_value: float) -> float:
    """log(1 - e^x) for x <= 0, without losing it when e^x is near 0 or 1."""
    if log_value >= 0:
        return -math.inf
    if log_value > -0.693:
        return math.log(-math.expm1(log_value))
    return math.log1p(-math.exp(log_value))


def fixed_bounds(successes: float, trials: int, alpha: float) -> tuple[float, float]:
    """Wilson's score bounds, each one-sided at ``1 - alpha``, for one look at a fixed size.

    Valid only where the number of samples was fixed before any was seen (NoLiMa's base
    in certify: one look, its size a constant): then no sequence is needed, and Wilson's
    bounds (Wilson 1927, the service's interval for right/wrong) are much narrower at
    a thousand samples than the mixture's.
    """
    if trials == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(1 - alpha)
    share = successes / trials
    centre = (share + z * z / (2 * trials)) / (1 + z * z / trials)
    spread = (z / (1 + z * z / trials)) * math.sqrt(
        share * (1 - share) / trials + z * z / (4 * trials * trials)
    )
    return max(0.0, centre - spread), min(1.0, centre + spread)
