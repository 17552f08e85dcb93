"""Quitting while an action runs: ``q`` or ``Ctrl+C`` ask first, and only then.

A kill or a relaunch in flight is a sequence of steps babysit drives (SIGTERM, the
grace, SIGKILL; the launch, the wait for ready): quitting midway leaves the host
where that step left it. Any other time, both keys quit at once.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmQuit(ModalScreen[bool]):
    """``True`` to quit anyway; Esc, ``n`` or the other button keep babysit running.
    ``Ctrl+C`` again quits, as people press it twice."""

    AUTO_FOCUS = "#keep"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "keep", "keep watching", id="quit.keep"),
        Binding("ctrl+c,y", "quit_anyway", "quit anyway", id="quit.anyway", priority=True),
    ]

    def __init__(self, running: str) -> None:
        super().__init__()
        self.running = running

    def compose(self) -> ComposeResult:
        with Vertical(id="quit") as box:
            box.border_title = Content("quit babysit?")
            yield Static(
                Content(
                    f"{self.running}. Quitting now stops it where it is: what was sent to "
                    "the host stays done, and nothing more is sent or waited for."
                ),
                id="quit-what",
            )
            with Horizontal(id="quit-buttons"):
                yield Button("Keep watching (Esc)", id="keep", compact=True)
                yield Button("Quit anyway (y)", id="anyway", variant="error", compact=True)

    def action_keep(self) -> None:
        self.dismiss(False)

    def action_quit_anyway(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#keep")
    def _keep(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#anyway")
    def _anyway(self) -> None:
        self.dismiss(True)
