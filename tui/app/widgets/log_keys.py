"""The log pane's keys, as in less: the selected line, pages, search steps, and the
filter, wrap and times toggles (:class:`LogKeys`, a part of
:class:`~tui.app.widgets.log_view.LogView`).

There is a selected line only while the view is paused: ``j``/``k`` move it (the
first ``k`` selects the newest line and pauses), ``y`` copies it, and ``j`` on the
newest line follows again, as scrolling down to the end does. A search step
selects its match; past the last match it starts again from the other end and
says so.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

from tui.app.widgets.log_text import display_text, event_text
from tui.core.logcursor import LogLine
from tui.core.sanitize import printable

if TYPE_CHECKING:
    from tui.app.widgets.log_view import LogView

# Every key the pane answers to (Textual's scrolling keys are not inherited, so the
# help lists exactly these). Only G is in the footer: the rest are in ? and the palette.
LOG_KEYS: list[BindingType] = [
    Binding("G,end", "follow", "follow", key_display="G", id="log.follow"),
    Binding(
        "j,down",
        "cursor_down",
        "line down",
        show=False,
        id="log.line_down",
        tooltip="line down: select the next line",
    ),
    Binding(
        "k,up",
        "cursor_up",
        "line up",
        show=False,
        id="log.line_up",
        tooltip="line up: select the line above (stops following)",
    ),
    Binding("space,ctrl+f,pagedown", "page_down", "page down", show=False, id="log.page_down"),
    Binding(
        "b,ctrl+b,pageup",
        "page_up",
        "page up",
        show=False,
        id="log.page_up",
        tooltip="page up (stops following)",
    ),
    Binding("g,home", "top", "top", show=False, id="log.top", tooltip="top: the oldest line"),
    Binding("left", "scroll_left", "scroll left", show=False, id="log.left"),
    Binding("right", "scroll_right", "scroll right", show=False, id="log.right"),
    Binding("n", "next_match", "next", id="log.next_match", tooltip="next match"),
    Binding("N", "previous_match", "previous", id="log.previous_match", tooltip="previous match"),
    Binding("escape", "clear_search", "clear search", id="log.clear_search"),
    Binding(
        "e",
        "toggle_problems",
        "warnings/errors",
        show=False,
        id="log.problems",
        tooltip="warnings and errors only, or every line again",
    ),
    Binding(
        "z",
        "toggle_wrap",
        "wrap",
        show=False,
        id="log.wrap",
        tooltip="wrap long lines, or cut them at the edge again (left/right scroll)",
    ),
    Binding(
        "t",
        "toggle_times",
        "times",
        show=False,
        id="log.times",
        tooltip="event rows' times: the clock, or how long ago",
    ),
    Binding(
        "y",
        "copy_line",
        "copy line",
        show=False,
        id="log.copy",
        tooltip="copy the selected line (the newest while following) to the clipboard",
    ),
]


class LogKeys:
    """The log pane's key actions (mixed into :class:`LogView`)."""

    # ------------------------------------------------------------------ the selected line

    def _newest_shown(self: LogView) -> int | None:
        """The absolute row of the last line in the view, or None when it is empty."""
        return self._at(self.line_count - 1)[0] if self.line_count else None

    def _select(self: LogView, absolute: int) -> None:
        """Select row ``absolute`` (pausing), and scroll just enough to show it."""
        self.pause()
        self.cursor = absolute
        self._cache.clear()
        line = self._line_of(absolute)
        top = int(self.scroll_offset.y)
        height = max(1, self.size.height)
        last = line + self._pieces(self._row(absolute)) - 1
        if line < top:
            self._scroll_to_row(line)
        elif last >= top + height:
            self._scroll_to_row(max(0, last - height + 1))
        self._update_subtitle()
        self.refresh()

    def _shown_rows(self: LogView) -> list[int]:
        """The absolute rows in the view, in order (each once)."""
        if self._lines is None:
            return list(range(self.buffer.first_index, self.buffer.appended))
        return [row for row, piece in self._lines if piece == 0]

    def _move(self: LogView, rows: int) -> None:
        """Move the selected line ``rows`` rows (of those shown) down, or up if negative."""
        if not self.line_count:
            return
        if self.cursor is None:
            # No line selected yet: the first key selects one on screen and goes no further
            # (following, the newest; paused by the mouse, the bottom or the top one).
            if self.following:
                if rows > 0:
                    return  # the newest line is on screen already
                start = self._newest_shown()
            else:
                start = self._bottom_row() if rows < 0 else self._top_row()
            if start is not None:
                self._select(start)
            return
        shown = self._shown_rows()
        at = bisect.bisect_left(shown, self.cursor if self.cursor is not None else 0)
        if rows > 0 and at >= len(shown) - 1:
            self.follow()  # down past the newest line: follow again, as scrolling to the end does
            return
        self._select(shown[max(0, min(len(shown) - 1, at + rows))])

    def action_cursor_down(self: LogView) -> None:
        self._move(1)

    def action_cursor_up(self: LogView) -> None:
        self._move(-1)

    def action_page_down(self: LogView) -> None:
        if self.following:
            return
        self._page(1)

    def action_page_up(self: LogView) -> None:
        self._page(-1)

    def _page(self: LogView, pages: int) -> None:
        height = max(1, self.size.height - 1)
        if not self.line_count:
            return
        if self.cursor is None:
            # Following: from the newest line; paused by the mouse: from the screen's edge.
            start = self._newest_shown() if self.following else None
            if start is None:
                start = self._top_row() if pages < 0 else self._bottom_row()
            self.pause()
            self.cursor = start
        self._steering = True
        try:
            self.scroll_to(
                y=self.scroll_offset.y + pages * height, animate=False, immediate=True, force=True
            )
        finally:
            self._steering = False
        self._move(pages * height)

    def action_follow(self: LogView) -> None:
        self.follow()

    def action_top(self: LogView) -> None:
        if self.line_count:
            self._select(self._at(0)[0])
            self._scroll_to_row(0)

    def selected_text(self: LogView) -> str | None:
        """The text of the selected line, or of the newest line while following."""
        if self.cursor is not None and self.cursor >= self.buffer.first_index:
            row = self._row(self.cursor)
            return display_text(row.text) if isinstance(row, LogLine) else event_text(row)
        for row in reversed(self.buffer):
            if isinstance(row, LogLine) and self._kept(row):
                return display_text(row.text)
        return None

    def action_copy_line(self: LogView) -> None:
        text = self.selected_text()
        if text is None:
            self._say("no line to copy yet")
            return
        self.app.copy_to_clipboard(text)
        which = "the selected line" if self.cursor is not None else "the newest line"
        shown = text if len(text) <= 60 else text[:59] + "…"
        self._say(f"copied {which}: {shown}")

    def _say(self: LogView, words: str) -> None:
        self.said = words
        self.notify(printable(words), timeout=3, markup=False)

    # ------------------------------------------------------------------ filter, wrap, times

    def action_toggle_problems(self: LogView) -> None:
        self.problems_only = not self.problems_only
        self.set_class(self.problems_only, "-filtered")
        self._relayout()

    def action_toggle_wrap(self: LogView) -> None:
        self.wrap = not self.wrap
        if self.wrap:
            self.scroll_to(x=0, animate=False, immediate=True, force=True)
        self._relayout()

    def action_toggle_times(self: LogView) -> None:
        self.relative_times = not self.relative_times
        self.refresh()

    # ------------------------------------------------------------------ search keys

    def action_next_match(self: LogView) -> None:
        self._step(forward=True)

    def action_previous_match(self: LogView) -> None:
        self._step(forward=False)

    def action_clear_search(self: LogView) -> None:
        self.clear_search()

    def check_action(self: LogView, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("next_match", "previous_match", "clear_search"):
            return self.search is not None
        if action == "follow":
            return None if self.following else True
        if action in ("scroll_left", "scroll_right"):
            return not self.wrap
        return True

    def why_not(self: LogView, action: str) -> str | None:
        """Why the shown-but-greyed ``action`` does nothing now."""
        if action == "follow":
            return "following already: the newest line is on screen"
        if action in ("next_match", "previous_match"):
            return "no search yet: / searches the log"
        return None

    def _step(self: LogView, *, forward: bool) -> None:
        search = self.search
        if search is None:
            return
        if search.current is not None:
            origin = search.current
        else:
            origin = self._top_row() - 1 if forward else self._bottom_row() + 1
        target = search.after(origin) if forward else search.before(origin)
        wrapped = False
        if target is None and search.rows:
            # Past the last match: start again from the other end, and say so.
            target = search.rows[0] if forward else search.rows[-1]
            wrapped = True
        if target is None:
            self._say(f"no match for {search.term!r}")
            return
        search.current = target
        self._cache.clear()
        self.pause()
        self.cursor = target
        if not self._row_visible(target):
            self._jump(target)
        self._update_subtitle()
        self.refresh()
        if wrapped:
            self._say("search wrapped to the top" if forward else "search wrapped to the bottom")

    def _row_visible(self: LogView, absolute: int) -> bool:
        top = int(self.scroll_offset.y)
        line = self._line_of(absolute)
        return top <= line < top + self.size.height

    def _jump(self: LogView, absolute: int) -> None:
        """Put row ``absolute`` a third of the way down the view (and pause)."""
        self.pause()
        y = max(0, self._line_of(absolute) - self.size.height // 3)
        self._scroll_to_row(y)
