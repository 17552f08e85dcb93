"""The fleet table: the fleet's rows drawn through the line API, a header line first.

A cell may span the columns after it (:attr:`~tui.app.fleet_rows.Cell.span`): a
starting run's phase covers the serving columns it has no figures for yet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.app.fleet_rows import COLUMNS, Cell, FleetRow
from tui.core.verdicts import DEGRADED_TONE, TONES

#: The note column is at least this wide (wider when the screen has room); the line
#: under the table says the rest.
NOTE_WIDTH = 30


class FleetTable(ScrollView, can_focus=True, inherit_bindings=False):
    """The rows, drawn through the line API: a header line, then one line per row.

    Each row's line is drawn once and kept until its cells change, so a refresh
    costs the rows that changed, not the table. The cursor stays on the top (the
    worst) row until the user moves it; from then on it follows its row when
    rows move.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "fleet-table--header",
        "fleet-table--cursor",
        *(f"fleet-table--{tone}" for tone in (*TONES, DEGRADED_TONE)),
        "fleet-table--bad",
        "fleet-table--old",
        "fleet-table--muted",
        "fleet-table--warning",
    }
    # Every key the table answers to (Textual's scrolling keys are not inherited, so the
    # help lists exactly these): the arrows, and j/k, g/G, Space/b as in less and htop.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select",
            "open (K/r/R there)",
            id="fleet.open",
            tooltip="open the service's screen; kill (K), relaunch (r) and replace (R) are "
            "there, each offered only when safe",
        ),
        Binding("j,down", "move(1)", "down", show=False, id="fleet.down"),
        Binding("k,up", "move(-1)", "up", show=False, id="fleet.up"),
        Binding("space,ctrl+f,pagedown", "page(1)", "page down", show=False, id="fleet.page_down"),
        Binding("b,ctrl+b,pageup", "page(-1)", "page up", show=False, id="fleet.page_up"),
        Binding("g,home", "move_to(0)", "first", show=False, id="fleet.first"),
        Binding("G,end", "move_to(-1)", "last", show=False, id="fleet.last"),
        Binding("left", "scroll_left", "scroll left", show=False, id="fleet.left"),
        Binding("right", "scroll_right", "scroll right", show=False, id="fleet.right"),
    ]

    #: The heading of these keys in ``?``.
    HELP_SECTION = "the rows"

    class Highlighted(Message):
        """The cursor is on another row (``key``; None when the table is empty)."""

        def __init__(self, key: str | None) -> None:
            super().__init__()
            self.key = key

    class Selected(Message):
        """The user chose the row ``key`` (Enter or a double click)."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, service_width: int, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.service_width = service_width
        self.cursor = 0
        #: Set once the user moves the cursor (then it follows its row).
        self.held = False
        self._order: list[str] = []
        self._cells: dict[str, tuple[Cell, ...]] = {}
        self._lines: dict[str, Strip] = {}
        self._styles: dict[tuple[str, ...], Style] = {}
        self._widths = self._column_widths(0)

    # ------------------------------------------------------------------ what is shown

    @property
    def keys(self) -> list[str]:
        """Row keys in the order shown."""
        return list(self._order)

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def selected(self) -> str | None:
        return self._order[self.cursor] if self._order else None

    def show(self, rows: Sequence[FleetRow]) -> None:
        """Make the table hold exactly ``rows`` in this order; redraw only what changed."""
        selected = self.selected
        order = [row.key for row in rows]
        changed = []
        for row in rows:
            if self._cells.get(row.key) != row.cells:
                self._cells[row.key] = row.cells
                self._lines.pop(row.key, None)
                changed.append(row.key)
        for key in set(self._cells) - set(order):
            del self._cells[key]
            self._lines.pop(key, None)
        moved = order != self._order
        self._order = order
        cursor = self.cursor
        if self.held and selected in self._cells:
            cursor = order.index(selected)
        self.cursor = max(0, min(cursor, len(order) - 1))
        if moved:
            self.virtual_size = Size(sum(self._widths) + 2 * len(COLUMNS), len(order) + 1)
            self.refresh()
        else:
            for key in changed:
                self.refresh_line(order.index(key) + 1)
        if self.selected != selected:
            self.post_message(self.Highlighted(self.selected))

    # ------------------------------------------------------------------ drawing

    def _column_widths(self, width: int) -> list[int]:
        fixed = sum(c.width for c in COLUMNS) + self.service_width + 2 * len(COLUMNS)
        widths = []
        for column in COLUMNS:
            if column.key == "service":
                widths.append(self.service_width)
            elif column.key == "note":
                widths.append(max(NOTE_WIDTH, width - fixed))
            else:
                widths.append(column.width)
        return widths

    def on_resize(self) -> None:
        widths = self._column_widths(self.size.width)
        if widths != self._widths:
            self._widths = widths
            self._lines.clear()
            self.virtual_size = Size(sum(widths) + 2 * len(COLUMNS), len(self._order) + 1)
            self.refresh()

    def notify_style_update(self) -> None:
        """The theme or focus changed: draw every line again with the new styles."""
        super().notify_style_update()
        self._styles.clear()
        self._lines.clear()

    def on_focus(self) -> None:
        self.notify_style_update()
        self.refresh()

    def on_blur(self) -> None:
        self.notify_style_update()
        self.refresh()

    def _style(self, tones: tuple[str, ...]) -> Style:
        style = self._styles.get(tones)
        if style is None:
            style = Style()
            for tone in tones:
                # The header and the cursor are drawn whole (their background blended with
                # the table's); the others only add what they set.
                whole = tone in ("header", "cursor")
                style += self.get_component_rich_style(f"fleet-table--{tone}", partial=not whole)
            self._styles[tones] = style
        return style

    def _line(self, cells: Sequence[Cell], base: Style) -> Strip:
        segments: list[Segment] = []
        covered = 0
        for index, cell in enumerate(cells):
            if covered:  # under the span of a cell before it
                covered -= 1
                continue
            spanned = self._widths[index : index + max(1, cell.span)]
            width = sum(spanned) + 2 * (len(spanned) - 1)
            covered = len(spanned) - 1
            style = base + self._style(cell.tones)
            text = cell.text
            age = f" {cell.age}" if cell.age else ""
            mark = f" {cell.mark}" if cell.mark else ""
            if cell_len(text) + cell_len(mark) > width:
                mark = ""
            if cell_len(text) + cell_len(mark) + cell_len(age) > width:
                age = ""
                if cell_len(text) > width:
                    text = set_cell_size(text, width - 1) + "…"
            segments.append(Segment(" ", base))
            segments.append(Segment(text, style))
            if mark:
                segments.append(Segment(mark, style + self._style((DEGRADED_TONE,))))
            if age:
                segments.append(Segment(age, base + self._style(("old",))))
            pad = width - cell_len(text) - cell_len(mark) - cell_len(age)
            segments.append(Segment(" " * (pad + 1), base))
        return Strip(segments)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        if y == 0:
            header = self._style(("header",))
            cells = [Cell(c.header) for c in COLUMNS]
            return self._line(cells, base + header).crop_extend(
                scroll_x, scroll_x + width, base + header
            )
        index = scroll_y + y - 1
        if index >= len(self._order):
            return Strip.blank(width, base)
        key = self._order[index]
        if index == self.cursor:
            cursor = base + self._style(("cursor",))
            return self._line(self._cells[key], cursor).crop_extend(
                scroll_x, scroll_x + width, cursor
            )
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = self._line(self._cells[key], base)
        return line.crop_extend(scroll_x, scroll_x + width, base)

    # ------------------------------------------------------------------ moving

    def _move_cursor(self, index: int) -> None:
        if not self._order:
            return
        index = max(0, min(index, len(self._order) - 1))
        self.held = True
        if index == self.cursor:
            return
        old, self.cursor = self.cursor, index
        self.refresh_line(old + 1)
        self.refresh_line(index + 1)
        visible = max(1, self.size.height - 1)
        top = int(self.scroll_offset.y)
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif index >= top + visible:
            self.scroll_to(y=index - visible + 1, animate=False)
        self.post_message(self.Highlighted(self.selected))

    def action_move(self, step: int) -> None:
        self._move_cursor(self.cursor + step)

    def action_page(self, pages: int) -> None:
        self._move_cursor(self.cursor + pages * max(1, self.size.height - 2))

    def action_move_to(self, index: int) -> None:
        self._move_cursor(index if index >= 0 else len(self._order) - 1)

    def action_select(self) -> None:
        key = self.selected
        if key is not None:
            self.post_message(self.Selected(key))

    def on_click(self, event: events.Click) -> None:
        if event.y < 1:
            return
        index = int(self.scroll_offset.y) + event.y - 1
        if index < len(self._order):
            self._move_cursor(index)
            if event.chain >= 2:
                self.action_select()
