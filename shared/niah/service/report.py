"""The report of a finished run, in Cloud Storage: heatmap PNG, HTML page, JSON summary."""

from __future__ import annotations

import datetime as dt
import io
import json
import textwrap
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from niah.core.interfaces import (
    RUN_COMPLETE,
    AlertPublisher,
    BlobStore,
    ResultStore,
    SpendLedger,
    gs_uri,
)
from niah.core.pages.axis_view import panel_title
from niah.core.pages.heatmap import (
    DIFFERENCE_SCALE,
    ERROR_COLOUR,
    HARNESS_SCALE,
    PERCENT_SCALE,
    Scale,
    percent_table,
)
from niah.core.pages.report_page import REPORT_PAGE_FILE, heatmap_cells, render_run_page
from niah.core.request.sentinel_request import SENTINEL_CHECK
from niah.core.results.comparison import Comparison
from niah.core.results.effective import effective_length_text
from niah.core.results.measures import basis_of
from niah.core.results.summary import (
    GENERATED_MRCR_NOTE,
    ScoreTable,
    format_cost,
    score_table,
    summarize,
)
from niah.core.results.uncertainty import with_interval
from niah.core.runs import RunRecord, stored_run
from niah.errors import NiahError, ReportPendingError, ReportRenderError, RetryableError
from niah.logs import log
from niah.service.lease import keep_report_claim
from niah.service.run_completion import record_report_failure
from niah.service.runs_index import refresh_index
from niah.service.sentinels import check_sentinel_run, publish_sentinel_alert
from niah.service.spend_settlement import settle_run_spend, settle_spent, settled_usd
from niah.settings import get_settings


def render_heatmap(
    table: ScoreTable,
    *,
    title: str,
    fraction: bool = False,
    notes: str = "",
    panels: Sequence[tuple[str, ScoreTable]] = (),
) -> bytes:
    """The harness's heatmap: x context length, y depth, red-yellow-green, grey errors.

    ``fraction``: scores in [0, 1] (every task but ``single``), drawn as 0-100 %;
    otherwise the harness's 1-10 scale. Repeats show their mean. The title is one
    line; ``notes`` go below the plot, wrapped between words (a URI is never cut).
    ``panels``: a run with an axis (distractors, haystack order) is drawn as one heatmap
    per value, side by side on the one scale, each titled by its value.
    """
    shown = [(title, table)] if not panels else [(f"{title}\n{name}", t) for name, t in panels]
    scale = PERCENT_SCALE if fraction else HARNESS_SCALE
    width = max(6.0, 0.9 * len(table.lengths) + 3)
    with plain_text_figure(ncols=len(shown), figsize=(width * len(shown), 5.5), squeeze=False) as (
        figure,
        axes,
    ):
        lines = wrap_notes(notes, figure.get_figwidth())
        for axis, (name, one) in zip(axes[0], shown, strict=True):
            _draw_heatmap(figure, axis, percent_table(one) if fraction else one, scale, name)
            axis.title.set_fontsize(11 if len(shown) == 1 else 9)
        if lines:
            figure.text(0.01, 0.01, "\n".join(lines), fontsize=7.5, color="#444", va="bottom")
            figure.tight_layout(rect=(0, 0.03 + 0.035 * len(lines), 1, 1))
        return _png(figure, laid_out=bool(lines))


@contextmanager
def plain_text_figure(**subplots: Any) -> Iterator[tuple[Any, Any]]:
    r"""A figure (``plt.subplots(**subplots)``) whose every text is drawn as written.

    Labels, model names, URIs and notes come from users, and matplotlib reads ``$...$``
    as math (and, with ``text.usetex``, hands text to TeX): ``x $\frac{a$`` raised
    ValueError and deep braces RecursionError on every try, so the run never got its
    report. Every Text takes its parse_math and usetex from rcParams when it is made,
    tick labels as late as the draw, so the figure is made, drawn and saved inside this
    context, and closed on leaving it: no text call can forget it.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        figure, axes = plt.subplots(**subplots)
        try:
            yield figure, axes
        finally:
            plt.close(figure)


def wrap_notes(notes: str, figure_inches: float) -> list[str]:
    """The notes in lines that fit the figure, broken between words only (URIs whole)."""
    width = int(figure_inches * 15)  # characters of the 7.5 pt notes per inch
    return textwrap.wrap(notes, width, break_long_words=False, break_on_hyphens=False)


def render_comparison_png(comparison: Comparison) -> bytes:
    """The compared runs' heatmaps side by side on one percent scale, then the difference."""
    panels = len(comparison.runs) + 1
    columns = len(comparison.difference.lengths)
    with plain_text_figure(
        nrows=1,
        ncols=panels,
        figsize=(panels * max(5.0, 0.75 * columns + 2.5), 5.0),
        squeeze=False,
    ) as (figure, axes):
        for axis, run in zip(axes[0], comparison.runs, strict=False):
            _draw_heatmap(figure, axis, run.table, PERCENT_SCALE, f"{run.name}\n{run.run_id}")
        first, second = comparison.runs[0].name, comparison.runs[1].name
        _draw_heatmap(
            figure,
            axes[0][-1],
            comparison.difference,
            DIFFERENCE_SCALE,
            f"{second}\nminus {first}",
        )
        return _png(figure)


def _draw_heatmap(figure: Any, axes: Any, table: ScoreTable, scale: Scale, title: str) -> None:
    """One heatmap on ``axes``: the scale's colours, grey where nothing was scored."""
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.patches import Patch

    data = np.array(
        [[np.nan if v is None else v for v in row] for row in table.scores], dtype=float
    )
    cmap = LinearSegmentedColormap.from_list("niah", list(scale.colours)).with_extremes(
        bad=ERROR_COLOUR
    )
    image = axes.imshow(
        np.ma.masked_invalid(data), cmap=cmap, vmin=scale.low, vmax=scale.high, aspect="auto"
    )
    axes.set_xticks(range(len(table.lengths)), [f"{n:,}" for n in table.lengths], rotation=45)
    axes.set_yticks(range(len(table.depths)), [f"{d:g}" for d in table.depths])
    axes.set_xlabel("Context length (tokens)")
    axes.set_ylabel("Depth percent")
    axes.set_title(title, fontsize=9)
    # White borders between cells, as the harness's seaborn heatmap draws them.
    axes.set_xticks([i - 0.5 for i in range(1, len(table.lengths))], minor=True)
    axes.set_yticks([i - 0.5 for i in range(1, len(table.depths))], minor=True)
    axes.grid(which="minor", color="white", linewidth=1.5)
    axes.tick_params(which="minor", length=0)
    if len(table.lengths) * len(table.depths) <= 200:
        for (row, col), value in np.ndenumerate(data):
            if not np.isnan(value):
                axes.text(col, row, f"{value:.3g}", ha="center", va="center", fontsize=8)
    figure.colorbar(image, ax=axes, label=scale.label)
    if np.isnan(data).any():
        axes.legend(
            handles=[Patch(color=ERROR_COLOUR, label="failed, unscored or truncated")],
            loc="upper left",
            bbox_to_anchor=(1.25, 1.0),
            frameon=False,
        )


def _png(figure: Any, *, laid_out: bool = False) -> bytes:
    """The figure as PNG bytes; drawn inside ``plain_text_figure``, which closes it."""
    if not laid_out:
        figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def heatmap_title(summary: dict[str, Any], run: RunRecord) -> str:
    """Two lines: the run's label (model · task); its mean, 95 % interval and its basis.

    The basis ("clustered by grid point, 15 points") makes one line too long for the
    picture's width, so the mean has a line of its own. A run with an axis: the label
    alone; each value's panel names its own mean.
    """
    if summary.get("variants"):
        return run.label
    measures = summary["measures"]
    mean = with_interval(
        measures["mean"], measures.get("mean_interval"), basis=basis_of(measures, "mean")
    )
    return f"{run.label}\nmean (%) {mean}"


def heatmap_notes(summary: dict[str, Any], run_id: str, run: RunRecord) -> str:
    """Under the plot: scorer, effective length, what was not scored, cost, and provenance.

    So a shared picture says where it came from (run, haystack, day).
    """
    notes = [
        f"{summary['scorer']} score",
        f"effective length {effective_length_text(summary['measures']['effective_length'])}",
        f"{summary['failed']} failed",
        f"{summary['outcomes']['unscored'] - summary['failed']} unscored",
        f"{summary['outcomes'].get('truncated', 0)} truncated",
        format_cost(summary),
    ]
    if summary.get("answered_by"):  # Google routed the asked model to another
        notes.append(summary["answered_by"])
    if summary.get("token_count_note"):  # the lengths are the model's count, fitted
        notes.append(summary["token_count_note"].split(" (")[0] + "; lengths fitted")
    if summary["task"] == "mrcr" and summary["mrcr"]["samples"] == GENERATED_MRCR_NOTE:
        notes.append("MRCR generated samples, not comparable to model cards")
    created = run.stamped("created_at")
    day = f"{created:%Y-%m-%d}" if isinstance(created, dt.datetime) else "date unknown"
    notes += [run_id, f"haystack {run.haystack_uri}", day]
    return " · ".join(notes)


ReportFile = tuple[str, bytes, str]  # name, data, content type


def render_report_files(
    run_id: str, run: RunRecord, cells: list[dict[str, Any]], summary: dict[str, Any]
) -> dict[str, ReportFile]:
    """The heatmap, the HTML report and the summary, rendered (nothing stored)."""
    fraction = summary["score_scale"] == "fraction"
    shown = heatmap_cells(cells, summary["task"])
    heatmap = render_heatmap(
        score_table(shown),
        title=heatmap_title(summary, run),
        fraction=fraction,
        notes=heatmap_notes(summary, run_id, run),
        panels=[
            (panel_title(v), score_table([c for c in shown if c.get("variant") == v["variant"]]))
            for v in summary.get("variants") or []
        ],
    )
    return {
        "heatmap": ("heatmap.png", heatmap, "image/png"),
        "html": (
            REPORT_PAGE_FILE,
            # Drawn once every cell is in: complete, as the run is marked when it is stored.
            # The page reads the run's document (the read side's migration is to come).
            render_run_page(
                run.with_fields(status=RUN_COMPLETE).to_document(), cells, summary
            ).encode(),
            "text/html; charset=utf-8",
        ),
        "summary": (
            "summary.json",
            json.dumps(summary, indent=2, default=str).encode(),
            "application/json",
        ),
    }


def write_report_files(
    run_id: str, files: dict[str, ReportFile], blobs: BlobStore
) -> dict[str, str]:
    """Store the rendered files; where each is (gs:// and https)."""
    prefix = f"{get_settings().reports_prefix}{run_id}/"
    location = {}
    for key, (name, data, content_type) in files.items():
        blobs.write(prefix + name, data, content_type=content_type)
        location[f"{key}_uri"] = gs_uri(blobs.bucket, prefix + name)
        location[f"{key}_url"] = blobs.browser_url(prefix + name)
    return location


def render_report(
    run_id: str,
    *,
    store: ResultStore,
    blobs: BlobStore,
    ledger: SpendLedger | None = None,
    alerts: AlertPublisher | None = None,
) -> dict[str, str] | None:
    """Render and store the run's report once every cell is in; rendered once.

    Once written, the run's spend reservation is settled to what its calls cost
    (``ledger``; ``niah.service.spend_settlement``), and a sentinel's run has its check
    published to the alerts topic (``alerts``; ``niah.service.sentinels``), also by a
    redelivery that finds the report written but the check not yet published.

    Claims first, then reads: a reset while rendering drops the claim, and the run is
    marked complete only if the claim still stands and the counts match the cells read
    (``finish_report``). Otherwise the report is stale: it is reopened and requested
    again, so the cells as they are now are rendered. The claim is a short lease
    (``report_lease_seconds``) renewed while this renders (``keep_report_claim``): a
    renderer killed mid-render lets it lapse within a lease, and the sweep's next pass
    asks for the report again.

    A report that cannot be drawn from the run's data fails the same way every time: it
    is recorded on the run (``report_failed``) and acknowledged. Anything else (the
    store or the bucket out of reach) drops the claim and raises, so Pub/Sub delivers
    the request again, and dead-letters it at its limit (``record_report_dead_letter``).

    Returns the report's location, or None if the run is unknown, not finished, its
    report failed or went stale, or another instance is rendering it.
    """
    run = stored_run(store, run_id, counts=False)
    if run is None:
        log("report for an unknown run dropped", severity="WARNING", run_id=run_id)
        return None
    if store.count_cells(run_id) < run.total:
        log("report requested before the last cell", run_id=run_id)
        return None
    claim_id = uuid.uuid4().hex
    lease_seconds = get_settings().report_lease_seconds
    claim = store.claim_report(run_id, lease_seconds, claim_id)
    sentinel = run.spec.sentinel is not None
    if claim == "done":
        log("duplicate report request suppressed", run_id=run_id)
        done = stored_run(store, run_id, counts=False)
        if ledger is not None:  # a renderer killed before it settled: settled here
            settle_spent(run_id, store=store, ledger=ledger, run=done)
        if done is None:  # deleted since the claim
            return {}
        if sentinel and alerts is not None:
            publish_sentinel_alert(run_id, done.to_document(), store=store, alerts=alerts)
        return dict(done.report or {})
    if claim == "failed":
        log("report failed before; not rendered until the run is reopened", run_id=run_id)
        return None
    if claim == "held":
        # Another renderer is at work: nothing to do here. If it dies, its claim lapses
        # within a lease and the sweep asks for the report again (``sweep_stalled_runs``).
        log("report being rendered elsewhere", run_id=run_id)
        return None
    keeper = keep_report_claim(store, run_id, claim_id, lease_seconds)
    try:
        with keeper:
            location = _render_claimed(run_id, claim_id, store=store, blobs=blobs, ledger=ledger)
    except Exception:
        # Let the next delivery render rather than find the claim held and drop it: so a
        # request that keeps failing is dead-lettered. Unless the keeper lost the claim
        # (a reset dropped it, or the store was out of reach a whole lease and another
        # renderer took it over): then it is not ours to drop.
        if not keeper.lost:
            try:
                store.reopen_report(run_id)
            except NiahError as error:
                log(
                    "report claim not dropped",
                    severity="WARNING",
                    run_id=run_id,
                    error=str(error),
                )
        raise
    # After the claim is let go: a publish that fails raises to be delivered again,
    # which finds the report done and publishes then (the report stays written).
    if location is not None and sentinel and alerts is not None:
        reported = store.get_run(run_id, counts=False) or {}  # the check, as stored
        publish_sentinel_alert(run_id, reported, store=store, alerts=alerts)
    return location


def _render_claimed(
    run_id: str,
    claim_id: str,
    *,
    store: ResultStore,
    blobs: BlobStore,
    ledger: SpendLedger | None = None,
) -> dict[str, str] | None:
    """Read, render and store the report under ``claim_id``; see ``render_report``."""
    run = stored_run(store, run_id)  # with its counts and totals, read after the claim
    if run is None:  # deleted since the claim: nothing to report
        log("report for a deleted run dropped", severity="WARNING", run_id=run_id)
        return None
    cells = store.list_cells(run_id)
    if len(cells) < run.total:  # reset between the check and the claim
        store.reopen_report(run_id)
        log("report requested before the last cell", run_id=run_id, stored=len(cells))
        return None
    calls = store.list_calls(run_id)
    completed_at = dt.datetime.now(dt.UTC)  # on the page and the run document alike
    run = run.with_fields(stamps={**run.stamps, "completed_at": completed_at})
    try:
        # The summary and the sentinel check read the run's document (the read side's
        # migration to RunRecord is to come).
        summary = summarize(run.to_document(), cells, calls)
        check = check_sentinel_run(run_id, run.to_document(), cells, store=store)
        if check is not None:
            run = run.with_fields(sentinel_check=check)
        files = render_report_files(run_id, run, cells, summary)
    except RetryableError:
        raise
    except Exception as error:  # the run's data: the same every try, so never retried
        reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        if record_report_failure(
            run_id, ReportRenderError.kind, reason, store=store, claim_id=claim_id
        ):
            if ledger is not None:  # no report, but its calls are spent: settled
                settle_spent(run_id, store=store, ledger=ledger, run=run)
            refresh_index(store, blobs)  # which says the report failed, and why
        return None
    location = write_report_files(run_id, files, blobs)
    fields = {
        "report": location,
        "mean_score": summary["mean_score"],
        "measures": summary["measures"],
        **({"mrcr": summary["mrcr"]} if "mrcr" in summary else {}),
        # A run with an axis: each value's measures, and the later values against the
        # first (niah status shows them).
        **{key: summary[key] for key in ("variants", "variant_differences") if key in summary},
        "outcomes": summary["outcomes"],
        "retrieved_share": summary["retrieved_share"],
        "prompt_token_deviation": summary["prompt_token_deviation"],
        **({"count_fit": summary["count_fit"]} if summary.get("count_fit") else {}),
        "spend": summary["spend"],
        "served_models": summary["served_models"],
        "completed_at": completed_at,
        **({SENTINEL_CHECK: check} if check is not None else {}),
    }
    if not store.finish_report(run_id, claim_id, len(cells), fields):
        # A reset (or another renderer) came in while this one read and rendered: what
        # it wrote may be stale, and may have overwritten a fresher report. Reopen, so
        # the cells as they are now are rendered by the next request.
        log("report went stale while rendering", severity="WARNING", run_id=run_id)
        store.reopen_report(run_id)
        if store.count_cells(run_id) >= run.total:
            raise ReportPendingError(f"the report of {run_id} went stale; rendering again")
        return None
    log("report written", run_id=run_id, **location)
    if ledger is not None:
        settle_run_spend(run_id, settled_usd(summary["spend"]), ledger=ledger)  # as reported
    refresh_index(store, blobs)
    return location
