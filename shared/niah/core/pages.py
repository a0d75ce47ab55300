"""The pages' templates: Jinja2 with autoescaping, one environment for every page.

Markup lives in ``templates/`` where it can be read as HTML; Python hands the templates
data, and marks as safe only what it built as markup itself (the SVG pictures, the
samples' JSON for the page's script, the page's own style and script).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).parent / "templates"


@cache
def environment() -> Any:
    """The template environment: autoescaped, and a missing value is an error."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = lambda v: "–" if v is None else f"{v:.1f}"
    env.filters["usd"] = lambda v: "unknown" if v is None else f"${v:,.4f}"
    env.filters["grouped"] = lambda v: "–" if v is None else f"{v:,}"
    return env


def render(template: str, **context: Any) -> str:
    """``template`` filled with ``context`` (text escaped; ``markup`` values as they are)."""
    return str(environment().get_template(template).render(**context))


def markup(text: str) -> Any:
    """``text`` as markup the caller built and escaped itself: inserted as it is."""
    import markupsafe

    return markupsafe.Markup(text)
