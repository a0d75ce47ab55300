"""Did the model behind a sentinel change? Its run against the sentinel's run before it.

A sentinel asks the same request again on a schedule (``niah.service.sentinels``), so
two of its runs with the same request key (``RunRequest.request_key``: the same options
and haystack) answer the same prompts and their samples pair up: the paired test the
service already has (``niah.core.results.paired``, exact McNemar on right/wrong) says
whether the score moved beyond what noise does. The run is flagged when it did (either
way: a rise is a change too); when the share of samples that got a score moved (calls
that fail, are blocked or cut off, paired the same way: a model taken away fails every
call); when nothing could be tested; or when the model that answered is not the one
that answered before (each reply's ``modelVersion``, ``niah.core.results.served_models``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from niah.core.request.sentinel_request import SENTINEL_KEY
from niah.core.results.paired import pair_key, paired_comparison, paired_test
from niah.core.results.paired_text import effect_text
from niah.core.results.served_models import served_versions, versions_text


def sentinel_check(
    sentinel: str,
    current: tuple[dict[str, Any], Sequence[dict[str, Any]]],
    previous: tuple[dict[str, Any], Sequence[dict[str, Any]]] | None,
    *,
    other_request: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The check of ``current`` (run, cells) against ``previous``; JSON for the run.

    ``previous``: the sentinel's latest complete run of the same request key scheduled
    before this one, or None: then the first run (nothing to compare with) or, when
    ``other_request`` (the latest earlier run, of another request) is given, a new
    baseline. Neither is flagged.
    """
    run, cells = current
    versions = served_versions(list(cells))
    check: dict[str, Any] = {
        "sentinel": sentinel,
        "scheduled_at": (run.get("spec") or {}).get("scheduled_at"),
        "model_versions": versions,
    }
    if previous is None:
        text = f"first run of sentinel {sentinel}: nothing before it to compare with"
        if other_request is not None:
            text = (
                f"the sentinel's request changed since run {other_request['run_id']} "
                f"({_when(other_request)}): this run is a new baseline, not compared"
            )
        return check | {"previous_run_id": None, "flagged": False, "reasons": [], "text": text}
    before_run, before_cells = previous
    before_versions = served_versions(list(before_cells))
    paired = paired_comparison(
        (str(before_run["run_id"]), list(before_cells)), (str(run["run_id"]), list(cells))
    )
    scored = scored_test(before_cells, cells)
    reasons = []
    if paired.overall is None:
        reasons.append("not tested: no sample is scored in both runs")
    elif paired.overall.significant:
        reasons.append(f"score changed: {effect_text(paired.overall)}")
    if scored is not None and scored.significant:
        reasons.append(f"share of samples scored changed: {effect_text(scored)}")
    # A reply that names no version (the local model) says nothing either way.
    if versions and before_versions and set(versions) != set(before_versions):
        reasons.append(
            f"model version changed: {versions_text(before_versions)} before, "
            f"{versions_text(versions)} now"
        )
    since = f"since run {before_run['run_id']} ({_when(before_run)})"
    if reasons:
        text = f"changed {since}: " + "; ".join(reasons)
    else:
        assert paired.overall is not None  # else "not tested" is a reason
        same = "; the same model version" if versions and before_versions else ""
        text = f"unchanged {since}: {effect_text(paired.overall)}{same}"
    return check | {
        "previous_run_id": before_run["run_id"],
        "previous_scheduled_at": _when(before_run),
        "previous_model_versions": before_versions,
        "paired": paired.overall.as_dict() if paired.overall else None,
        "scored": scored.as_dict() if scored else None,
        "flagged": bool(reasons),
        "reasons": reasons,
        "text": text,
    }


def scored_test(before: Sequence[dict[str, Any]], now: Sequence[dict[str, Any]]) -> Any:
    """McNemar on whether each shared sample got a score (None: every pair agrees)."""
    theirs = {pair_key(c): c for c in now}
    pairs = [
        (float(c.get("task_score") is not None), float(other.get("task_score") is not None))
        for c in before
        if (other := theirs.get(pair_key(c))) is not None
    ]
    if not pairs or all(a == b for a, b in pairs):
        return None
    return paired_test(pairs, binary=True)


def _when(run: dict[str, Any]) -> str:
    return str((run.get("spec") or {}).get("scheduled_at") or "time not recorded")


def earlier_runs(
    runs: Sequence[dict[str, Any]], scheduled_at: str, *, complete: str = "complete"
) -> list[dict[str, Any]]:
    """Of a sentinel's runs, the complete ones due before ``scheduled_at``, latest first.

    Times are RFC 3339 in UTC to the second (``firing_time``), so they sort as text.
    """
    before = [
        run
        for run in runs
        if run.get("status") == complete
        and str((run.get("spec") or {}).get("scheduled_at") or "") < scheduled_at
    ]
    return sorted(before, key=lambda run: str(run["spec"]["scheduled_at"]), reverse=True)


def previous_run(
    runs: Sequence[dict[str, Any]],
    scheduled_at: str,
    key: str | None,
    *,
    complete: str = "complete",
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The latest complete earlier run of the same request key; and the latest of any."""
    earlier = earlier_runs(runs, scheduled_at, complete=complete)
    same = next((run for run in earlier if run.get(SENTINEL_KEY) == key), None)
    return same, (earlier[0] if earlier else None)


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
