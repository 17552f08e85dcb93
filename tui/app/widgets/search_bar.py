"""The one-line search prompt under the log pane (``/`` opens it, ``Esc`` closes it)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, Label


class SearchBar(Horizontal):
    """A prompt for a search term. Posts :class:`Submitted` or :class:`Closed`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "close search", id="search.close"),
    ]

    class Submitted(Message):
        """The user asked to find ``term`` (Enter)."""

        def __init__(self, term: str) -> None:
            super().__init__()
            self.term = term

    class Closed(Message):
        """The user closed the prompt without searching (Esc)."""

    def compose(self) -> ComposeResult:
        yield Label(Content("/"), id="search-prompt")
        yield Input(
            placeholder="find in the log: Enter finds, Esc closes", compact=True, id="search-input"
        )

    def open(self, term: str) -> None:
        """Show the prompt with ``term`` in it, focused."""
        self.add_class("-open")
        field = self.query_one(Input)
        field.value = term
        field.focus()

    def close(self) -> None:
        self.remove_class("-open")

    def action_close(self) -> None:
        self.close()
        self.post_message(self.Closed())

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.close()
        self.post_message(self.Submitted(event.value))
