"""The log pane: a virtual view over a bounded buffer of log lines and events.

:class:`LogView` draws only the rows on screen (Textual's line API), so 20,000
held rows cost no more to show than 30. Rows are :class:`~tui.core.logcursor.LogLine`
(drawn as plain text, never parsed as markup) and :class:`~tui.core.logcursor.EventRow`
(drawn as a separator rule, styled by kind through TCSS component classes).

The keys are less's: ``j``/``k`` move the selected line (the one ``y`` copies),
``Space``/``b`` and ``Ctrl-F``/``Ctrl-B`` a page, ``g`` the top, ``G``/``End``
follow the end again, ``/`` ``n`` ``N`` search (and say when a search wraps).
``e`` keeps only warnings and errors (:mod:`tui.core.log_levels`) and babysit's
own notes, ``z`` wraps long lines, ``t`` shows event rows' times as ages.

Invariants:

* While following, the last row is on screen after every batch, and no line is
  selected; moving the selection pauses following.
* While paused, the rows on screen stay the same rows: new rows do not move
  the view, and rows dropped from the front of the buffer shift the scroll
  position by as many rows.
* Search matches and the selected line are kept as absolute row numbers (see
  :attr:`~tui.core.logcursor.LineBuffer.first_index`), so they survive rows
  falling off the front.
* Filtered or wrapped, the view's lines are a list of (absolute row, piece)
  pairs, ascending; unfiltered and unwrapped it is the buffer itself.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from textual.binding import BindingType
from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.app.widgets.log_keys import LOG_KEYS, LogKeys
from tui.app.widgets.log_text import (
    Search,
    display_text,
    event_class,
    event_text,
    line_strip,
    rule_strip,
    subtitle,
)
from tui.app.widgets.pacer import Pacer
from tui.core.follow import FileInfo, file_title
from tui.core.log_levels import is_problem
from tui.core.logcursor import (
    DEFAULT_MAX_LINES,
    EventKind,
    EventRow,
    LineBuffer,
    LogLine,
    Row,
)

#: While following, the rows that came in are shown at most this many times a second
#: (a new row waits at most 1/PRESENT_RATE s, well under what an eye follows).
PRESENT_RATE = 20


class LogView(LogKeys, ScrollView, can_focus=True, inherit_bindings=False):
    """A followed log: lines and inline events, follow/pause, a selected line, search,
    a warnings-and-errors filter, wrapping."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "log-view--event",
        "log-view--event-warning",
        "log-view--event-error",
        "log-view--match",
        "log-view--match-current",
        "log-view--cut",
        "log-view--cursor",
    }

    BINDINGS: ClassVar[list[BindingType]] = LOG_KEYS
    #: The heading of these keys in ``?``.
    HELP_SECTION = "the log"

    #: True while the view sticks to the newest row.
    following: reactive[bool] = reactive(True, bindings=True)
    #: The active search term, or "" for none.
    search_term: reactive[str] = reactive("", bindings=True)
    #: Only warnings, errors and babysit's notes are shown.
    problems_only: reactive[bool] = reactive(False, bindings=True)
    #: Long lines wrap at the pane's edge.
    wrap: reactive[bool] = reactive(False, bindings=True)
    #: Event rows say how long ago they happened instead of the clock time.
    relative_times: reactive[bool] = reactive(False)

    def __init__(
        self,
        path: str,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        clock: Callable[[], float] = time.time,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.path = path
        self.clock = clock
        self.buffer = LineBuffer(max_lines)
        self.file: FileInfo | None = None
        #: Lines that arrived since following was paused.
        self.new_since_pause = 0
        self.search: Search | None = None
        #: The selected line (an absolute row number); None while following.
        self.cursor: int | None = None
        #: Why no new rows can come now (link lost), or None while they can.
        self.stale: str | None = None
        #: Why following ended for good (the follower failed or stopped), or None.
        self.stopped: str | None = None
        #: The last thing a key said (a search wrapping, a copy), for tests and the eye.
        self.said = ""
        self._width = 0
        # The view's lines as (absolute row, piece) when filtered or wrapped; None: the buffer.
        self._lines: list[tuple[int, int]] | None = None
        # The width the wrapped pieces were cut for.
        self._wrap_width = 0
        # Drawn lines by absolute row number (a number never names another row).
        self._cache: LRUCache[int, Strip] = LRUCache(1024)
        # Set while we move the view ourselves, so the move is not taken for the
        # user scrolling (which pauses or resumes following).
        self._steering = False
        self._title = file_title(None, path)
        self.border_title = Content(self._title)
        self._presents = Pacer(self._present, PRESENT_RATE, self.set_timer)

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        if self.relative_times:
            self.refresh()  # the ages move on

    # ------------------------------------------------------------------ lines shown

    @property
    def line_count(self) -> int:
        """Lines in the view (rows, or the kept rows' pieces)."""
        return len(self.buffer) if self._lines is None else len(self._lines)

    def _at(self, line: int) -> tuple[int, int]:
        """The (absolute row, piece) drawn on view line ``line`` (0 <= line < line_count)."""
        if self._lines is None:
            return self.buffer.first_index + line, 0
        return self._lines[line]

    def _line_of(self, absolute: int) -> int:
        """The view line of row ``absolute`` (its first piece), or of the next row shown."""
        if self._lines is None:
            return max(0, absolute - self.buffer.first_index)
        return bisect.bisect_left(self._lines, (absolute, 0))

    def _row(self, absolute: int) -> Row:
        return self.buffer[absolute - self.buffer.first_index]

    def _kept(self, row: Row) -> bool:
        return not self.problems_only or isinstance(row, EventRow) or is_problem(row.text)

    def _pieces(self, row: Row) -> int:
        if not self.wrap or isinstance(row, EventRow):
            return 1
        width = max(1, self._wrap_width)
        return max(1, -(-cell_len(display_text(row.text)) // width))

    def _lines_for(self, rows: Iterable[Row], first: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for i, row in enumerate(rows):
            if self._kept(row):
                out.extend((first + i, piece) for piece in range(self._pieces(row)))
        return out

    def _relayout(self) -> None:
        """Lay the view's lines out again (filter or wrap changed, or the width), keeping
        the selected line, or the top row, where the eye is."""
        anchor = self.cursor
        if anchor is None and self.line_count:
            anchor = self._at(min(int(self.scroll_offset.y), self.line_count - 1))[0]
        self._wrap_width = self._text_width
        if self.problems_only or self.wrap:
            self._lines = self._lines_for(self.buffer, self.buffer.first_index)
        else:
            self._lines = None
        if self.cursor is not None:
            # A selected line the filter hides: the next one shown is selected instead.
            count = self.line_count
            self.cursor = self._at(min(self._line_of(self.cursor), count - 1))[0] if count else None
        self._cache.clear()
        self._resize_virtual()
        if self.following:
            self._scroll_to_end()
        elif anchor is not None:
            self._scroll_to_row(max(0, self._line_of(anchor) - self.size.height // 3))
        self._update_subtitle()
        self.refresh()

    @property
    def _text_width(self) -> int:
        """Columns a line has on screen (the scrollbar's column left out)."""
        return self.scrollable_content_region.width

    def _resize_virtual(self) -> None:
        """The scrollable size follows the rows, set as a plain value: the reactive asks
        the screen for a new layout (every pane redrawn) on each batch, though nothing
        moves unless a scrollbar comes or goes, which then asks for the layout itself."""
        size = Size(0 if self.wrap else self._width, self.line_count)
        if size == self.virtual_size:
            return
        self.set_reactive(LogView.virtual_size, size)
        self._scroll_update(size)  # Textual's (private) update of the scrollbars and their sizes
        self.refresh()

    # ------------------------------------------------------------------ rows in

    def add_rows(self, rows: Sequence[Row]) -> None:
        """Append one batch of rows; one refresh for the whole batch."""
        if not rows:
            return
        first_before = self.buffer.first_index
        start = self.buffer.appended
        self.buffer.extend(list(rows))
        first = self.buffer.first_index
        dropped = first - first_before
        widest = max(
            (cell_len(display_text(row.text)) for row in rows if isinstance(row, LogLine)),
            default=0,
        )
        self._width = max(self._width, widest)
        kept = rows[max(0, first - start) :]
        if self.search is not None:
            self.search.forget_before(first)
            self.search.scan(kept, max(start, first))
        if self.cursor is not None and self.cursor < first:
            self.cursor = first
        for row in rows:
            if isinstance(row, EventRow):
                self._note_event(row.event.kind)
        new_lines = sum(isinstance(row, LogLine) for row in rows)
        if self._lines is not None:
            gone = bisect.bisect_left(self._lines, (first, 0))
            del self._lines[:gone]
            dropped = gone
            added = self._lines_for(kept, max(start, first))
            self._lines.extend(added)
            new_lines = sum(isinstance(row, LogLine) and self._kept(row) for row in kept)
        if self.following:
            if any(isinstance(row, EventRow) for row in rows):
                self._presents.now()  # babysit's own notes (a lost link, an error) at once
            else:
                self._presents.soon()
            return
        self.new_since_pause += new_lines
        self._resize_virtual()
        if dropped:
            # Keep the same rows on screen: they moved `dropped` places up.
            y = max(0, self.scroll_target_y - dropped)
            self._scroll_to_row(y)
        self._update_subtitle()
        self.refresh()

    def _present(self) -> None:
        """Show the rows added while following (paced by ``self._presents``)."""
        self._show_title()
        self._resize_virtual()
        if self.following:
            self._scroll_to_end()
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
        """Show which file the rows come from (path, inode, size) in the border title,
        with the rows: its size moves with every batch."""
        self.file = info
        if not self._presents.due:
            self._show_title()

    def _show_title(self) -> None:
        title = file_title(self.file, self.path)
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
        if self.cursor is not None:
            self.cursor = None
            self._cache.clear()
            self.refresh()
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
        if self.wrap and self._text_width != self._wrap_width:
            self._relayout()
        elif self.following:
            self._scroll_to_end()

    def _scroll_to_end(self) -> None:
        self._steering = True
        try:
            self.scroll_end(animate=False, immediate=True, x_axis=False, force=True)
        finally:
            self._steering = False

    def _scroll_to_row(self, y: float) -> None:
        """Put view line ``y`` at the top of the view."""
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
        bottom = self._bottom_row()
        target = search.before(bottom + 1)
        if target is None:
            target = search.after(bottom)
        if target is not None:
            search.current = target
            if not self._row_visible(target):
                self._jump(target)
        self._update_subtitle()
        self.refresh()

    def _top_row(self) -> int:
        """The absolute row at the top of the view."""
        if not self.line_count:
            return self.buffer.first_index
        return self._at(min(int(self.scroll_offset.y), self.line_count - 1))[0]

    def _bottom_row(self) -> int:
        """The absolute row at the bottom of the view."""
        if not self.line_count:
            return self.buffer.first_index
        line = min(int(self.scroll_offset.y) + self.size.height - 1, self.line_count - 1)
        return self._at(line)[0]

    def clear_search(self) -> None:
        self.search = None
        self.search_term = ""
        self._cache.clear()
        self._update_subtitle()
        self.refresh()

    # ------------------------------------------------------------------ drawing

    def _update_subtitle(self) -> None:
        self.border_subtitle = Content(
            subtitle(
                self.search,
                problems_only=self.problems_only,
                stopped=self.stopped,
                stale=self.stale,
                following=self.following,
                new_since_pause=self.new_since_pause,
            )
        )

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if index >= self.line_count:
            return Strip.blank(width, base)
        absolute, piece = self._at(index)
        row = self._row(absolute)
        if absolute == self.cursor:
            # The selected line: its own background under the text (a match keeps its own).
            base = base + self.get_component_rich_style("log-view--cursor")
        if isinstance(row, EventRow):
            return self._event_strip(row, width, base, selected=absolute == self.cursor)
        strip = self._line_strip(absolute, row, base)
        if self.wrap:
            cut = max(1, self._wrap_width)
            return strip.crop(piece * cut, (piece + 1) * cut).extend_cell_length(width, base)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    def _line_strip(self, absolute: int, line: LogLine, base: Style) -> Strip:
        """Row ``absolute`` drawn whole; kept unless it is the selected line."""
        cached = self._cache.get(absolute) if absolute != self.cursor else None
        if cached is not None:
            return cached
        text = display_text(line.text)
        search = self.search
        spans = search.spans(text) if search is not None else []
        match = None
        if spans:
            current = absolute == search.current
            match = self.get_component_rich_style(
                "log-view--match-current" if current else "log-view--match"
            )
        cut = self.get_component_rich_style("log-view--cut") if line.cut else None
        strip = line_strip(text, base, spans=spans, match=match, cut_style=cut)
        if absolute != self.cursor:
            self._cache[absolute] = strip
        return strip

    def _event_strip(
        self, row: EventRow, width: int, base: Style, *, selected: bool = False
    ) -> Strip:
        style = self.get_component_rich_style(event_class(row.event.kind))
        if selected:
            style += self.get_component_rich_style("log-view--cursor")
        now = self.clock() if self.relative_times else None
        return rule_strip(event_text(row, now), width, style, base)
