"""A prompt fitted to the model's own count, for models whose tokenizer we do not hold.

Prompts are built token-exact in Gemma 3 (``niah.models.tokenizer``). google-genai maps
only the Gemini 2.x models and the Gemini 3 previews to Gemma 3; 3.5 Flash, 3.1
Flash-Lite and 3.1 Pro Preview are on Gemma 4, and later models on nothing it publishes
(``niah.catalog.tokenizers``). For those a cell's length is Vertex's ``countTokens`` of
its prompt, which Google calls an estimate: the prompt is built, counted, and rebuilt
at the length its own count says until the count lands within ``fit_tolerance`` tokens
below the requested length (never above). The reply's ``promptTokenCount`` checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from niah.core.prompts.prompt_builder import BuiltPrompt

# The window a fitted prompt's count lands in: [L - tolerance, L], the tolerance 0.1 %
# of L and at least 8 tokens. Never above L, so a "1M" cell is never over the input
# limit by the fit; 8 tokens is more than one local token's worth of any model's count
# (a local token is a few characters), so a count always exists in the window.
FIT_TOLERANCE_PER_MILLE = 1
FIT_TOLERANCE_MIN_TOKENS = 8
# Builds and countTokens calls per cell at most: the first at the run's sample ratio,
# then each at the cell's own ratio (a prompt's count is near-linear in its length).
FIT_ROUNDS = 4


def fit_tolerance(target_tokens: int) -> int:
    """How far below ``target_tokens`` a fitted prompt's count may land: 0.1 %, at least 8."""
    return max(FIT_TOLERANCE_MIN_TOKENS, -(-target_tokens * FIT_TOLERANCE_PER_MILLE // 1000))


@dataclass(frozen=True)
class CountFit:
    """A prompt fitted to the model's count: the prompt, its count, the target, the rounds."""

    built: BuiltPrompt
    model_tokens: int  # countTokens of ``built.prompt``
    target_tokens: int
    rounds: int

    @property
    def deviation(self) -> int:
        """The model's count less the target: in ``[-fit_tolerance, 0]`` when fitted."""
        return self.model_tokens - self.target_tokens

    @property
    def within_tolerance(self) -> bool:
        """Whether the count landed in the window (``fit_tolerance``)."""
        return -fit_tolerance(self.target_tokens) <= self.deviation <= 0

    def fields(self) -> dict[str, Any]:
        """As a cell keeps it: the count it was fitted by, and how far from its length."""
        return {
            "fitted_by": "countTokens",
            "counted_prompt_tokens": self.model_tokens,
            "fit_deviation_tokens": self.deviation,
            "fit_tolerance_tokens": fit_tolerance(self.target_tokens),
            "fit_within_tolerance": self.within_tolerance,
            "fit_rounds": self.rounds,
        }


def fit_by_count(
    build: Callable[[int], BuiltPrompt],
    count: Callable[[str], int],
    *,
    target_tokens: int,
    first_local_tokens: int,
) -> CountFit:
    """Build the prompt at local lengths until the model counts it within the window.

    ``build(n)``: the prompt of exactly ``n`` local tokens; ``count``: the model's count
    (``countTokens``). The first build is at ``first_local_tokens`` (the run's sample
    ratio), each next at the last one's own ratio, aimed at the window's middle. After
    ``FIT_ROUNDS`` the closest count not above the target is kept (else the last),
    and ``within_tolerance`` says it missed: never silently off.
    """
    aim = target_tokens - fit_tolerance(target_tokens) // 2
    local = max(1, first_local_tokens)
    best: CountFit | None = None
    last: CountFit | None = None
    for round_number in range(1, FIT_ROUNDS + 1):
        built = build(local)
        last = CountFit(built, count(built.prompt), target_tokens, round_number)
        if last.within_tolerance or last.model_tokens <= 0:
            return last
        if last.deviation < 0 and (best is None or last.model_tokens > best.model_tokens):
            best = last
        following = max(1, built.planned_prompt_tokens * aim // last.model_tokens)
        if following == local:  # the ratio's step is under one local token: move one
            following = local + (1 if last.deviation < 0 else -1)
        local = following
    assert last is not None  # FIT_ROUNDS >= 1
    kept = best or last
    return CountFit(kept.built, kept.model_tokens, target_tokens, FIT_ROUNDS)


def fit_summary(cells: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's fitted cells: how many, how many in their window, the largest deviation.

    None for a run with no cell fitted to countTokens (an exact model's, the local one's).
    """
    fitted = [c for c in cells if c.get("fitted_by") == "countTokens"]
    if not fitted:
        return None
    deviations = [int(c["fit_deviation_tokens"]) for c in fitted]
    return {
        "cells": len(fitted),
        "within_tolerance": sum(bool(c.get("fit_within_tolerance")) for c in fitted),
        "max_abs_deviation": max(abs(d) for d in deviations),
        "mean_deviation": round(sum(deviations) / len(deviations), 3),
    }


def fit_note(summary: dict[str, Any] | None) -> str | None:
    """The report's and ``niah status``'s line on fitted lengths, where there are any."""
    if not summary:
        return None
    within = summary["within_tolerance"]
    share = "all" if within == summary["cells"] else f"{within} of {summary['cells']}"
    return (
        f"prompt lengths fitted by countTokens (Google: an estimate), not exact: "
        f"{summary['cells']} cells, {share} within [L - max(8, 0.1 % of L), L], "
        f"largest |deviation| {summary['max_abs_deviation']} tokens"
    )
