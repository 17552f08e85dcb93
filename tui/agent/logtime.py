"""The time a log line is stamped with, read the ways the request says.

The request carries, per service, ``stamps``: [pattern, kind] pairs (regex sources
matched at a line's start, tried in order) from babysit's engine registry; the agent
knows no engine's format. Kinds (what the groups are):

* ``wall``: year, month, day, hour, minute, second on the host's clock;
* ``utc``: the same in UTC;
* ``yearless``: month, day, hour, minute, second: the latest year that puts the
  line no later than the file's last write (give or take a day);
* ``time-only``: hour, minute, second: the date is the run's start (the lines
  follow it), or the file's last write when there is no run;
* ``elapsed``: minutes, seconds, milliseconds, microseconds since the process
  started: the run's start plus that (no time without a run).
"""

import calendar
import datetime
import re
import time

WALL = "wall"
UTC = "utc"
YEARLESS = "yearless"
TIME_ONLY = "time-only"
ELAPSED = "elapsed"
KINDS = (WALL, UTC, YEARLESS, TIME_ONLY, ELAPSED)

# How far after the file's last write a year-less stamp may be (clocks in other zones).
YEARLESS_SLACK = 86400
DAY = 86400
# Compiled stamp lists kept (one per distinct list a request carries).
_CACHE_SIZE = 64
_compiled = {}


def compile_stamps(stamps):
    """[(bytes regex, kind), ...] of the request's [pattern, kind] pairs; a pair that does
    not compile, or of an unknown kind, is left out. Cached."""
    key = tuple((str(p), str(k)) for p, k in (stamps or ()))
    found = _compiled.get(key)
    if found is None:
        found = []
        for pattern, kind in key:
            if kind not in KINDS:
                continue
            try:
                found.append((re.compile(pattern.encode("utf-8", "surrogateescape")), kind))
            except (re.error, ValueError, OverflowError):
                continue
        if len(_compiled) >= _CACHE_SIZE:
            _compiled.clear()
        _compiled[key] = found
    return found


class Dater:
    """Dates a log's lines: ``stamps`` from the request, ``clock`` when the file was last
    written, ``started`` when the run began (epoch seconds, or None)."""

    def __init__(self, stamps, clock, started=None):
        self.patterns = compile_stamps(stamps)
        self.clock = clock
        self.started = started

    @property
    def elapsed(self):
        """Whether the log counts its stamps from its process's start."""
        return any(kind == ELAPSED for _, kind in self.patterns)

    def time(self, line):
        """The time a line is stamped with, or None."""
        for pattern, kind in self.patterns:
            match = pattern.match(line)
            if match:
                try:
                    return self._read(kind, [int(x) for x in match.groups()[:7] if x is not None])
                except (OverflowError, ValueError, TypeError, IndexError):
                    return None
        return None

    def _read(self, kind, parts):
        if kind == WALL:
            return time.mktime(
                (parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], 0, 0, -1)
            )
        if kind == UTC:
            return float(
                calendar.timegm((parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]))
            )
        if kind == YEARLESS:
            return yearless_time(parts[:5], self.clock)
        if kind == TIME_ONLY:
            return self._time_only(parts[0], parts[1], parts[2])
        if self.started is None:
            return None
        minutes, seconds, millis, micros = parts[:4]
        return self.started + minutes * 60 + seconds + millis / 1e3 + micros / 1e6

    def _time_only(self, hour, minute, second):
        after_start = self.started is not None
        base = self.started if after_start else self.clock
        day = time.localtime(base)
        ts = time.mktime((day.tm_year, day.tm_mon, day.tm_mday, hour, minute, second, 0, 0, -1))
        if after_start and ts < int(base):
            ts += DAY  # the lines follow the start: past midnight
        elif not after_start and ts > base + YEARLESS_SLACK / 24:
            ts -= DAY  # the lines precede the last write: before midnight
        return ts

    def first(self, data):
        for line in data.split(b"\n"):
            ts = self.time(line)
            if ts is not None:
                return ts
        return None

    def last(self, data):
        for line in reversed(data.split(b"\n")):
            ts = self.time(line)
            if ts is not None:
                return ts
        return None


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
