"""The effective length: the longest length a model can be trusted at, and one sentence for it.

Every surface (the heatmap PNG's notes, the HTML report, ``niah status``, the runs
index, ``niah compare`` and the exported summary) says the effective length with
``effective_length_text``, so a shared picture never claims a length the report calls
undetermined.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from niah.core.request.request_options import (
    NOLIMA_BASE_MAX_LENGTH,
    EffectiveLengthRule,
)
from niah.core.results.uncertainty import CONFIDENCE, Interval

# RULER's threshold: Llama-2-7B's score at 4K, 85.6 (NVIDIA/RULER README, read
# 2026-11-26). NoLiMa's: 85 % of the model's own base score at short lengths (<= 1K
# tokens; adobe-research/NoLiMa README). Which one is the run's choice
# (``RunRequest.effective_length_rule``), RULER's by default: a grid that happens to
# hold a 1,000-token length is judged as any other.
RULER_THRESHOLD = 85.6
NOLIMA_SHARE = 0.85
RULE_TEXTS: dict[str, str] = {
    # No apostrophes: the sentence is matched in pages whose escaping of one differs.
    "ruler": "rule ruler: fixed, as in RULER",
    "nolima": f"rule nolima: 85 % of the mean at lengths <= {NOLIMA_BASE_MAX_LENGTH:,} tokens",
}


def threshold_rule(
    by_length: Mapping[int, float], rule: EffectiveLengthRule
) -> tuple[float | None, float | None]:
    """The threshold (percent) under ``rule``, and NoLiMa's base (None under RULER's).

    NoLiMa's base is the mean at lengths of 1,000 tokens or less; a run without one
    scored (its short lengths all failed) has no threshold.
    """
    if rule == "ruler":
        return RULER_THRESHOLD, None
    short = [v for length, v in by_length.items() if length <= NOLIMA_BASE_MAX_LENGTH]
    if not short:
        return None, None
    base = statistics.fmean(short)
    return NOLIMA_SHARE * base, base


def effective_length(
    by_length: Mapping[int, float],
    intervals: Mapping[int, Interval | None] | None = None,
    *,
    rule: EffectiveLengthRule,
) -> dict[str, Any]:
    """The longest length whose mean (percent) reaches the threshold of ``rule``.

    With each length's interval: ``interval`` gives the longest length whose interval
    lies wholly at or above the threshold (``low``) and the longest whose interval
    reaches it (``high``); ``determined`` only when both are the effective length, so a
    decision that rests on noise says so. A length without an interval (one graded
    sample) could pass or fail. The threshold's own uncertainty (NoLiMa's base is a
    mean too) is not carried. ``text`` is the sentence every surface shows; the rule
    is in it, and by name in ``effective_length_rule``.
    """
    threshold, base = threshold_rule(by_length, rule)
    found: dict[str, Any] = {
        "length": None,
        "threshold": round(threshold, 2) if threshold is not None else None,
        "rule": RULE_TEXTS[rule],
        "effective_length_rule": rule,
        "base": round(base, 2) if base is not None else None,
    }
    if threshold is None:  # NoLiMa's rule without a scored base: nothing to judge by
        return found | {"text": effective_length_text(found)}
    # A length that scored nothing never passes: with a base of 0 there is no effective
    # length, not the longest length.
    passing = [length for length, value in by_length.items() if value >= threshold and value > 0]
    found["length"] = max(passing) if passing else None
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
        found |= {
            "interval": {"low": low, "high": high},
            "determined": low == high == found["length"],
        }
    return found | {"text": effective_length_text(found)}


def effective_length_text(effective: dict[str, Any]) -> str:
    """The effective length with how sure it is, or "not determined" and why: one sentence.

    Built from the stored figures (not the stored ``text``), so runs summarised before
    the sentence existed read the same as new ones.
    """
    if effective.get("certified"):
        return _certified_text(effective)
    if "by_variant" in effective:  # a run with an axis: one length per value, none pooled
        each = " · ".join(
            f"{one['label']} {effective_length_short(one)}" for one in effective["by_variant"]
        )
        return f"per value of the axis: {each} ({effective.get('rule')})"
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
    if threshold is None and effective.get("effective_length_rule") == "nolima":
        return (
            f"not determined (no length of {NOLIMA_BASE_MAX_LENGTH:,} tokens or less was "
            f"scored, and NoLiMa's base is their mean; {rule})"
        )
    if threshold is None:
        return "not determined (no length was scored)"
    if not threshold:  # NoLiMa's share of a base that scored nothing: nothing can pass
        return f"not determined (no length scored above 0 %; {rule})"
    return f"not determined (no length scored {threshold:g} % or more; {rule})"


def effective_length_short(effective: dict[str, Any]) -> str:
    """The effective length in a few words, for a table whose note states the rule.

    "2,000 tokens", "not determined (none to 2,000)", "none"; under NoLiMa's rule with
    the threshold its base gave ("2,000 tokens at 59.5 %").
    """
    length, threshold = effective.get("length"), effective.get("threshold")
    bounds = effective.get("interval")
    at = (
        f" at {threshold:g} %"
        if threshold is not None and effective.get("effective_length_rule") == "nolima"
        else ""
    )
    if threshold is None:  # NoLiMa's rule, and no short length scored
        return "not determined (no base)"
    if bounds and not effective.get("determined"):
        low, high = (f"{n:,}" if n is not None else "none" for n in (bounds["low"], bounds["high"]))
        return f"not determined ({low} to {high}){at}"
    if length is None:
        return f"none{at}"
    return f"{length:,} tokens{'' if bounds else ' by the means'}{at}"


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
