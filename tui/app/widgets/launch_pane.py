"""The launch pane: the flags you meant beside the ones that actually run.

Rows come from :class:`~tui.core.launch.diff.LaunchDiff`: for each flag the value in
hosts.yaml (intended), in /proc cmdline (running) and in the server's own
printed arguments (reported). A flag intended but absent from the running
server — the dropped ``--speculative-algorithm`` — stands out; values that
differ show both.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.core.launch.diff import FlagRow, FlagStatus, LaunchDiff
from tui.core.sanitize import printable

FLAG_WIDTH = 28
VALUE_WIDTH = 11

#: Status -> (mark after the running value, style of the row, text when nothing runs).
MARKS = {
    FlagStatus.SAME: ("✓", "", None),
    FlagStatus.MISSING: ("✗", "bold reverse", "missing"),
    FlagStatus.CHANGED: ("≠", "bold", None),
    FlagStatus.EXTRA: ("+", "dim", None),
    FlagStatus.UNCHECKED: ("?", "dim", None),
}


def _cut(text: str | None, width: int) -> str:
    value = printable(text) if text is not None else "—"
    return value if len(value) <= width else value[: width - 1] + "…"


def pane_rows(diff: LaunchDiff | None) -> list[FlagRow]:
    """Rows worth a look first (missing, changed), then the rest. Pure, for tests."""
    if diff is None:
        return []
    order = {
        FlagStatus.MISSING: 0,
        FlagStatus.CHANGED: 1,
        FlagStatus.EXTRA: 2,
        FlagStatus.SAME: 3,
        FlagStatus.UNCHECKED: 4,
    }
    return sorted(diff.rows, key=lambda r: order[r.status])


class LaunchPane(Static):
    DEFAULT_CLASSES = "pane"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("waiting for the first probe …", style="dim"), id=id)
        self.border_title = "Launch: intended vs running"
        self._shown: tuple[LaunchDiff | None, str | None] | None = None

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show(*self._shown)

    def show(self, diff: LaunchDiff | None, note: str | None = None) -> None:
        self._shown = (diff, note)
        text = Text(no_wrap=True, overflow="ellipsis")
        # flag, intended, running and a one-character mark, with a space between each.
        room = (self.content_size.width or 60) - 2 * VALUE_WIDTH - 5
        flag_width = max(12, min(FLAG_WIDTH, room))
        rows = pane_rows(diff)
        if not rows:
            text.append(note or "no run to compare with", style="dim")
            self.set_class(False, "-problem")
            self.update(text)
            return
        text.append(f"{'flag':<{flag_width}} {'intended':<{VALUE_WIDTH}} running", style="dim")
        for row in rows:
            mark, style, absent = MARKS[row.status]
            running = row.reported if row.reported is not None else row.actual
            if absent is not None:
                running = absent
            text.append("\n")
            text.append(f"{_cut(row.flag, flag_width):<{flag_width}} ", style=style)
            text.append(f"{_cut(row.intended, VALUE_WIDTH):<{VALUE_WIDTH}} ", style=style)
            text.append(f"{_cut(running, VALUE_WIDTH):<{VALUE_WIDTH}} {mark}", style=style)
        for said in diff.notes if diff is not None else ():
            text.append(f"\n{printable(said)}", style="dim")
        self.set_class(any(r.status is FlagStatus.MISSING for r in rows), "-problem")
        self.update(text)
