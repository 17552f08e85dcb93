"""The ``c`` key's answer: a canary's result, one fact per line, in a small modal.

It fits an 80x24 terminal (its lines wrap, and scroll when there are more); Escape,
Enter, ``q`` or ``c`` close it.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.core.canary import CanaryResult
from tui.core.sanitize import printable


class CanaryResultScreen(ModalScreen[None]):
    """A canary's :meth:`~tui.core.canary.CanaryResult.lines`, titled by its outcome."""

    DEFAULT_CSS = """
    CanaryResultScreen {
        align: center middle;
        background: $background 60%;

        #canary {
            width: 76;
            max-width: 95%;
            height: auto;
            max-height: 90%;
            padding: 0 1;
            border: round $accent;
            border-title-color: $accent;
            border-subtitle-color: $text-muted;
            background: $surface;
        }
        #canary.-failed { border: round $error; border-title-color: $error; }
        #canary-lines { height: auto; max-height: 1fr; }
        .canary-line { height: auto; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q,c", "close", "close", id="canary.close"),
    ]

    def __init__(self, label: str, result: CanaryResult) -> None:
        super().__init__()
        self.label = label
        self.result = result

    def compose(self) -> ComposeResult:
        result = self.result
        with Vertical(id="canary", classes="" if result.ok else "-failed") as box:
            box.border_title = Content(printable(f"canary · {self.label} · {result.outcome.value}"))
            box.border_subtitle = Content("Esc closes")
            with VerticalScroll(id="canary-lines"):
                for line in result.lines():
                    yield Static(Content(printable(line)), classes="canary-line")

    def action_close(self) -> None:
        self.dismiss(None)
