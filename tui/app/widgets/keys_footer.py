"""The footer's keys, ``?`` (help), ``q`` (quit) and ``esc`` (to the fleet) first.

Textual's footer lists the focused widget's keys, then the screen's, then the app's, and
cuts what does not fit at the right: at 80 columns that was ``?`` and ``q``, the two keys
a newcomer looks for. This footer draws the same keys, compact, with those two first and
the way back to the fleet after them; what does not fit is the rarest (``R`` replace).
"""

from __future__ import annotations

from collections import defaultdict

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: Actions whose keys come first, in this order.
FIRST = ("help", "quit", "back")


class KeysFooter(Footer):
    """:class:`~textual.widgets.Footer`, compact, with the keys of :data:`FIRST` first."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, compact=True)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        active = self.screen.active_bindings
        by_action: defaultdict[str, list[tuple[Binding, bool, str]]] = defaultdict(list)
        for _node, binding, enabled, tooltip in active.values():
            if binding.show:
                by_action[binding.action].append((binding, enabled, tooltip))
        first = [a for a in FIRST if a in by_action]
        order = first + [a for a in by_action if a not in first]
        self.styles.grid_size_columns = len(order)
        for action in order:
            binding, enabled, tooltip = by_action[action][0]
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette:
            yield FooterKey(
                palette.binding.key,
                self.app.get_key_display(palette.binding),
                palette.binding.description,
                palette.binding.action,
                classes="-command-palette",
                disabled=not palette.enabled,
                tooltip=palette.binding.tooltip or palette.binding.description,
            )
