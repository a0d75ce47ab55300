"""A certify run's certificate as its report shows it: the answer, what it took, each round."""

from __future__ import annotations

from typing import Any

from niah.core.results.uncertainty import figure

HEADERS = ("round", "length (tokens)", "samples", "mean (%)", "interval (%)", "at", "verdict")


def certificate_view(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The certificate section's facts, rounds and note; None for a grid run."""
    certificate = summary.get("certificate")
    if not certificate:
        return None
    spent = _spent(certificate)
    rows = [
        (
            look["round"],
            f"{look['length']:,}",
            look["samples"],
            figure(look["mean"]),
            f"{figure(look['low'])}-{figure(look['high'])}",
            f"{100 * look['level']:.2f} %",
            look["verdict"],
        )
        for look in certificate["looks"]
    ]
    return {
        "facts": [
            ("effective length", summary["measures"]["effective_length"]["text"]),
            ("spent", spent),
            ("budget", _budget(certificate)),
            (
                "threshold",
                (
                    certificate.get("threshold_text") or f"threshold {certificate['threshold']:g} %"
                ).removeprefix("threshold ")
                + ", of the mean score over the depths",
            ),
        ],
        "headers": HEADERS,
        "rows": rows,
        "note": (
            "Each round looks at one length and asks whether its samples show the share "
            "above the threshold (pass) or below it (fail), by "
            f"{certificate['method']}: each holds however often it is looked at, and "
            "together they hold with 95 % confidence (the bounds shown are each one-sided "
            "at the level given), every sample taken as independent (each draws its own "
            "depth and needle). Bisection assumes the score does not rise with length."
        ),
    }


def _spent(certificate: dict[str, Any]) -> str:
    """Samples, tokens and dollars, and their share of the grid's."""
    said = f"{certificate['samples']:,} samples"
    if certificate.get("tokens") is None:
        return said
    said += f", {certificate['tokens']:,} prompt tokens"
    if certificate.get("usd") is not None and certificate.get("grid_usd"):
        said += f", ${certificate['usd']:,.2f} of model cost (the prompts')"
        whole = f"${certificate['grid_usd']:,.2f}"
    elif certificate.get("seconds") is not None and certificate.get("grid_seconds"):
        said += f", about {certificate['seconds']:,.0f} s of model time (estimated)"
        whole = f"{certificate['grid_seconds']:,.0f} s"
    else:
        whole = f"{certificate['grid_tokens']:,} tokens"
    share = certificate.get("share_of_grid")
    if share is not None:
        said += (
            f": {100 * share:.1f} % of the grid's {whole} (every length and depth, 5 samples "
            "a point)"
        )
    return said


def _budget(certificate: dict[str, Any]) -> str:
    """The budget it was held to: dollars or model seconds, prompt tokens, or both."""
    parts = []
    if certificate.get("budget_usd") is not None:
        parts.append(f"${certificate['budget_usd']:,.2f} of model cost")
    if certificate.get("budget_seconds") is not None:
        parts.append(f"{certificate['budget_seconds']:,.0f} s of model time (estimated)")
    if certificate.get("budget_tokens") is not None:
        parts.append(f"{certificate['budget_tokens']:,} prompt tokens")
    return " and ".join(parts) or "none"
