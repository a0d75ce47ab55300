"""Whether a time is a tick of a unix-cron schedule, as Cloud Scheduler reads one.

A scheduled sentinel firing names its run by its due time; only a tick of the
sentinel's own schedule is a due time (``niah.service.sentinel.firing``). Cloud
Scheduler takes unix-cron (minute, hour, day of month, month, day of week; lists,
ranges, steps, ``*``, month and day names) in the job's time zone
(cloud.google.com/scheduler/docs/configuring/cron-job-schedules, read 2026-12-04).
croniter reads the local stack's schedules but is a developer tool, not shipped: the
few lines here match one time, and a unit test checks them against croniter.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_NAMES = {
    3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
}
# (first, last) of minute, hour, day of month, month, day of week (7 is Sunday too).
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


def _value(text: str, field: int) -> int:
    names = _NAMES.get(field, [])
    if text.lower() in names:
        return names.index(text.lower()) + (1 if field == 3 else 0)
    return int(text)


def _allowed(text: str, field: int) -> set[int]:
    """The values one field of a schedule allows; ``ValueError`` if it is not unix-cron."""
    first, last = _RANGES[field]
    found: set[int] = set()
    for part in text.split(","):
        spec, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if spec == "*":
            low, high = first, last
        elif "-" in spec:
            low, high = (_value(end, field) for end in spec.split("-", 1))
        else:
            low = _value(spec, field)
            high = last if step_text else low
        if step < 1 or not first <= low <= high <= last:
            raise ValueError(f"{part!r} is outside {first}-{last}")
        found.update(range(low, high + 1, step))
    if field == 4 and 7 in found:
        found.add(0)
    return found


def is_tick(schedule: str, time_zone: str, when: dt.datetime) -> bool:
    """Whether ``when`` (aware) is a firing of ``schedule`` in ``time_zone``.

    ``ValueError`` if the schedule or the zone cannot be read.
    """
    fields = schedule.split()
    if len(fields) != 5:
        raise ValueError(f"{schedule!r} is not a unix-cron schedule of five fields")
    try:
        zone = ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"unknown time zone {time_zone!r}") from error
    local = when.astimezone(zone)
    if local.second or local.microsecond:
        return False
    minute, hour, _, _, _ = (_allowed(text, i) for i, text in enumerate(fields))
    if local.minute not in minute or local.hour not in hour:
        return False
    return _on_date(fields, local.date())


def _on_date(fields: list[str], date: dt.date) -> bool:
    """Whether the schedule fires on ``date`` (its month, day of month and day of week)."""
    day, month, weekday = (_allowed(fields[i], i) for i in (2, 3, 4))
    if date.month not in month:
        return False
    on_day = date.day in day
    on_weekday = (date.isoweekday() % 7) in weekday
    # Both restricted: either matches (cron's rule); else the restricted one decides.
    if fields[2] != "*" and fields[4] != "*":
        return on_day or on_weekday
    return on_day and on_weekday


def firings_per_year(schedule: str) -> int:
    """How many times ``schedule`` fires in a year (2027: 365 days, starting on a Friday).

    The sentinel's false alarms a year are its firings a year over the firings one
    false alarm may take (``niah.core.results.sentinel_watch``). A time zone's daylight
    saving moves a firing, and may skip or double one an hour a year: not counted.
    ``ValueError`` if the schedule is not unix-cron.
    """
    fields = schedule.split()
    if len(fields) != 5:
        raise ValueError(f"{schedule!r} is not a unix-cron schedule of five fields")
    per_day = len(_allowed(fields[0], 0)) * len(_allowed(fields[1], 1))
    start = dt.date(2027, 1, 1)
    days = sum(_on_date(fields, start + dt.timedelta(days=n)) for n in range(365))
    return per_day * days
