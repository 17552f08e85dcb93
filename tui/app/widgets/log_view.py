"""The log pane: a virtual view over a bounded buffer of log lines and events.

:class:`LogView` draws only the rows on screen (Textual's line API), so 20,000
held rows cost no more to show than 30. Rows are :class:`~tui.core.logcursor.LogLine`
(drawn as plain text, never parsed as markup) and :class:`~tui.core.logcursor.EventRow`
(drawn as a separator rule, styled by kind through TCSS component classes).

Invariants:

* While following, the last row is on screen after every batch.
* While paused, the rows on screen stay the same rows: new rows do not move
  the view, and rows dropped from the front of the buffer shift the scroll
  position by as many rows.
* Search matches are kept as absolute row numbers (see
  :attr:`~tui.core.logcursor.LineBuffer.first_index`), so they survive rows
  falling off the front.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.core.follow import FileInfo, file_title
from tui.core.logcursor import (
    CUT_MARKER,
    DEFAULT_MAX_LINES,
    EventKind,
    EventRow,
    LineBuffer,
    LogLine,
    Row,
)
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


def event_text(row: EventRow) -> str:
    """``log replaced: now inode 9012 … (09:22:05)`` — the words of a separator row."""
    stamp = time.strftime("%H:%M:%S", time.localtime(row.event.observed_at))
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


class LogView(ScrollView, can_focus=True):
    """A followed log: lines and inline events, follow/pause, search."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "log-view--event",
        "log-view--event-warning",
        "log-view--event-error",
        "log-view--match",
        "log-view--match-current",
        "log-view--cut",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("G,end", "follow", "follow", key_display="G", id="log.follow"),
        Binding("g,home", "top", "top", show=False, id="log.top"),
        Binding("n", "next_match", "next", id="log.next_match"),
        Binding("N", "previous_match", "previous", id="log.previous_match"),
        Binding("escape", "clear_search", "clear search", id="log.clear_search"),
    ]

    #: True while the view sticks to the newest row.
    following: reactive[bool] = reactive(True, bindings=True)
    #: The active search term, or "" for none.
    search_term: reactive[str] = reactive("", bindings=True)

    def __init__(
        self,
        path: str,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.path = path
        self.buffer = LineBuffer(max_lines)
        self.file: FileInfo | None = None
        #: Lines that arrived since following was paused.
        self.new_since_pause = 0
        self.search: Search | None = None
        #: Why no new rows can come now (link lost), or None while they can.
        self.stale: str | None = None
        #: Why following ended for good (the follower failed or stopped), or None.
        self.stopped: str | None = None
        self._width = 0
        # Drawn lines by absolute row number (a number never names another row).
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        # Set while we move the view ourselves, so the move is not taken for the
        # user scrolling (which pauses or resumes following).
        self._steering = False
        self._title = file_title(None, path)
        self.border_title = Content(self._title)

    # ------------------------------------------------------------------ rows in

    def add_rows(self, rows: Sequence[Row]) -> None:
        """Append one batch of rows; one refresh for the whole batch."""
        if not rows:
            return
        first_before = self.buffer.first_index
        start = self.buffer.appended
        self.buffer.extend(list(rows))
        dropped = self.buffer.first_index - first_before
        widest = max(
            (cell_len(display_text(row.text)) for row in rows if isinstance(row, LogLine)),
            default=0,
        )
        self._width = max(self._width, widest)
        if self.search is not None:
            self.search.forget_before(self.buffer.first_index)
            kept = rows[max(0, self.buffer.first_index - start) :]
            self.search.scan(kept, max(start, self.buffer.first_index))
        for row in rows:
            if isinstance(row, EventRow):
                self._note_event(row.event.kind)
        self.virtual_size = Size(self._width, len(self.buffer))
        if self.following:
            self._scroll_to_end()
        else:
            self.new_since_pause += sum(isinstance(row, LogLine) for row in rows)
            if dropped:
                # Keep the same rows on screen: they moved `dropped` places up.
                y = max(0, self.scroll_target_y - dropped)
                self._scroll_to_row(y)
        self._update_subtitle()
        self.refresh()

    def _note_event(self, kind: EventKind) -> None:
        if kind is EventKind.DISCONNECTED:
            self.stale = "link lost, resumes when it is back"
        elif kind in (EventKind.RECONNECTED, EventKind.OPENED):
            self.stale = None
        self.set_class(self.stale is not None, "-stale")

    def stop(self, reason: str) -> None:
        """Say that no more rows will come, and why."""
        self.stopped = reason
        self.add_class("-stopped")
        self._update_subtitle()

    def resume(self) -> None:
        """Rows will come again (a new follower): undo :meth:`stop`."""
        self.stopped = None
        self.remove_class("-stopped")
        self._update_subtitle()

    def shown_until(self, dev: int, inode: int) -> int | None:
        """The offset in file (dev, inode) up to which its lines are shown (the end of
        the last whole one), or None if none of its lines is held."""
        for row in reversed(self.buffer):
            if isinstance(row, LogLine) and (row.dev, row.inode) == (dev, inode):
                return row.offset + row.size if row.complete else row.offset
        return None

    def set_file(self, info: FileInfo | None) -> None:
        """Show which file the rows come from (path, inode, size) in the border title."""
        self.file = info
        title = file_title(info, self.path)
        if title != self._title:
            self._title = title
            self.border_title = Content(title)

    # ------------------------------------------------------------------ following

    def follow(self) -> None:
        """Stick to the newest row again."""
        self._set_following()
        self._scroll_to_end()

    def _set_following(self) -> None:
        self.following = True
        self.new_since_pause = 0
        self._update_subtitle()

    def pause(self) -> None:
        """Stop following; the view stays where it is."""
        if self.following:
            self.following = False
            self.new_since_pause = 0
            self._update_subtitle()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._steering or not self.is_mounted:
            return
        at_end = new_value >= self.max_scroll_y
        if new_value < old_value and not at_end:
            self.pause()
        elif new_value > old_value and at_end and not self.following:
            # Already at the end (maybe mid-animation): follow without moving the view.
            self._set_following()

    def watch_following(self, following: bool) -> None:
        self.set_class(not following, "-paused")

    def on_resize(self) -> None:
        if self.following:
            self._scroll_to_end()

    def _scroll_to_end(self) -> None:
        self._steering = True
        try:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        finally:
            self._steering = False

    def _scroll_to_row(self, y: float) -> None:
        """Put row ``y`` (an index into the buffer) at the top of the view."""
        self._steering = True
        try:
            self.scroll_to(y=y, animate=False, immediate=True, force=True)
        finally:
            self._steering = False

    # ------------------------------------------------------------------ search

    def start_search(self, term: str) -> None:
        """Highlight ``term`` and go to its newest match at or above the view's bottom."""
        if not term:
            self.clear_search()
            return
        search = Search(term)
        search.scan(self.buffer, self.buffer.first_index)
        self.search = search
        self.search_term = term
        self._cache.clear()
        bottom = self.buffer.first_index + int(self.scroll_offset.y) + self.size.height - 1
        target = search.before(bottom + 1)
        if target is None:
            target = search.after(bottom)
        if target is not None:
            search.current = target
            if not self._row_visible(target):
                self._jump(target)
        self._update_subtitle()
        self.refresh()

    def clear_search(self) -> None:
        self.search = None
        self.search_term = ""
        self._cache.clear()
        self._update_subtitle()
        self.refresh()

    def action_next_match(self) -> None:
        self._step(forward=True)

    def action_previous_match(self) -> None:
        self._step(forward=False)

    def action_clear_search(self) -> None:
        self.clear_search()

    def action_follow(self) -> None:
        self.follow()

    def action_top(self) -> None:
        self.pause()
        self._scroll_to_row(0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_match", "previous_match", "clear_search"):
            return self.search is not None
        if action == "follow":
            return None if self.following else True
        return True

    def _step(self, *, forward: bool) -> None:
        search = self.search
        if search is None:
            return
        first = self.buffer.first_index
        top = first + int(self.scroll_offset.y)
        if search.current is not None:
            origin = search.current
        else:
            origin = top - 1 if forward else top + self.size.height
        target = search.after(origin) if forward else search.before(origin)
        if target is None:
            where = "below" if forward else "above"
            self.notify(f"no match for {search.term!r} {where}", timeout=2)
            return
        search.current = target
        self._cache.clear()
        self.pause()
        if not self._row_visible(target):
            self._jump(target)
        self._update_subtitle()
        self.refresh()

    def _row_visible(self, absolute: int) -> bool:
        top = self.buffer.first_index + int(self.scroll_offset.y)
        return top <= absolute < top + self.size.height

    def _jump(self, absolute: int) -> None:
        """Put row ``absolute`` a third of the way down the view (and pause)."""
        self.pause()
        y = max(0, absolute - self.buffer.first_index - self.size.height // 3)
        self._scroll_to_row(y)

    # ------------------------------------------------------------------ drawing

    def _update_subtitle(self) -> None:
        parts: list[str] = []
        search = self.search
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
        if self.stopped is not None:
            parts.append(f"not following: {printable(self.stopped)}")
        elif self.stale is not None:
            parts.append(self.stale)
        if self.following:
            if self.stopped is None and self.stale is None:
                parts.append("following")
        else:
            new = f" · {self.new_since_pause:,} new" if self.new_since_pause else ""
            parts.append(f"paused — End/G to follow{new}")
        self.border_subtitle = Content("  ·  ".join(parts))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= len(self.buffer):
            return Strip.blank(width, base)
        row = self.buffer[index]
        if isinstance(row, EventRow):
            return self._event_strip(row, width, base)
        strip = self._line_strip(self.buffer.first_index + index, row, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _line_strip(self, absolute: int, line: LogLine, base: Style) -> Strip:
        cached = self._cache.get(absolute)
        if cached is not None:
            return cached
        text = display_text(line.text)
        tail = ""
        if line.cut and text.endswith(CUT_MARKER):
            text, tail = text[: -len(CUT_MARKER)], CUT_MARKER
        segments: list[Segment] = []
        search = self.search
        spans = search.spans(text) if search is not None else []
        if spans:
            name = "log-view--match-current" if absolute == search.current else "log-view--match"
            match = self.get_component_rich_style(name)
            at = 0
            for start, end in spans:
                if start > at:
                    segments.append(Segment(text[at:start], base))
                segments.append(Segment(text[start:end], match))
                at = end
            if at < len(text):
                segments.append(Segment(text[at:], base))
        elif text:
            segments.append(Segment(text, base))
        if tail:
            cut = self.get_component_rich_style("log-view--cut")
            segments.append(Segment(tail, cut))
        strip = Strip(segments, cell_len(text) + cell_len(tail))
        self._cache[absolute] = strip
        return strip

    def _event_strip(self, row: EventRow, width: int, base: Style) -> Strip:
        kind = row.event.kind
        if kind is EventKind.ERROR:
            name = "log-view--event-error"
        elif kind in WARNING_EVENTS:
            name = "log-view--event-warning"
        else:
            name = "log-view--event"
        style = self.get_component_rich_style(name)
        words = f"{RULE * 2} {event_text(row)} "
        rule = RULE * max(2, width - cell_len(words))
        return Strip([Segment(words + rule, style)]).crop_extend(0, width, base)
