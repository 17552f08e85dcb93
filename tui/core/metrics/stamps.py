"""The times printed on log lines, as datetimes (host wall clock, naive) and epochs.

vLLM prints no year: it is the latest year that puts the line at or before the
reference time (the file's mtime, or now) plus one day of slack — so December
lines in a file last written in January land in the year before.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

#: How far after the reference a year-less stamp may be (clock skew between hosts).
YEAR_SLACK = timedelta(days=1)


def infer_year(month: int, day: int, clock: tuple[int, int, int], reference: datetime) -> datetime:
    """The datetime of a year-less ``MM-DD HH:MM:SS`` stamp: the latest year that puts it at or
    before ``reference`` plus one day of slack (clock skew). Raises ValueError for a date
    that exists in no nearby year."""
    hour, minute, second = clock
    limit = reference + YEAR_SLACK
    for year in range(reference.year + 1, reference.year - 9, -1):
        try:
            stamp = datetime(year, month, day, hour, minute, second)
        except ValueError:
            continue  # Feb 29 in a common year
        if stamp <= limit:
            return stamp
    raise ValueError(f"no year fits {month:02d}-{day:02d}")


def to_epoch(ts: datetime, utc_offset: int = 0) -> float:
    """Seconds since the epoch of a host wall-clock time, given the host's offset east of UTC."""
    return ts.replace(tzinfo=timezone(timedelta(seconds=utc_offset))).timestamp()
