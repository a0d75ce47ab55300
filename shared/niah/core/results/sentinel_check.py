"""Did the model behind a sentinel change? Its run against the sentinel's run before it.

A sentinel asks the same request again on a schedule (``niah.service.sentinels``), so
two of its runs answer the same prompts (same lengths, depths, samples and seed) and
their samples pair up: the paired test the service already has
(``niah.core.results.paired``, exact McNemar on right/wrong) says whether the score
moved beyond what noise does. The run is flagged when it did (either way: a rise is a
change too) or when the model that answered is not the one that answered before (each
reply's ``modelVersion``, ``niah.core.results.served_models``). One test per run, at 5 %:
a sentinel that fires daily and never changes is flagged about once in twenty runs by
chance, as any 5 % test is; the alert says the p-value so a reader can weigh it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from niah.core.results.paired import effect_text, paired_comparison
from niah.core.results.served_models import served_versions, versions_text

# The run document's field that keeps the check (and the index reads).
SENTINEL_CHECK = "sentinel_check"


def sentinel_check(
    sentinel: str,
    current: tuple[dict[str, Any], Sequence[dict[str, Any]]],
    previous: tuple[dict[str, Any], Sequence[dict[str, Any]]] | None,
) -> dict[str, Any]:
    """The check of ``current`` (run, cells) against ``previous``; JSON for the run.

    ``previous``: the sentinel's latest complete run scheduled before this one, or None
    (the sentinel's first run: nothing to compare with, never flagged).
    """
    run, cells = current
    versions = served_versions(list(cells))
    check: dict[str, Any] = {
        "sentinel": sentinel,
        "scheduled_at": (run.get("spec") or {}).get("scheduled_at"),
        "model_versions": versions,
    }
    if previous is None:
        return check | {
            "previous_run_id": None,
            "flagged": False,
            "reasons": [],
            "text": f"first run of sentinel {sentinel}: nothing before it to compare with",
        }
    before_run, before_cells = previous
    if _asked(before_run) != _asked(run):
        # The definition was changed: other prompts, nothing to pair. A new baseline.
        return check | {
            "previous_run_id": before_run["run_id"],
            "previous_scheduled_at": _when(before_run),
            "flagged": False,
            "reasons": [],
            "text": (
                f"the sentinel's request changed since run {before_run['run_id']} "
                f"({_when(before_run)}): this run is a new baseline, not compared"
            ),
        }
    before_versions = served_versions(list(before_cells))
    paired = paired_comparison(
        (str(before_run["run_id"]), list(before_cells)), (str(run["run_id"]), list(cells))
    )
    reasons = []
    if paired.overall is not None and paired.overall.significant:
        reasons.append(f"score changed: {effect_text(paired.overall)}")
    # A reply that names no version (the local model) says nothing either way.
    if versions and before_versions and set(versions) != set(before_versions):
        reasons.append(
            f"model version changed: {versions_text(before_versions)} before, "
            f"{versions_text(versions)} now"
        )
    since = f"since run {before_run['run_id']} ({_when(before_run)})"
    if paired.overall is None:
        compared = "no sample is scored in both runs, so the scores cannot be tested"
    else:
        compared = effect_text(paired.overall)
    text = (
        f"changed {since}: " + "; ".join(reasons)
        if reasons
        else f"unchanged {since}: {compared}"
        + ("; the same model version" if versions and before_versions else "")
    )
    return check | {
        "previous_run_id": before_run["run_id"],
        "previous_scheduled_at": _when(before_run),
        "previous_model_versions": before_versions,
        "paired": paired.overall.as_dict() if paired.overall else None,
        "flagged": bool(reasons),
        "reasons": reasons,
        "text": text,
    }


def _asked(run: dict[str, Any]) -> dict[str, Any]:
    """What a run asked, apart from its firing and its name for people."""
    spec = run.get("spec") or {}
    return {k: v for k, v in spec.items() if k not in ("sentinel", "scheduled_at", "label")}


def _when(run: dict[str, Any]) -> str:
    return str((run.get("spec") or {}).get("scheduled_at") or "time not recorded")


def previous_run(
    runs: Sequence[dict[str, Any]], scheduled_at: str, *, complete: str = "complete"
) -> dict[str, Any] | None:
    """Of a sentinel's runs, the latest complete one scheduled before ``scheduled_at``.

    Times are RFC 3339 in UTC to the second (``firing_time``), so they sort as text.
    """
    before = [
        run
        for run in runs
        if run.get("status") == complete
        and str((run.get("spec") or {}).get("scheduled_at") or "") < scheduled_at
    ]
    return max(before, key=lambda run: str(run["spec"]["scheduled_at"]), default=None)


def alert_message(run_id: str, run: dict[str, Any], check: dict[str, Any]) -> dict[str, Any]:
    """What the alerts topic carries of a sentinel's run: the check, and where to look."""
    measures = run.get("measures") or {}
    return {
        "run_id": run_id,
        "sentinel": check["sentinel"],
        "scheduled_at": check.get("scheduled_at"),
        "model": run.get("model"),
        "flagged": check["flagged"],
        "reasons": check["reasons"],
        "text": check["text"],
        "mean": measures.get("mean"),
        "mean_interval": measures.get("mean_interval"),
        "model_versions": check.get("model_versions") or {},
        "previous_run_id": check.get("previous_run_id"),
        "report_url": (run.get("report") or {}).get("html_url"),
    }


def alert_attributes(check: dict[str, Any], run_id: str) -> dict[str, str]:
    """The message's attributes: a subscription filters on them (``flagged = "true"``)."""
    return {
        "sentinel": str(check["sentinel"]),
        "run_id": run_id,
        "flagged": "true" if check["flagged"] else "false",
    }
