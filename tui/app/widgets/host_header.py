"""The top line: which app, host, hop chain and service; the link's state and the time."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Label

from tui.core.sanitize import printable

#: The CSS class the link state gets, by the first word of ``Transport.status_text()``.
STATE_CLASSES = {
    "local": "-ok",
    "connected": "-ok",
    "idle": "-pending",
    "connecting": "-pending",
    "reconnecting": "-warning",
    "failed": "-error",
}


def state_class(status: str) -> str:
    word = status.split(" ", 1)[0].rstrip(":")
    return STATE_CLASSES.get(word, "-pending")


class HostHeader(Horizontal):
    """``babysit · kpro5 (ssh root@10.0.0.15) · qwen`` … ``connected · 12:04:31``.

    The right side is re-read every second from ``status`` (the transport's
    ``status_text``) and ``clock``; both are injected so tests can freeze them.
    """

    def __init__(
        self,
        where: str,
        status: Callable[[], str],
        clock: Callable[[], float] = time.time,
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self._where = where
        self._status = status
        self._clock = clock
        self._shown_status: str | None = None

    def compose(self) -> ComposeResult:
        yield Label(Content("babysit"), id="app-name")
        yield Label(Content(f" · {printable(self._where)}"), id="where")
        yield Label(id="link-state")
        yield Label(id="clock")

    def on_mount(self) -> None:
        self.tick()
        self.set_interval(1.0, self.tick)

    def tick(self) -> None:
        """Re-read the link state and the time."""
        status = printable(self._status())
        if status != self._shown_status:
            self._shown_status = status
            state = self.query_one("#link-state", Label)
            state.update(Content(status))
            for name in set(STATE_CLASSES.values()):
                state.set_class(name == state_class(status), name)
        now = time.strftime("%H:%M:%S", time.localtime(self._clock()))
        # Always as wide: no layout pass for the clock's tick.
        self.query_one("#clock", Label).update(Content(f" · {now}"), layout=False)
