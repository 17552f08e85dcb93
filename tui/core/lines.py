"""Log bytes as lines to show: one line's bytes as text, and a tail cut into whole lines.

Every view that turns a log's bytes into lines (the follower's splitter, ``babysit
parse``, a probe's tail) reads a line through :func:`read_record` (its text alone:
:func:`line_text`), so one line reads the same wherever it is shown; a tail read at
an offset is cut by :func:`whole_lines`.

A log's format (``LogState.format``) says how its lines are written:

* ``plain``: each line is the text;
* ``docker-json`` (a container's json-file log): each line is one JSON record,
  ``{"log": "text\\n", "stream": "stdout", "time": "2026-12-01T20:14:57.835960008Z"}``.
  The line reads as its ``log`` (its newline dropped), with its ``time`` (epoch
  seconds, year and zone included) as its stamp and its ``stream``. Docker splits a
  line longer than 16 KiB into several records, all but the last without the
  newline: :class:`RecordJoiner` joins them into one line (its offset is the first
  record's, its size all of theirs). A record that is not such JSON reads as its
  raw bytes, cleaned like a plain line.
"""

from __future__ import annotations

import calendar
import json
import re
from dataclasses import dataclass

from tui.core.containers import DOCKER_JSON, PLAIN
from tui.core.sanitize import clean_line

NEWLINE = b"\n"
#: Characters one joined line holds at most; the rest of its records are skipped.
MAX_JOINED_CHARS = 64 * 1024
#: Shown at the end of a joined line cut at :data:`MAX_JOINED_CHARS`.
JOINED_CUT_MARKER = " [… line cut at 64 Ki characters]"
#: The streams a docker record may name.
STREAMS = ("stdout", "stderr")
NANOSECONDS = 1_000_000_000
_RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)\Z"
)


def rfc3339_ns(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time as Docker writes it (up to nine
    fraction digits, ``Z`` or an offset); None for what is not such a time."""
    match = _RFC3339.match(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    fraction = int((match.group(7) or "").ljust(9, "0"))
    zone = match.group(8)
    offset = 0
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) - offset
    return seconds * NANOSECONDS + fraction


@dataclass(frozen=True, slots=True)
class Record:
    """One line as its format reads it: the text to show, and what the format says of it.

    ``stamp`` (epoch seconds) and ``stream`` are a docker record's ``time`` and
    ``stream`` (None when the line has none); ``ends`` is False for a docker record
    whose ``log`` has no newline: the line goes on in the next record.
    """

    text: str
    stamp: float | None = None
    stream: str | None = None
    ends: bool = True


def _plain_text(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    if text.isprintable():  # most lines: nothing in them to drop (no CR, escape or control)
        return text
    return clean_line(text[:-1] if text.endswith("\r") else text)


def read_record(raw: bytes, format: str = PLAIN) -> Record:
    """One line's bytes (without its newline) read as ``format`` says; never raises."""
    if format != DOCKER_JSON:
        return Record(_plain_text(raw))
    return _docker_record(raw)


def _docker_record(raw: bytes) -> Record:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON (UnicodeDecodeError is a ValueError)
        return Record(_plain_text(raw))
    log = data.get("log") if isinstance(data, dict) else None
    if not isinstance(log, str):
        return Record(_plain_text(raw))
    ends = log.endswith("\n")
    if ends:
        log = log[:-1]
    if log.endswith("\r"):
        log = log[:-1]
    when = data.get("time")
    ns = rfc3339_ns(when) if isinstance(when, str) else None
    stream = data.get("stream")
    return Record(
        clean_line(log),
        stamp=ns / NANOSECONDS if ns is not None else None,
        stream=stream if stream in STREAMS else None,
        ends=ends,
    )


def line_text(raw: bytes, format: str = PLAIN) -> str:
    """One line's bytes (without its newline) as text to show: a plain line's CR
    dropped, a docker record's ``log``; invalid UTF-8 as U+FFFD, escapes and controls
    removed."""
    if format != DOCKER_JSON:
        return _plain_text(raw)
    return _docker_record(raw).text


@dataclass(frozen=True, slots=True)
class Joined:
    """One whole line made of one or more records: where its first record starts and
    how many bytes all its records cover."""

    text: str
    offset: int
    size: int
    stamp: float | None = None
    stream: str | None = None
    #: The text was cut at :data:`MAX_JOINED_CHARS`.
    cut: bool = False


class RecordJoiner:
    """Joins a docker line's partial records: :meth:`add` each record, in file order,
    with its offset and size; it gives back the lines that are whole.

    Memory is bounded: a line's text is kept to :data:`MAX_JOINED_CHARS`. Records of
    another stream than the held ones end the held line first (docker writes each
    stream's records in order, but the two streams may interleave).
    """

    def __init__(self, limit: int = MAX_JOINED_CHARS) -> None:
        self._limit = limit
        self._parts: list[str] = []
        self._chars = 0
        self._first: Record | None = None
        self._start = 0
        self._size = 0
        self._cut = False

    @property
    def holding(self) -> bool:
        """Whether a line's first records wait for its last."""
        return self._first is not None

    @property
    def start(self) -> int:
        """The offset of the held line's first record (meaningful while :attr:`holding`)."""
        return self._start

    def add(self, record: Record, offset: int, size: int) -> list[Joined]:
        done: list[Joined] = []
        if self._first is not None and (
            record.stream != self._first.stream or offset != self._start + self._size
        ):
            done.extend(self.flush())
        if self._first is None:
            if record.ends:
                return [*done, Joined(record.text, offset, size, record.stamp, record.stream)]
            self._first, self._start, self._size = record, offset, 0
        self._size += size
        room = self._limit - self._chars
        if len(record.text) > room:
            self._cut = True
        piece = record.text[: max(0, room)]
        self._parts.append(piece)
        self._chars += len(piece)
        if record.ends:
            done.extend(self.flush())
        return done

    def flush(self) -> list[Joined]:
        """The held records as one line (their last one never came, or will not)."""
        first = self._first
        if first is None:
            return []
        text = "".join(self._parts) + (JOINED_CUT_MARKER if self._cut else "")
        line = Joined(text, self._start, self._size, first.stamp, first.stream, self._cut)
        self.clear()
        return [line]

    def clear(self) -> None:
        self._parts.clear()
        self._chars = 0
        self._first = None
        self._size = 0
        self._cut = False


def whole_lines(
    data: bytes, offset: int | None, since: int | None = None, format: str = PLAIN
) -> list[tuple[str, int]]:
    """The whole lines of ``data``, read at byte ``offset`` of a file, as (text, offset).

    A first line that starts before ``offset`` (``offset`` > 0: its start is not in
    ``data``) and a last line without its newline are left out, as are lines before
    ``since``; so is a docker line whose last record is not in ``data``. ``offset``
    None (nothing was read) gives no lines.
    """
    return [(line.text, line.offset) for line in tail_lines(data, offset, since, format)]


def tail_lines(
    data: bytes, offset: int | None, since: int | None = None, format: str = PLAIN
) -> list[Joined]:
    """:func:`whole_lines` with each line's size, stamp and stream."""
    if offset is None or not data:
        return []
    if offset > 0:
        cut = data.find(NEWLINE)
        if cut < 0:
            return []
        data, offset = data[cut + 1 :], offset + cut + 1
    joiner = RecordJoiner() if format == DOCKER_JSON else None
    lines: list[Joined] = []
    for raw in data.split(NEWLINE)[:-1]:
        size = len(raw) + 1
        if since is None or offset >= since:
            record = read_record(raw, format)
            if joiner is None:
                lines.append(Joined(record.text, offset, size))
            else:
                lines.extend(joiner.add(record, offset, size))
        offset += size
    return lines
