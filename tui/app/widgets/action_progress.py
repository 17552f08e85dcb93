"""The line under the banner that tells what a kill or a relaunch is doing, then how it ended.

It is hidden until an action starts. While one runs (``-running``) its text is
re-drawn every second from a function of the seconds since the action began,
so "3 s of 30" counts on its own between the host's reports. When the action
ends the line keeps its last words, marked ``-ok`` or ``-failed``, until the
next action.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.content import Content
from textual.widgets import Static

from tui.core.sanitize import printable

#: Given the seconds since the action began, the words to show.
ProgressText = Callable[[float], str]

STATES = ("-running", "-ok", "-failed")


class ActionProgress(Static):
    """One line: ``stopping pid 67115: SIGTERM sent · 3 s of 30 …``."""

    def __init__(self, clock: Callable[[], float] = time.time, *, id: str | None = None) -> None:
        super().__init__(Content(""), id=id)
        self._clock = clock
        self._text: ProgressText | None = None
        self._since = 0.0
        #: The last words shown (for tests and the help screen).
        self.words = ""

    def on_mount(self) -> None:
        self.set_interval(1.0, self.redraw)

    def running(self, text: ProgressText) -> None:
        """Start showing an action in progress; ``text`` is asked again every second."""
        self._text = text
        self._since = self._clock()
        self._state("-running")
        self.redraw()

    def redraw(self) -> None:
        if self._text is not None:
            self._show(self._text(self._clock() - self._since))

    def finished(self, words: str, *, ok: bool) -> None:
        """The action ended: keep its outcome on the line."""
        self._text = None
        self._state("-ok" if ok else "-failed")
        self._show(words)

    def _show(self, words: str) -> None:
        self.words = words
        self.update(Content(printable(words)))

    def _state(self, state: str) -> None:
        for name in STATES:
            self.set_class(name == state, name)
        self.add_class("-shown")
