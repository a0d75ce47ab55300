"""The pages' templates: Jinja2 with autoescaping, one environment for every page.

Markup, style and script live in ``templates/`` where they can be read as what they are;
Python hands the templates data (figures as numbers, facts as text), and no page marks
any Python string as safe: every value is escaped on its way in.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
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
    # ``tojson`` (the samples' data in the report): compact, and texts as written, not
    # as \u escapes; it still escapes <, >, & and ' so the JSON cannot end its script.
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "separators": (",", ":")}
    return env


def render(template: str, **context: Any) -> str:
    """``template`` filled with ``context``, every value escaped."""
    return str(environment().get_template(template).render(**context))


@cache
def content_security_policy(script: str) -> str:
    """The policy of a page whose one script is the template ``script``.

    No request of any kind: a self-contained page needs none, and a shared one must not
    call out. Inline styles; only the page's own script, by the hash of the template's
    rendered text (the very bytes the page includes), so no injected script could run
    even if some text escaped its escaping; images only as data: URIs.
    """
    digest = hashlib.sha256(render(script).encode()).digest()
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; script-src "
        f"'sha256-{base64.b64encode(digest).decode()}'; img-src data:; base-uri 'none'; "
        "form-action 'none'"
    )


def page_shell(title: str) -> dict[str, Any]:
    """What ``page.html``, the report's and the comparison's shell, needs besides its body."""
    return {
        "title": title,
        "policy": content_security_policy("page.js"),
        "generated": f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M UTC}",
    }
