"""``?``: the keys of the screen it was opened from, and whether each can be used now."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


@dataclass(frozen=True)
class KeyHelp:
    key: str
    description: str
    enabled: bool


def keys_of(screen: Screen[object]) -> list[KeyHelp]:
    """babysit's keys active on ``screen`` (the focused widget's, the screen's, the app's)
    and the command palette's, one line per action. Textual's own scrolling and focus keys
    are left out, and so are keys hidden by ``check_action`` (read-only)."""
    keys: dict[tuple[str, str], list[str]] = {}
    items: dict[tuple[str, str], KeyHelp] = {}
    for active in screen.active_bindings.values():
        binding = active.binding
        if binding.id is None and binding.action != "command_palette":
            continue
        ident = (binding.action, binding.description)
        shown = binding.key_display or screen.app.get_key_display(binding)
        keys.setdefault(ident, [])
        if shown not in keys[ident]:
            keys[ident].append(shown)
        what = binding.tooltip or binding.description
        items[ident] = KeyHelp("", what, active.enabled)
    return [
        KeyHelp(", ".join(sorted(keys[ident], key=len)), item.description, item.enabled)
        for ident, item in items.items()
    ]


class HelpScreen(ModalScreen[None]):
    """A list of keys; any of Escape, ``?`` or ``q`` closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "close", id="help.close"),
    ]

    def __init__(self, title: str, keys: Sequence[KeyHelp], note: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.keys = list(keys)
        self.note = note

    def compose(self) -> ComposeResult:
        with Vertical(id="help") as box:
            box.border_title = Content(self.title_text)
            box.border_subtitle = Content("Esc or ? closes")
            with VerticalScroll(id="help-keys"):
                for item in self.keys:
                    classes = "help-row" if item.enabled else "help-row -disabled"
                    with Horizontal(classes=classes):
                        yield Static(Content(item.key), classes="help-key")
                        what = item.description if item.enabled else f"{item.description} (not now)"
                        yield Static(Content(what), classes="help-what")
            if self.note:
                yield Static(Content(self.note), id="help-note")

    def action_close(self) -> None:
        self.dismiss(None)
