"""Reports as people open them: finished runs on the local stack, pages in headless Chromium.

Three runs on one grid (the local Gemma on the single needle, Gemini through the Vertex
stand-in on the single needle and on three needles with two samples per point) and one
run on another grid. The report function's HTML is opened from the
bucket's own link, the comparison from the CLI's file; each is screenshot (under
results/browser/) and checked from its DOM, with every request the page makes recorded.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from niah.cli.results import EXIT_CELLS_FAILED
from niah.cloud.blobs import GcsBlobStore
from niah.cloud.store import FirestoreStore
from niah.core.results.sample_rows import COLUMN_NAMES
from niah.core.runs import RunRecord
from tests.integration.conftest import Stack
from tests.integration.test_local_stack import wait_complete
from tests.integration.test_tasks_run import submit

pytestmark = pytest.mark.integration

SCREENSHOTS = Path(__file__).resolve().parents[2] / "results" / "browser"
GRID = {"context_lengths": [500, 1000], "document_depth_percents": [0, 50, 100], "seed": 5}
# As the machine's own check starts it: no background requests to Google's hosts.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def runs(stack: Stack) -> Iterator[dict[str, str]]:
    configure = f"{stack.env['VERTEX_STANDIN_URL']}/_standin/config"
    # Three needles with two samples a point, answered by Gemini as the stand-in plays it
    # (right): the page's structure does not need the local model, whose rambling
    # three-needle answers were 12 calls and about 150 s of its time (issue 36).
    requests.post(configure, json={}, timeout=5).raise_for_status()
    multi = GRID | {"task": "multi_needle", "samples_per_cell": 2}
    submitted = {
        "gemma": submit(stack, GRID),
        "multi": submit(stack, multi | {"model_name": "gemini-3.8-flash"}),
    }
    wait_complete(submitted["multi"], timeout=400)
    # Then Gemini answers wrong at 500 tokens and has a 900-token input limit: wrong where
    # the local model is right, failed (grey) at 1,000.
    wrong = {"answer": "The special magic number is: 0.", "input_limit": 900}
    requests.post(configure, json=wrong, timeout=5).raise_for_status()
    submitted |= {
        "gemini": submit(stack, GRID | {"model_name": "gemini-3.8-flash"}),
        "elsewhere": submit(
            stack,
            {
                "model_name": "gemini-3.8-flash",
                "context_lengths": [700],
                "document_depth_percents": [25],
            },
        ),
    }
    try:
        for run_id in submitted.values():
            wait_complete(run_id, timeout=400)
        yield submitted
    finally:
        requests.post(configure, json={}, timeout=5).raise_for_status()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is missing: scripts/setup.sh installs it"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def open_page(browser: Any, url: str, screenshot: str) -> tuple[Any, list[str]]:
    """The page at ``url``, loaded; a full-page screenshot; every URL it requested."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(url, wait_until="load")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / screenshot), full_page=True)
    return page, requested


def test_the_report_opens_from_the_bucket_and_shows_every_sample(
    stack: Stack, runs: dict[str, str], browser: Any
) -> None:
    run_id = runs["multi"]
    store = FirestoreStore()
    run = store.get_run(run_id)
    cells = store.list_cells(run_id)
    assert len(cells) == 12  # 2 lengths x 3 depths x 2 samples
    url = run["report"]["html_url"]
    assert url.startswith(stack.env["STORAGE_EMULATOR_HOST"])
    page, requested = open_page(browser, url, "report-multi-needle.png")
    # No request left the page: the document itself, nothing else.
    assert requested == [url]
    assert page.locator("svg.heatmap").count() == 1
    assert page.locator("svg.heatmap g.point").count() == 6
    assert page.locator("#samples tbody tr").count() == len(cells)
    assert page.text_content("#shown") == f"{len(cells)} of {len(cells)} samples"
    assert "multi_needle" in page.text_content("h1")
    # Each square's tooltip: its point, and how many samples its mean is over.
    scored: dict[str, int] = {}
    for cell in cells:
        point = f"{cell['context_length']:,} tokens, depth {cell['depth_percent']:g} %: "
        scored[point] = scored.get(point, 0) + (cell.get("task_score") is not None)
    titles = page.locator("svg.heatmap g.point title").all_text_contents()
    assert len(titles) == len(scored) == 6
    for title in titles:
        point = title.split(": ")[0] + ": "
        n = scored[point]
        said = f"over {n} sample{'s' * (n != 1)}" if n else "failed, unscored or truncated"
        assert title.endswith(said), title
    # Printed, the controls go and every sample and column stays on the paper's width.
    page.set_viewport_size({"width": 1060, "height": 750})  # A4 landscape at 96 dpi
    page.emulate_media(media="print")
    assert not page.locator(".controls").is_visible()
    assert page.locator("#samples tbody tr:visible").count() == len(cells)
    last_column = page.locator("#samples thead th").last.bounding_box()
    assert last_column is not None and last_column["x"] + last_column["width"] <= 1060
    # The page's own @page size: A4 landscape, every page wider than it is tall.
    pdf = page.pdf(prefer_css_page_size=True)
    boxes = [box.split() for box in re.findall(rb"/MediaBox\s*\[([^\]]*)\]", pdf)]
    assert boxes and all(float(b[2]) > float(b[3]) for b in boxes)
    assert [round(float(v)) for v in boxes[0][2:]] == [842, 595]
    page.close()


def test_the_table_filters_each_outcome_exactly_and_sorts_a_whole_column(
    runs: dict[str, str], browser: Any
) -> None:
    # Gemini's run as the stand-in played it: wrong at 500 tokens, failed at 1,000.
    run_id = runs["gemini"]
    store = FirestoreStore()
    cells = store.list_cells(run_id)
    by_outcome = {
        outcome: sorted(c["cell_id"] for c in cells if c.get("outcome") == outcome)
        for outcome in ("wrong", "unscored")
    }
    assert len(by_outcome["wrong"]) == len(by_outcome["unscored"]) == 3
    url = store.get_run(run_id)["report"]["html_url"]
    page, _ = open_page(browser, url, "report-gemini.png")
    for outcome, cell_ids in by_outcome.items():
        page.select_option("#outcome", outcome)
        shown = page.locator("#samples tbody tr:visible td:first-child").all_text_contents()
        assert sorted(shown) == cell_ids, outcome
    page.select_option("#outcome", "")
    header = page.locator("th[data-column=context_length]")
    header.click()
    header.click()  # descending
    lengths = [
        int(text) for text in page.locator("#samples tbody tr td:nth-child(2)").all_text_contents()
    ]
    assert len(lengths) == len(cells) and lengths == sorted(lengths, reverse=True)
    assert lengths[0] > lengths[-1]
    page.close()


def test_the_comparison_of_two_models_shows_their_difference(
    stack: Stack, runs: dict[str, str], browser: Any, tmp_path: Path
) -> None:
    out = tmp_path / "compare.html"
    result = stack.niah("compare", runs["gemma"], runs["gemini"], runs["multi"], "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")
    store = FirestoreStore()
    gemma = {c["cell_id"]: c for c in store.list_cells(runs["gemma"])}
    gemini = {c["cell_id"]: c for c in store.list_cells(runs["gemini"])}
    differ = [
        cell_id
        for cell_id in gemma
        if (gemma[cell_id].get("outcome"), gemma[cell_id].get("task_score"))
        != (gemini[cell_id].get("outcome"), gemini[cell_id].get("task_score"))
    ]
    page, requested = open_page(browser, out.as_uri(), "compare.png")
    assert requested == [out.as_uri()]
    assert page.locator("svg.heatmap").count() == 3 + 1  # three runs and one difference
    # One score-against-length curve per run, each with its interval band; the paired
    # tests of the second and third run against the first.
    assert page.locator("svg.curves polyline.curve").count() == 3
    assert page.locator("svg.curves g.band").count() == 3
    assert page.locator("#section-significance h3").count() == 2
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, "the comparison page overflows a 1280 px window"
    rows = page.locator("#section-disagreements tbody tr")
    assert rows.count() == len(differ)
    assert sorted(rows.locator("td:first-child").all_text_contents()) == sorted(differ)
    # The difference's squares hold gemini minus gemma, point by point; grey (no value)
    # where either has nothing scored.
    difference = page.locator("#section-difference g.point rect")
    shown = difference.evaluate_all("squares => squares.map(s => s.dataset.value)")
    values = [float(v) if v else None for v in shown]
    expected: list[float | None] = []
    for depth in (0, 50, 100):
        for length in (500, 1000):
            cell_id = f"L{length:08d}-D{depth * 1000:06d}"
            a, b = gemma[cell_id].get("task_score"), gemini[cell_id].get("task_score")
            expected.append(None if a is None or b is None else 100 * (b - a))
    assert values == expected
    # The stand-in's Gemini was wrong at 500 tokens (0 minus Gemma's score, where Gemma's
    # answer was not cut off repeating itself) and over its limit at 1,000 (grey).
    assert values[1::2] == [None, None, None]
    assert all(v <= 0 for v in values[0::2] if v is not None) and -100.0 in values
    page.close()


def test_runs_on_grids_that_share_nothing_are_refused(stack: Stack, runs: dict[str, str]) -> None:
    result = stack.niah("compare", runs["gemma"], runs["elsewhere"], "--out", "/tmp/never.html")
    assert result.returncode == 1
    assert "share no (context length, depth) grid point" in result.stderr
    assert "lengths 700; depths 25" in result.stderr
    assert not Path("/tmp/never.html").exists()


def test_the_csv_export_has_one_row_per_sample(
    stack: Stack, runs: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "samples.csv"
    result = stack.niah("export", runs["multi"], "--format", "csv", "--out", str(out))
    assert result.returncode == 0, result.stderr
    raw = out.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # the byte-order mark a spreadsheet looks for
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    cells = FirestoreStore().list_cells(runs["multi"])
    assert [row["cell_id"] for row in rows] == [c["cell_id"] for c in cells]
    assert {row["outcome"] for row in rows} <= {"correct", "wrong", "unscored", "truncated"}
    summary = json.loads((tmp_path / "samples.summary.json").read_text())
    assert summary["samples"] == len(cells) and summary["run_id"] == runs["multi"]
    lines = tmp_path / "samples.jsonl"
    exported = stack.niah("export", runs["multi"], "--format", "jsonl", "--out", str(lines))
    assert exported.returncode == 0, exported.stderr
    assert len(lines.read_text().splitlines()) == len(cells)


def test_list_and_status_print_json_for_scripts(stack: Stack, runs: dict[str, str]) -> None:
    listed = stack.niah("list", "--json", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    by_id = {run["run_id"]: run for run in json.loads(listed.stdout)}
    assert set(runs.values()) <= set(by_id)
    multi = by_id[runs["multi"]]
    assert (multi["task"], multi["total"], multi["finished"]) == ("multi_needle", 12, 12)
    assert multi["created_at"].startswith("20")  # ISO 8601
    status = stack.niah("status", runs["gemini"], "--json")
    document = json.loads(status.stdout)
    assert status.returncode == document["exit_code"] == EXIT_CELLS_FAILED
    # The same exit code as the text mode's.
    assert stack.niah("status", runs["gemini"]).returncode == status.returncode
    assert document["run_id"] == runs["gemini"] and document["status"] == "complete"
    assert document["report"]["html_uri"].endswith(f"/reports/{runs['gemini']}/report.html")
    assert document["cost_usd"] > 0
    # The same request again names the same run: JSON says so, and nothing is called.
    again = stack.niah(
        "run", "--json", "--context_lengths", "500", "1000",
        "--document_depth_percents", "0", "50", "100", "--seed", "5",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    body = json.loads(again.stdout)
    assert body["run_id"] == runs["gemma"] and body["already_complete"] is True
    text = stack.niah("list")
    assert runs["multi"] in text.stdout and "progress" in text.stdout.splitlines()[0]


def test_niah_report_renders_the_html_locally(
    stack: Stack, runs: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "local.html"
    png = tmp_path / "h.png"
    result = stack.niah("report", runs["gemini"], "--html", str(out), "--out", str(png))
    assert result.returncode == 0, result.stderr
    stored = GcsBlobStore(stack.env["NIAH_BUCKET"]).read(f"reports/{runs['gemini']}/report.html")
    # The same heatmap and samples as the report function's page (the run's status and
    # times have moved on since it was drawn).
    for section in ("section-heatmap", "section-samples", "section-failures"):
        assert _section(out.read_text(), section) == _section(stored.decode(), section)
    assert png.read_bytes().startswith(b"\x89PNG")


def _section(page: str, anchor: str) -> str:
    return page.split(f'<section id="{anchor}">', 1)[1].split("</section>", 1)[0]


def test_markup_that_slipped_past_escaping_could_load_and_run_nothing(
    browser: Any, tmp_path: Path
) -> None:
    """A simulated escaping slip: the page's policy blocks every load it would make."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from niah.core.pages.report_page import render_run_page
    from niah.core.results.summary import summarize

    hits: list[str] = []

    class Counting(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    run = {"run_id": "run-x", "model": "m", "spec": {"task": "single"}, "totals": {}}
    cells = [{"cell_id": "L00001000-D000000", "context_length": 1000, "depth_percent": 0.0}]
    page_text = render_run_page(
        RunRecord.from_document(run), cells, summarize(RunRecord.from_document(run), cells)
    )
    slipped = (
        f'<img src="{base}/img"><link rel=stylesheet href="{base}/css">'
        f'<script src="{base}/js"></script><script>fetch("{base}/fetch");'
        "document.title='ran'</script>"
        f'<iframe src="{base}/frame"></iframe><style>@import url("{base}/import");</style>'
    )
    path = tmp_path / "slipped.html"
    path.write_text(page_text.replace("<body>", "<body>" + slipped, 1))
    page = browser.new_page()
    page.add_init_script(
        "window.blocked = [];"
        "document.addEventListener('securitypolicyviolation',"
        " e => window.blocked.push(e.blockedURI));"
    )
    page.goto(path.as_uri(), wait_until="domcontentloaded")
    page.wait_for_timeout(1000)
    blocked = page.evaluate("window.blocked")
    title = page.title()
    page.close()
    server.shutdown()
    assert hits == []  # nothing reached the server
    assert title != "ran"  # the slipped inline script never ran
    assert page_text.count("<script>") == 1  # the page's own, allowed by its hash
    assert len(blocked) >= 6, blocked  # image, style sheet, scripts, fetch, frame, import


def test_a_10000_sample_report_is_light_paged_and_filters_and_sorts_all_of_it(
    browser: Any, tmp_path: Path
) -> None:
    """Issue 26: 10,000 rows of markup were 8.8 MB; now data, paged 100 rows at a time.

    The filter, the outcome and the sort reach every sample, not the page shown.
    """
    import time

    from niah.core.pages.report_page import render_run_page
    from niah.core.results.summary import summarize
    from tests.unit.test_report_page import cell, run_doc

    cells = [
        cell(1000 + 100 * (n % 10), float(10 * ((n // 10) % 10)), n % 7 != 0, sample=n // 100)
        for n in range(10_000)
    ]
    run = run_doc("run-big")
    html = render_run_page(
        RunRecord.from_document(run), cells, summarize(RunRecord.from_document(run), cells, [])
    )
    assert len(html.encode()) < 5_000_000
    path = tmp_path / "report.html"
    path.write_text(html)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    started = time.perf_counter()
    page.goto(f"file://{path}", wait_until="load")
    opened = time.perf_counter() - started
    print(f"REPORT-10000 bytes={len(html.encode())} open_seconds={opened:.2f}")
    assert page.locator("#samples tbody tr").count() == 100
    assert page.text_content("#shown") == "10000 of 10000 samples"
    assert page.text_content("#page") == "page 1 of 100"
    page.click("#next")
    assert page.text_content("#page") == "page 2 of 100"
    wrong = sum(c["outcome"] == "wrong" for c in cells)
    page.select_option("#outcome", "wrong")
    assert page.text_content("#shown") == f"{wrong} of 10000 samples"
    assert set(
        page.locator("#samples tbody tr").evaluate_all("r => r.map(x => x.dataset.outcome)")
    ) == {"wrong"}
    page.select_option("#outcome", "")
    page.fill("#filter", "L00001900-D090000-S099")
    assert page.text_content("#shown") == "1 of 10000 samples"
    page.fill("#filter", "")
    header = page.locator("th[data-column=context_length]")
    header.click()
    header.click()  # descending, over all 10,000
    first = page.locator("#samples tbody tr td:nth-child(2)").all_text_contents()
    assert set(first) == {"1900"}
    page.close()


def test_two_runs_finishing_together_both_appear_in_the_runs_index(stack: Stack) -> None:
    """Two one-cell runs at once: their reports finish together, and neither is lost."""
    pair = [
        submit(
            stack,
            {
                "model_name": "gemini-3.8-flash",
                "context_lengths": [600],
                "document_depth_percents": [depth],
                "seed": 41,
            },
        )
        for depth in (10, 90)
    ]
    for run_id in pair:
        wait_complete(run_id, timeout=300)
    blobs = GcsBlobStore(stack.env["NIAH_BUCKET"])
    listed = [run["run_id"] for run in json.loads(blobs.read("reports/index.json"))["runs"]]
    assert all(listed.count(run_id) == 1 for run_id in pair), listed


def test_the_runs_index_lists_every_run_of_the_stack_once(
    stack: Stack, runs: dict[str, str], browser: Any
) -> None:
    blobs = GcsBlobStore(stack.env["NIAH_BUCKET"])
    url = blobs.browser_url("reports/index.html")
    # Runs of earlier tests may still finish (a fault test's run, swept) and write the
    # index between our reads: take a page and a JSON of one writing, as written.
    for _ in range(5):
        index = json.loads(blobs.read("reports/index.json"))
        page, requested = open_page(browser, url, "index.png")
        if json.loads(blobs.read("reports/index.json")) == index:
            break
        page.close()
        time.sleep(2)
    listed = [run["run_id"] for run in index["runs"]]
    assert len(listed) == len(set(listed))
    # Every run created before the index was last written is in it.
    stored = FirestoreStore().index_runs(["created_at"])
    written = index["generated_at"]
    assert {r["run_id"] for r in stored if r["created_at"].isoformat() < written} <= set(listed)
    assert set(runs.values()) <= set(listed)
    assert requested == [url]  # nothing leaves the page
    assert sorted(page.locator("#runs td.id").all_text_contents()) == sorted(listed)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # Filtered by task, only that task's runs stay.
    multi = sum(1 for run in index["runs"] if run["task"] == "multi_needle")
    page.select_option("#task", "multi_needle")
    assert page.locator("#runs tbody tr:visible").count() == multi >= 1
    assert page.text_content("#shown") == f"{multi} of {len(listed)} runs"
    page.select_option("#task", "")
    # Sorted by the mean, numbers as numbers (a run not yet reported sorts first).
    page.locator("#runs thead th", has_text="mean").click()
    means = [run["mean"] for run in index["runs"]]
    shown = page.locator("#runs tbody tr td:nth-child(6)").evaluate_all(
        "cells => cells.map(c => parseFloat(c.dataset.sort))"
    )
    assert shown == sorted(-1 if m is None else m for m in means)
    # The single needle's leaderboard: the local model and Gemini, each on its own row.
    board = page.locator("table.leaderboard[data-task=single] tbody tr td:first-child")
    assert {"gemma-3-270m-local", "gemini-3.8-flash"} <= set(board.all_text_contents())
    page.close()


@pytest.mark.parametrize(
    ("task", "lengths", "depths"),
    [("single", 4, 5), ("multi_needle", 4, 5), ("single", 15, 15), ("multi_needle", 15, 15)],
)
def test_the_report_leads_with_the_answer_and_fits_1280_px(
    browser: Any, tmp_path: Path, task: str, lengths: int, depths: int
) -> None:
    """Headline first, a heatmap at least 600 px wide, key columns within the page."""
    from niah.core.pages.report_page import render_run_page
    from niah.core.results.summary import summarize
    from tests.unit.test_report_page import cell, run_doc

    grid = [(1000 * (n + 1), 100 * d / (depths - 1)) for n in range(lengths) for d in range(depths)]
    outcomes = [(i % 5 != 0) if i % 17 else None for i in range(len(grid))]
    cells = [
        cell(length, depth, ok, model_response="x " * 200)
        # The other tasks' heatmaps show fractions: right is 1.0, wrong 0.0.
        | ({"score": float(ok)} if task != "single" and ok is not None else {})
        for (length, depth), ok in zip(grid, outcomes, strict=True)
    ]
    run = run_doc("run-layout", task=task)
    path = tmp_path / "report.html"
    path.write_text(
        render_run_page(
            RunRecord.from_document(run), cells, summarize(RunRecord.from_document(run), cells, [])
        )
    )
    name = f"report-{task.replace('_', '-')}-{lengths}x{depths}.png"
    page, requested = open_page(browser, f"file://{path}", name)
    assert requested == [f"file://{path}"]
    # The answer first: the headline comes before the heatmap, and says the mean.
    order = page.evaluate(
        "[...document.querySelectorAll('dl.headline, #section-heatmap, #section-samples,"
        " #section-run-settings')].map(e => e.className || e.id)"
    )
    assert order == ["headline", "section-heatmap", "section-samples", "section-run-settings"]
    assert "(95 %, " in page.text_content("dd[data-fact='mean (%)']")  # and its basis
    width = page.locator("svg.heatmap").bounding_box()["width"]
    assert width >= 600, width
    # The score against length: one curve and its band, a point per length.
    curve = page.locator("#section-score-against-length svg.curves")
    assert curve.locator("polyline.curve").count() == 1
    assert curve.locator("g.band").count() == 1
    assert curve.locator("circle").count() == lengths
    # Nothing overflows the page, and the samples table's key columns need no scrolling.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    scroll = "document.querySelector('#section-samples .scroll')"
    assert page.evaluate(f"{scroll}.scrollWidth <= {scroll}.clientWidth")
    # The other columns are a click away; the settings are folded.
    assert page.locator("#samples thead th:visible").count() == 9
    page.click("#columns")
    assert page.locator("#samples thead th:visible").count() == len(COLUMN_NAMES)
    assert not page.locator("#section-run-settings dl").is_visible()
    page.close()
