"""``niah models``: the model catalog as a table, or JSON for scripts.

Every fact the service holds of a model, from the one catalog (``niah.catalog``): what
it takes (limits, thinking, temperature), what it costs today and from which day that
changes, and its lifecycle with Google's named replacement and the page each fact was
read from. Nothing is called: the command works without a deployment.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from niah.cli.output import to_json


def _thinking(info: Any) -> str:
    """A model's thinking control in a few words: levels and default, or a budget range."""
    thinking = info.thinking
    if thinking.control == "level":
        default = thinking.default_level or "not published"
        return f"levels {'/'.join(thinking.levels)} (default {default})"
    if thinking.control == "budget":
        off = ", 0 off" if thinking.can_disable else ""
        on = "" if thinking.thinks_by_default else ", off unless given a budget"
        return f"budget {thinking.budget_min}-{thinking.budget_max}{off}{on}"
    return "none"


def _rates(prices: Any) -> dict[str, Any] | None:
    """Prices as the table shows them: USD per 1M tokens, with the long-context tier."""
    if prices is None:
        return None
    return {
        "input": prices.input,
        "output": prices.output,
        "cached_input": prices.cached_input,
        "long_context_threshold": prices.long_context_threshold,
        "long_input": prices.long_input,
        "long_output": prices.long_output,
        "checked": prices.checked,
    }


def model_rows(today: dt.date | None = None) -> list[dict[str, Any]]:
    """One row per catalog model: limits, thinking, temperature, prices, lifecycle, source."""
    from niah.catalog.models import CATALOG, temperature_record
    from niah.catalog.prices import NO_PRICE_REASONS, next_price_change, prices_for
    from niah.catalog.tiers import cache_min_tokens, offered_tiers

    today = today or dt.datetime.now(dt.UTC).date()
    noon = dt.datetime.combine(today, dt.time(12), dt.UTC)
    rows = []
    for info in CATALOG.values():
        life = info.lifecycle
        change = next_price_change(info.name, today)
        rows.append(
            {
                "model": info.name,
                "provider": info.provider,
                "stage": "Retired" if life.retired(today) else life.stage,
                "input_tokens": info.input_tokens,
                "output_tokens": info.output_tokens,
                "thinking": _thinking(info),
                "temperature": temperature_record(info),
                # As google-genai maps it (niah.catalog.tokenizers); exact or fitted prompts.
                "tokenizer": info.tokenizer,
                "prompt_lengths": info.prompt_lengths,
                "prices": _rates(prices_for(info.name, noon)),
                "no_price_reason": NO_PRICE_REASONS.get(info.name),
                "next_price_change": (
                    {"from": change[0].isoformat(), "prices": _rates(change[1])} if change else None
                ),
                "released": life.released.isoformat() if life.released else None,
                "retires": life.retirement_text() if life.retires else None,
                "replacements": list(life.replacements),
                "routed_to": life.routed_to,
                "notice": life.notice,
                # Vertex's pricing tiers and implicit cache for it (niah.catalog.tiers).
                "tiers": list(offered_tiers(info.name)) if info.provider == "gemini" else [],
                "cache_min_tokens": cache_min_tokens(info.name)
                if info.provider == "gemini"
                else None,
                "source": info.source,
            }
        )
    return rows


def _money(prices: dict[str, Any] | None) -> str:
    if prices is None:
        return "unknown"
    text = f"${prices['input']:g}/${prices['output']:g}"
    if prices.get("long_context_threshold"):
        text += (
            f" (>{prices['long_context_threshold'] // 1000}k: "
            f"${prices['long_input']:g}/${prices['long_output']:g})"
        )
    return text


def _limit(tokens: int | None) -> str:
    return f"{tokens:,}" if tokens else "setting"


# How a model's prompt lengths hold: in its own tokenizer, or fitted to Google's count.
PROMPT_LENGTHS = {"exact": "exact", "fitted": "fitted by countTokens (Google: an estimate)"}
COLUMNS = (
    "model",
    "stage",
    "input",
    "output",
    "thinking",
    "temperature",
    "tokenizer",
    "prompts",
    "$/1M in/out",
    "next price",
    "released",
    "retires",
    "instead",
    "source",
)


def table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as an aligned text table, one model a line."""
    cells = [
        [
            row["model"],
            row["stage"],
            _limit(row["input_tokens"]),
            _limit(row["output_tokens"]),
            row["thinking"],
            str(row["temperature"]),
            row["tokenizer"] or "unmapped",
            PROMPT_LENGTHS[row["prompt_lengths"]],
            _money(row["prices"]),
            (
                f"{row['next_price_change']['from']}: {_money(row['next_price_change']['prices'])}"
                if row["next_price_change"]
                else "-"
            ),
            row["released"] or "-",
            row["retires"] or "-",
            " or ".join(row["replacements"]) or "-",
            row["source"],
        ]
        for row in rows
    ]
    widths = [max(len(str(c)) for c in column) for column in zip(COLUMNS, *cells, strict=False)]
    return [
        "  ".join(
            str(value).ljust(width) for value, width in zip(line, widths, strict=True)
        ).rstrip()
        for line in (list(COLUMNS), *cells)
    ]


def cmd_models(args: argparse.Namespace) -> None:
    """Print the catalog: a table, or JSON with ``--json``."""
    rows = model_rows()
    if args.json:
        print(to_json(rows))
        return
    print("\n".join(table_lines(rows)))
    unpriced = sorted({row["no_price_reason"] for row in rows if row["no_price_reason"]})
    for reason in unpriced:
        print(f"unknown price: {reason}")
    print(
        "tokenizer: as google-genai 2.34.0 maps the model (unmapped: it maps none); prompts "
        "are exact only in a tokenizer the service holds (gemma3), else fitted by countTokens"
    )
