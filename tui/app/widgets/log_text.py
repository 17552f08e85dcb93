"""What a log pane row looks like as text, and a search over the rows.

:func:`display_text` is a log line as drawn (tabs expanded, no control
characters), :func:`event_text` the words of an event row, :class:`Search` a
term and the absolute row numbers of the lines that contain it.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from tui.app.fleet_rows import short_age
from tui.core.logcursor import CUT_MARKER, EventKind, EventRow, LogLine, Row
from tui.core.sanitize import clean_line, printable

#: Event kinds drawn as warnings; errors get their own class; the rest are quiet.
WARNING_EVENTS = frozenset(
    {
        EventKind.TRUNCATED,
        EventKind.REPLACED,
        EventKind.DELETED,
        EventKind.MISSING,
        EventKind.DISCONNECTED,
        EventKind.WRITER_GONE,
        EventKind.SHELL_CHATTER,
    }
)
TAB_SIZE = 8
RULE = "─"


def display_text(text: str) -> str:
    """What a log line looks like on screen: tabs expanded, and (defence in depth,
    the core already did it) no control characters."""
    if "\t" in text:
        text = text.expandtabs(TAB_SIZE)
    return text if text.isprintable() else clean_line(text)


def event_text(row: EventRow, now: float | None = None) -> str:
    """``log replaced: now inode 9012 … (09:22:05)`` — the words of a separator row; with
    ``now``, its age instead of its clock time (``(3m ago)``)."""
    at = row.event.observed_at
    if now is None:
        stamp = time.strftime("%H:%M:%S", time.localtime(at))
    else:
        stamp = f"{short_age(now - at)} ago"
    return f"{printable(row.event.message)} ({stamp})"


class Search:
    """A search term and the absolute row numbers of the lines that contain it.

    Smart case: the term matches case-insensitively unless it has a capital letter.
    """

    def __init__(self, term: str) -> None:
        self.term = term
        self.fold = term == term.lower()
        self.needle = term.lower() if self.fold else term
        #: Absolute row numbers of matching lines, ascending.
        self.rows: list[int] = []
        #: The match the user is on (an absolute row number), if any.
        self.current: int | None = None

    def matches(self, row: Row) -> bool:
        if not isinstance(row, LogLine):
            return False
        text = display_text(row.text)
        return self.needle in (text.lower() if self.fold else text)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where the term occurs in (display) ``text``, as (start, end) pairs."""
        haystack = text.lower() if self.fold else text
        if len(haystack) != len(text):  # lower() changed lengths (e.g. "İ"): offsets would drift
            haystack = text
        spans, start, size = [], 0, len(self.needle)
        while (found := haystack.find(self.needle, start)) >= 0:
            spans.append((found, found + size))
            start = found + size
        return spans

    def scan(self, rows: Iterable[Row], first: int) -> None:
        """Record the matches among ``rows``, numbered from ``first``."""
        self.rows.extend(first + i for i, row in enumerate(rows) if self.matches(row))

    def forget_before(self, first: int) -> None:
        """Drop matches in rows that left the buffer."""
        del self.rows[: bisect.bisect_left(self.rows, first)]
        if self.current is not None and self.current < first:
            self.current = None

    def after(self, index: int) -> int | None:
        i = bisect.bisect_right(self.rows, index)
        return self.rows[i] if i < len(self.rows) else None

    def before(self, index: int) -> int | None:
        i = bisect.bisect_left(self.rows, index)
        return self.rows[i - 1] if i > 0 else None

    def position(self) -> int | None:
        """1-based number of the current match."""
        if self.current is None:
            return None
        i = bisect.bisect_left(self.rows, self.current)
        return i + 1 if i < len(self.rows) and self.rows[i] == self.current else None


def line_strip(
    text: str,
    base: Style,
    *,
    spans: Sequence[tuple[int, int]] = (),
    match: Style | None = None,
    cut_style: Style | None = None,
) -> Strip:
    """A log line as drawn (``text`` from :func:`display_text`), whole: the search's
    ``spans`` in ``match``, and, for a line cut short (``cut_style`` given), its
    marker in that style."""
    tail = ""
    if cut_style is not None and text.endswith(CUT_MARKER):
        text, tail = text[: -len(CUT_MARKER)], CUT_MARKER
    segments: list[Segment] = []
    at = 0
    for start, end in spans:
        if start > at:
            segments.append(Segment(text[at:start], base))
        segments.append(Segment(text[start:end], match))
        at = end
    if at < len(text):
        segments.append(Segment(text[at:], base))
    if tail:
        segments.append(Segment(tail, cut_style))
    return Strip(segments, cell_len(text) + cell_len(tail))


def rule_strip(words: str, width: int, style: Style, base: Style) -> Strip:
    """An event row: its words inside a rule across the pane's ``width``."""
    words = f"{RULE * 2} {words} "
    rule = RULE * max(2, width - cell_len(words))
    return Strip([Segment(words + rule, style)]).crop_extend(0, width, base)


def event_class(kind: EventKind) -> str:
    """The log pane's component class an event row of ``kind`` is drawn in."""
    if kind is EventKind.ERROR:
        return "log-view--event-error"
    if kind in WARNING_EVENTS:
        return "log-view--event-warning"
    return "log-view--event"


def subtitle(
    search: Search | None,
    *,
    problems_only: bool,
    stopped: str | None,
    stale: str | None,
    following: bool,
    new_since_pause: int,
) -> str:
    """The log pane's bottom border: the search and its matches, the filter, and
    whether it follows (or why not)."""
    parts: list[str] = []
    if search is not None:
        count = len(search.rows)
        position = search.position()
        if count == 0:
            found = "no matches"
        elif position is not None:
            found = f"{position} of {count}"
        else:
            found = f"{count} match" + ("es" if count != 1 else "")
        parts.append(f"/{printable(search.term)} ({found})")
    if problems_only:
        parts.append("warnings and errors only — e shows all")
    if stopped is not None:
        parts.append(f"not following: {printable(stopped)}")
    elif stale is not None:
        parts.append(stale)
    if following:
        if stopped is None and stale is None:
            parts.append("following")
    else:
        new = f" · {new_since_pause:,} new" if new_since_pause else ""
        parts.append(f"paused — End/G to follow{new}")
    return "  ·  ".join(parts)
