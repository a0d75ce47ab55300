"""Issue 37: a certify run on the local stack, against the Vertex stand-in's known curve.

The stand-in answers right with a known share at each length (``KnownCurve``: 100 % at
1,000 tokens, 98.3 % at 2,000, 5.3 % at 4,000), so the true effective length is 2,000.
The run goes round by round through Pub/Sub: each round's last cell asks a worker for
the next round, and the last round's for the report, which must carry the certificate,
and ``niah status`` the same sentence.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah.core.request.spec import RunRequest
from niah.core.results.certify_run import certify_cells, stored_samples
from niah_devtools.standin_curve import KnownCurve
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import wait_complete
from tests.integration.test_report_browser import browser, open_page  # noqa: F401 (fixture)
from tests.integration.test_tasks_run import submit

pytestmark = pytest.mark.integration

CURVE = KnownCurve(3000, 0.1, seed=4)
LENGTHS = [500, 1000, 2000, 4000, 8000]


def certified(stack: Stack, curve: KnownCurve, options: dict[str, Any]) -> tuple[str, Any]:
    """A certify run on the stand-in answering by ``curve``: its ID and finished run.

    The dollar budget is loose (10): the options' token budget binds first.
    """
    configure = f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config"
    requests.post(configure, json={"curve": curve.__dict__}, timeout=5).raise_for_status()
    try:
        run_id = submit(
            stack,
            {
                "model_name": "gemini-3.8-flash",
                "mode": "certify",
                "context_lengths": LENGTHS,
                "document_depth_percents": [0, 50, 100],
                "certify_max_usd": 10.0,
                **options,
            },
        )
        return run_id, wait_complete(run_id, timeout=300)
    finally:
        requests.post(configure, json={}, timeout=5).raise_for_status()


def test_a_certify_run_goes_round_by_round_to_its_certificate(
    stack: Stack,
    browser: Any,  # noqa: F811 (the fixture imported above)
) -> None:
    run_id, run = certified(
        stack,
        CURVE,
        {"certify_max_tokens": 400_000, "seed": 8},  # the tokens bind first
    )
    store = FirestoreStore()
    cells = store.list_cells(run_id)
    spec = RunRequest.model_validate(run["spec"])
    planned = certify_cells(spec, stored_samples(run["certify"]))
    # Every cell the rounds asked for was answered once, and nothing else.
    assert sorted(c["cell_id"] for c in cells) == sorted(c.cell_id for c in planned)
    assert int(run["total"]) == len(cells) == int(run["done"])
    summary = json.loads(GcsBlobStore(stack.env["NIAH_BUCKET"]).read(
        run["report"]["summary_uri"].split("/", 3)[3]
    ))  # fmt: skip
    certificate = summary["certificate"]
    truth = CURVE.effective_length(LENGTHS, 85.6)
    assert truth == 2000
    assert certificate["length"] == truth and certificate["below"] == 4000
    assert certificate["determined"] and certificate["reason"] == "determined"
    assert len(certificate["looks"]) >= 3  # rounds, not one fan-out
    assert certificate["tokens"] <= 400_000
    # Each look's samples are the first of its length's stored cells, scored as stored.
    for look in certificate["looks"]:
        scored = [c for c in cells if c["context_length"] == look["length"]]
        assert look["samples"] <= len(scored)
    text = summary["measures"]["effective_length"]["text"]
    assert text == (
        "2,000 tokens, 95 % confident (2,000 passes and 4,000 fails; threshold 85.6 % "
        "give or take 5 points, rule ruler, certified)"
    )
    status = stack.niah("status", run_id)
    assert f"effective length {text};" in status.stdout, status.stdout + status.stderr
    # The report leads with the certificate, one row per round, at 1280 px.
    url = run["report"]["html_url"]
    page, requested = open_page(browser, url, "report-certify.png")
    assert requested == [url]
    section = page.locator("#section-certificate")
    assert section.locator("dd").first.text_content() == text
    assert section.locator("tbody tr").count() == len(certificate["looks"])
    # Its mean is of the samples the rounds asked, not of a grid, and the headline says so.
    assert page.locator('dd[data-fact="mean of the samples asked (%)"]').count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.close()


def test_a_certify_run_by_nolimas_rule_asks_the_base_first(stack: Stack) -> None:
    """A model right 90 % at best: NoLiMa's threshold is 85 % of that (about 76 %).

    The run's first round is the base at the shortest length (half the run's 500 cells:
    250 samples); the certificate says the rule and its band, and claims nothing the
    truth denies: 2,000 tokens (82 % right there; RULER's 85.6 % would say 1,000).
    """
    curve = KnownCurve(4000, 0.3, top=0.9, seed=5)
    _, run = certified(
        stack,
        curve,
        {"certify_rule": "nolima", "certify_max_tokens": 1_500_000, "seed": 9},
    )
    summary = json.loads(GcsBlobStore(stack.env["NIAH_BUCKET"]).read(
        run["report"]["summary_uri"].split("/", 3)[3]
    ))  # fmt: skip
    certificate = summary["certificate"]
    assert certificate["rule"] == "nolima"
    base = certificate["looks"][0]
    assert (base["length"], base["samples"], base["verdict"]) == (500, 250, "base")
    truth = curve.effective_length(LENGTHS, 85 * curve.right_share(LENGTHS[0]))
    assert truth == 2000 and curve.effective_length(LENGTHS, 85.6) == 1000
    # 95 % confident: never a length past the truth's neighbour (how close it lands is
    # the bench's to measure: here the 500 cells a run allows cut the rounds short).
    assert certificate["length"] is not None and certificate["length"] <= 4000
    assert certificate["below"] is None or certificate["below"] > 1000
    assert certificate["fail_at"] <= 85 * curve.right_share(500) <= certificate["pass_at"]
    text = summary["measures"]["effective_length"]["text"]
    assert "threshold 85 % of the base" in text and "(rule nolima)" in text, text
