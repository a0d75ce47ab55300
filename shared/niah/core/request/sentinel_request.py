"""What names a sentinel and one firing of it: the name's rule and the firing's time.

A sentinel is a run request kept under a name and asked again on a schedule
(``niah.service.sentinel.check``). Each firing is a run of its own, named by the sentinel and
the time the firing was due: Cloud Scheduler sends that time with every attempt of a
firing (``X-CloudScheduler-ScheduleTime``), so a retried firing names the same run.
"""

from __future__ import annotations

import datetime as dt

# Lower-case letters, digits and hyphens, starting with a letter: a Cloud Scheduler job
# name (``niah-sentinel-NAME``) and a Firestore document ID alike (infra's validation).
SENTINEL_NAME = r"^[a-z][a-z0-9-]{0,39}$"
# The run document's field naming what a sentinel's run asked, apart from its firing
# (``RunRequest.request_key``): runs with the same key pair sample by sample.
SENTINEL_KEY = "sentinel_key"
# The run document's field that keeps its check against its sentinel's run before it
# (niah.core.results.sentinel_check; the index reads it).
SENTINEL_CHECK = "sentinel_check"
# The run request's fields only a firing sets (not run options of the CLI's).
FIRING_FIELDS = ("sentinel", "scheduled_at")


def firing_time(text: str) -> str:
    """An RFC 3339 time as the run names it: UTC, to the second ("2026-11-28T06:00:00Z").

    A time without an offset is refused: which firing it names would depend on where it
    was read.
    """
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        when = when.astimezone(dt.UTC) if when.tzinfo else when
    except (ValueError, OverflowError):  # the year 1 or 9999 moved by its offset
        raise ValueError(
            f"{text[:40]!r} is not an RFC 3339 time; give one like 2026-11-28T06:00:00Z"
        ) from None
    if when.tzinfo is None:
        raise ValueError(f"{text[:40]!r} has no offset; give UTC, like 2026-11-28T06:00:00Z")
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")
