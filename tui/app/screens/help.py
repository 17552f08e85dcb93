"""``?``: the keys of the screen it was opened from, and whether each can be used now.

The list is the screen's active bindings, nothing more and nothing less (a test
compares them); a greyed-out key, pressed, says why (:func:`say_why_not`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from textual.app import App, ComposeResult
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
    #: Whose key it is (``the log``, ``this service``, ``babysit``): the help's headings.
    section: str = ""


def section_of(node: object) -> str:
    """The heading of a node's keys: its ``HELP_SECTION``, or ``babysit`` for the app's."""
    named = getattr(node, "HELP_SECTION", None)
    if isinstance(named, str):
        return named
    return "babysit" if isinstance(node, App) else ""


def key_names(binding: Binding, app: App[object]) -> str:
    """How a person types ``binding``'s key (``G``, ``end``, ``ctrl+f``, ``space``), even
    where the footer shows one name for several keys."""
    return app.get_key_display(replace(binding, key_display=None))


def keys_of(screen: Screen[object]) -> list[KeyHelp]:
    """Every key ``screen`` answers to now (the focused widget's, the screen's, the app's),
    one line per action, greyed-out ones marked; the keys hidden by ``check_action``
    (read-only) are left out, as they do nothing."""
    keys: dict[tuple[str, str], list[str]] = {}
    items: dict[tuple[str, str], KeyHelp] = {}
    rank: dict[tuple[str, str], int] = {}
    for active in screen.active_bindings.values():
        binding = active.binding
        ident = (binding.action, binding.description)
        shown = key_names(binding, screen.app)
        keys.setdefault(ident, [])
        if shown not in keys[ident]:
            keys[ident].append(shown)
        what = binding.tooltip or binding.description or binding.action
        items[ident] = KeyHelp("", what, active.enabled, section_of(active.node))
        rank.setdefault(ident, 2 if isinstance(active.node, App) else int(active.node is screen))
    # The focused widget's keys first, then the screen's, then the app's.
    order = sorted(items, key=lambda ident: rank[ident])
    return [replace(items[ident], key=", ".join(keys[ident])) for ident in order]


def say_why_not(screen: Screen[object], key: str) -> bool:
    """When ``key`` is bound on ``screen`` only to actions that are greyed out (or hidden)
    now, say why, from the first of their nodes that knows (its ``why_not(action)``).
    Textual runs no disabled action; without this the key would do nothing, silently.
    Returns whether something was said."""
    app = screen.app
    reasons: list[str] = []
    for namespace, bindings in screen._modal_binding_chain:
        for binding in bindings.key_to_bindings.get(key, ()):
            target, action, _ = app._parse_action(binding.action, namespace)
            if target.check_action(action, ()):
                return False  # it runs
            why_not = getattr(target, "why_not", None)
            reason = why_not(action) if callable(why_not) else None
            if reason:
                reasons.append(reason)
    if not reasons:
        return False
    app.notify(reasons[0], title=f"{key}: not now", severity="warning", timeout=4, markup=False)
    return True


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
                section = None
                for item in self.keys:
                    if item.section and item.section != section:
                        first = section is None
                        section = item.section
                        heading = "help-section -first" if first else "help-section"
                        yield Static(Content(section), classes=heading)
                    classes = "help-row" if item.enabled else "help-row -disabled"
                    with Horizontal(classes=classes):
                        yield Static(Content(item.key), classes="help-key")
                        what = item.description if item.enabled else f"{item.description} (not now)"
                        yield Static(Content(what), classes="help-what")
            if self.note:
                yield Static(Content(self.note), id="help-note")

    def action_close(self) -> None:
        self.dismiss(None)
