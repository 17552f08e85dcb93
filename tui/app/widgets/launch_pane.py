"""The launch pane: the flags you meant beside the ones that actually run.

Rows come from :class:`~tui.core.launch.diff.LaunchDiff`: for each flag the value in
hosts.yaml (intended), in /proc cmdline (running) and in the server's own
printed arguments (reported). A flag intended but absent from the running
server — the dropped ``--speculative-algorithm`` — stands out; values that
differ show both. Values are shown whole: one too long for its column (a model's
path) takes lines of its own below its flag. A flag name too long for its column is
cut in the middle, so flags that share a prefix still read apart.

Folded (a short terminal, or the ``l`` key), the pane is one line:
:func:`~tui.core.launch.words.launch_summary`.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from tui.core.launch.diff import FlagRow, FlagStatus, LaunchDiff
from tui.core.launch.words import (
    MARKS,
    flag_names,
    launch_summary,
    running_text,
    value_lines,
)
from tui.core.sanitize import printable

#: The narrowest the flag column gets (a longer flag is cut in the middle).
MIN_FLAG_WIDTH = 12
#: Values up to this long always fit their column.
VALUE_WIDTH = 11
#: The label of a value's own lines (``  intended /models/…``).
LABEL_WIDTH = 11

#: Status -> style of the row.
STYLES = {
    FlagStatus.SAME: "",
    FlagStatus.MISSING: "bold reverse",
    FlagStatus.CHANGED: "bold",
    FlagStatus.EXTRA: "dim",
    FlagStatus.UNCHECKED: "dim",
}


def _value(text: str | None) -> str:
    return printable(text) if text is not None else "—"


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


def pane_text(
    diff: LaunchDiff | None, note: str | None, width: int, lines: int | None = None
) -> Text:
    """The open pane's lines for a content ``width``, at most ``lines`` of them. Pure, for
    tests.

    A row whose values fit is one line: flag, intended, running, mark. Else its flag
    and mark take a line and each value one or more of its own, whole. Rows come worst
    first; those past ``lines`` are counted on the last line, never cut in half."""
    text = Text(no_wrap=True, overflow="crop")
    rows = pane_rows(diff)
    if not rows:
        text.append(note or "no run to compare with", style="dim")
        return text
    # flag, intended, running and a one-character mark, with a space between each. The
    # value columns are as wide as the values that fit them (a longer one takes lines of
    # its own); the flags get the rest, so a long flag is cut only when it must be.
    values = [_value(v) for r in rows for v in (r.intended, running_text(r))]
    cap = max(VALUE_WIDTH, (width - MIN_FLAG_WIDTH - 4) // 2)
    value_width = max([len("intended"), *(len(v) for v in values if len(v) <= cap)])
    longest = max(len(printable(r.flag)) for r in rows)
    flag_width = max(MIN_FLAG_WIDTH, min(longest, width - 2 * value_width - 4))
    value_width = max(value_width, (width - flag_width - 4) // 2)
    names = flag_names([printable(r.flag) for r in rows], flag_width)
    text.append(f"{'flag':<{flag_width}} {'intended':<{value_width}} running", style="dim")
    drawn = [
        _row_text(row, name, flag_width, value_width, width)
        for row, name in zip(rows, names, strict=True)
    ]
    used = 1
    for index, row_text in enumerate(drawn):
        height = row_text.plain.count("\n") + 1
        left = rows[index:]
        if lines is not None and used + height + (len(left) > 1) > lines:
            text.append("\n")
            text.append(_more(left), style="dim")
            break
        text.append("\n")
        text.append_text(row_text)
        used += height
    return text


def _row_text(row: FlagRow, name: str, flag_width: int, value_width: int, width: int) -> Text:
    mark, style = MARKS[row.status], STYLES[row.status]
    intended, running = _value(row.intended), _value(running_text(row))
    text = Text()
    if len(intended) <= value_width and len(running) <= value_width:
        text.append(f"{name:<{flag_width}} ", style=style)
        text.append(f"{intended:<{value_width}} ", style=style)
        text.append(f"{running:<{value_width}} {mark}", style=style)
        return text
    text.append(f"{name:<{flag_width + 2 * value_width + 2}} {mark}", style=style)
    said = [("both", intended)] if intended == running else []
    said = said or [("intended", intended), ("running", running)]
    room = max(8, width - LABEL_WIDTH)
    for label, value in said:
        for index, line in enumerate(value_lines(value, room)):
            head = f"  {label:<{LABEL_WIDTH - 2}}" if index == 0 else " " * LABEL_WIDTH
            text.append(f"\n{head}", style="dim")
            text.append(line, style=style)
    return text


def _more(rows: list[FlagRow]) -> str:
    """``… 3 more rows: 3 as intended ✓`` for the rows past the pane's room."""
    counts: dict[FlagStatus, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    said = ", ".join(f"{n} {status.value} {MARKS[status]}" for status, n in counts.items())
    more = f"{len(rows)} more row{'s' if len(rows) != 1 else ''}"
    return f"… {more} ({said.replace('same', 'as intended')}): a taller terminal shows them"


class LaunchPane(Static):
    DEFAULT_CLASSES = "pane"

    #: One summary line instead of the rows (toggled by the host screen's ``l``).
    folded: reactive[bool] = reactive(False, init=False)
    #: Lines of rows the pane has room for (None: as many as there are rows).
    line_limit: int | None = None

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("waiting for the first probe …", style="dim"), id=id)
        self.border_title = "Launch: intended vs running"
        self._shown: tuple[LaunchDiff | None, str | None] | None = None
        #: The text on screen (None: the first one, drawn by the constructor).
        self._drawn: Text | None = None

    def on_resize(self) -> None:
        self.refresh_rows()

    def refresh_rows(self) -> None:
        """Draw the last diff again (the pane's width or room changed)."""
        if self._shown is not None:
            self.show(*self._shown)

    def watch_folded(self, folded: bool) -> None:
        self.set_class(folded, "-folded")
        if self._shown is not None:
            self.show(*self._shown)
        else:
            self._draw(self._waiting())

    def _waiting(self) -> Text:
        if self.folded:
            return Text.assemble(("launch: waiting for the first probe …", "dim"), self._key())
        return Text("waiting for the first probe …", style="dim")

    @staticmethod
    def _key() -> Text:
        return Text("  l opens", style="dim")

    def summary(self) -> str:
        """The folded line's words (without the key)."""
        diff, note = self._shown if self._shown is not None else (None, "waiting for a probe")
        return launch_summary(diff, note)[0]

    def show(self, diff: LaunchDiff | None, note: str | None = None) -> None:
        self._shown = (diff, note)
        rows = pane_rows(diff)
        self.set_class(any(r.status is FlagStatus.MISSING for r in rows), "-problem")
        if self.folded:
            words, problem = launch_summary(diff, note)
            self._draw(Text.assemble((words, "bold" if problem else ""), self._key()))
            return
        # An alias is said in its row (``EAGLE (SGLang runs NEXTN as EAGLE)``).
        self._draw(pane_text(diff, note, self.content_size.width or 60, self.line_limit))

    def _draw(self, text: Text) -> None:
        """Show ``text`` unless it is shown already; a new layout only when it has another
        number of lines (each probe brings the same diff again)."""
        drawn = self._drawn
        if drawn is not None and text == drawn and text.style == drawn.style:
            return  # (Text's == compares the characters and spans, not the base style)
        lines = text.plain.count("\n")
        self.update(text, layout=drawn is None or lines != drawn.plain.count("\n"))
        self._drawn = text
