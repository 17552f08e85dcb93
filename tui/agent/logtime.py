"""The time a log line is stamped with."""

import datetime
import re
import time

TS_PATTERNS = [
    # SGLang: [2026-05-09 09:22:05] or [2026-05-09 09:22:05.123 TP0]
    (re.compile(rb"^\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"), True),
    # vLLM: [(APIServer pid=1) ]INFO 05-09 09:22:05 ...   (no year)
    (
        re.compile(
            rb"^(?:\([^)]*pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
            rb"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"
        ),
        False,
    ),
    # ISO-8601 anywhere at the start (generic servers)
    (re.compile(rb"^\[?(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)"), True),
]


def line_time(line, clock):
    """The time a line is stamped with, or None. ``clock`` is when the file was last
    written: a stamp without a year (vLLM's) is put in the latest year that places it
    no later than that, give or take a day for a server whose clock zone differs, so
    last December's lines in a file written in January are last year's, not in the
    future."""
    for pattern, has_year in TS_PATTERNS:
        match = pattern.match(line)
        if not match:
            continue
        parts = [int(x) for x in match.groups()]
        if has_year:
            try:
                return time.mktime(
                    (parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], 0, 0, -1)
                )
            except (OverflowError, ValueError):
                return None
        return yearless_time(parts, clock)
    return None


# How far after the file's last write a year-less stamp may be (clocks in other zones).
YEARLESS_SLACK = 86400


def yearless_time(parts, clock):
    reference = time.localtime(clock).tm_year
    for year in range(reference + 1, reference - 9, -1):
        try:
            ts = time.mktime(datetime.datetime(year, *parts).timetuple())
        except (OverflowError, ValueError):
            continue  # Feb 29 in a common year
        if ts <= clock + YEARLESS_SLACK:
            return ts
    return None


def first_time(data, clock):
    for line in data.split(b"\n"):
        ts = line_time(line, clock)
        if ts is not None:
            return ts
    return None


def last_time(data, clock):
    for line in reversed(data.split(b"\n")):
        ts = line_time(line, clock)
        if ts is not None:
            return ts
    return None
