"""The effective length: the longest length a model can be trusted at, and one sentence for it.

Every surface (the heatmap PNG's notes, the HTML report, ``niah status``, the runs
index, ``niah compare`` and the exported summary) says the effective length with
``effective_length_text``, so a shared picture never claims a length the report calls
undetermined.
"""

from __future__ import annotations

import statistics
from typing import Any

from niah.core.results.uncertainty import CONFIDENCE, Interval

# RULER's threshold: Llama-2-7B's score at 4K, 85.6 (NVIDIA/RULER README, read
# 2026-11-26). NoLiMa's: 85 % of the model's own base score at short lengths (<= 1K
# tokens; adobe-research/NoLiMa README).
RULER_THRESHOLD = 85.6
NOLIMA_SHARE = 0.85
NOLIMA_BASE_MAX_LENGTH = 1_000
RULER_RULE = "ruler: 85.6"
NOLIMA_RULE = "nolima: 85% of the mean at lengths <= 1,000"


def threshold_rule(by_length: dict[int, float]) -> tuple[float, str, float | None]:
    """The threshold (percent), its rule and NoLiMa's base: NoLiMa's when short lengths ran.

    NoLiMa's base is the mean at lengths of 1,000 tokens or less, when the grid has such
    lengths; otherwise RULER's fixed 85.6.
    """
    short = [v for length, v in by_length.items() if length <= NOLIMA_BASE_MAX_LENGTH]
    if short:
        base = statistics.fmean(short)
        return NOLIMA_SHARE * base, NOLIMA_RULE, base
    return RULER_THRESHOLD, RULER_RULE, None


def effective_length(
    by_length: dict[int, float], intervals: dict[int, Interval | None] | None = None
) -> dict[str, Any]:
    """The longest length whose mean (percent) reaches the threshold, and which rule.

    With each length's interval: ``interval`` gives the longest length whose interval
    lies wholly at or above the threshold (``low``) and the longest whose interval
    reaches it (``high``); ``determined`` only when both are the effective length, so a
    decision that rests on noise says so. A length without an interval (one graded
    sample) could pass or fail. The threshold's own uncertainty (NoLiMa's base is a
    mean too) is not carried. ``text`` is the sentence every surface shows.
    """
    threshold, rule, base = threshold_rule(by_length)
    # A length that scored nothing never passes: with a base of 0 there is no effective
    # length, not the longest length.
    passing = [length for length, value in by_length.items() if value >= threshold and value > 0]
    length = max(passing) if passing else None
    found: dict[str, Any] = {
        "length": length,
        "threshold": round(threshold, 2),
        "rule": rule,
        "base": round(base, 2) if base is not None else None,
    }
    if intervals is not None:
        surely = [
            n
            for n, value in by_length.items()
            if value > 0 and (i := intervals.get(n)) is not None and i.low >= threshold
        ]
        maybe = [
            n
            for n, value in by_length.items()
            if value > 0 and ((i := intervals.get(n)) is None or i.high >= threshold)
        ]
        low, high = max(surely, default=None), max(maybe, default=None)
        found |= {"interval": {"low": low, "high": high}, "determined": low == high == length}
    return found | {"text": effective_length_text(found)}


def effective_length_text(effective: dict[str, Any]) -> str:
    """The effective length with how sure it is, or "not determined" and why: one sentence.

    Built from the stored figures (not the stored ``text``), so runs summarised before
    the sentence existed read the same as new ones.
    """
    if effective.get("certified"):
        return _certified_text(effective)
    length, threshold = effective.get("length"), effective.get("threshold")
    rule = effective.get("rule")
    bounds = effective.get("interval")
    because = [f"threshold {threshold:g} %, {rule}"] if threshold is not None else []
    if bounds and not effective.get("determined"):
        low, high = (f"{n:,}" if n is not None else "none" for n in (bounds["low"], bounds["high"]))
        by_means = f"{length:,} tokens" if length is not None else "none"
        why = "; ".join([*because, "more samples per point narrow them"])
        return (
            f"not determined: {by_means} by the means, but the {CONFIDENCE * 100:g} % "
            f"intervals allow {low} to {high} ({why})"
        )
    if length is not None:
        sure = f"{CONFIDENCE * 100:g} % confident" if bounds else "by the means"
        return f"{length:,} tokens, {sure}" + "".join(f" ({b})" for b in because)
    if threshold is None:
        return "not determined (no length was scored)"
    if not threshold:  # NoLiMa's share of a base that scored nothing: nothing can pass
        return f"not determined (no length scored above 0 %; {rule})"
    return f"not determined (no length scored {threshold:g} % or more; {rule})"


def _certified_text(effective: dict[str, Any]) -> str:
    """A certify run's answer: the length certified, and what bounds it."""
    length, below = effective.get("length"), effective.get("below")
    sure = f"{CONFIDENCE * 100:g} % confident"
    threshold = effective.get("threshold_text") or f"threshold {effective['threshold']:g} %"
    if effective.get("reason") == "unfinished":
        return "not determined (the certification's rounds did not finish)"
    between = ", ".join(f"{n:,}" for n in effective.get("open_lengths") or [])
    why = {"budget": "the budget ran out", "failing": "its calls kept failing"}.get(
        str(effective.get("reason")), "too close to call"
    )
    if length is None and below is not None and effective.get("determined"):
        return f"below {below:,} tokens, {sure} ({below:,} fails; {threshold}, certified)"
    if length is None:
        return f"not determined: no length passed; {between} undecided ({why}; {threshold})"
    if below is None and effective.get("determined"):
        return f"at least {length:,} tokens, the longest asked, {sure} ({threshold}, certified)"
    if effective.get("determined"):
        return (
            f"{length:,} tokens, {sure} ({length:,} passes and {below:,} fails; "
            f"{threshold}, certified)"
        )
    upper = f", below {below:,}" if below is not None else ""
    return (
        f"at least {length:,} tokens{upper}, {sure}; {between} undecided ({why}; "
        f"{threshold}, certified)"
    )
