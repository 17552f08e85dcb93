"""The host screen's panes that fold: 80x24 and smaller first.

On a short terminal (under :data:`SHORT` rows) the launch and metrics panes are one
summary line each (``launch: 4 flags missing ✗``, ``metrics: 270 tok/s · 2 req · GPU
313/700 W``) and the hints one line each, so the banner and the log keep their room;
``l`` and ``m`` open and fold them, one open at a time while the terminal is short. On a
narrow one (under :data:`NARROW` columns) the launch pane folds unless a flag is missing.

:class:`HostPanes` is a part of :class:`~tui.app.screens.host.HostScreen`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.app.widgets.launch_pane import LaunchPane
from tui.app.widgets.metrics_pane import HintsLine, MetricsPane

if TYPE_CHECKING:
    from tui.app.screens.host import HostScreen

#: Below this many columns the launch pane folds to its summary line unless it shows a
#: problem (a flag missing).
NARROW = 100
#: Below this many rows the launch and metrics panes fold to one summary line each, so
#: the banner and the log keep their room (``l`` and ``m`` open them).
SHORT = 32
#: The most lines an open pane takes, its border included (fewer on a short terminal).
PANE_LINES = 12
#: The panes that fold, by id, and the key that opens and folds each.
FOLDING = {"launch": "l", "metrics": "m"}


class HostPanes:
    """The host screen's folding panes (mixed into :class:`HostScreen`)."""

    #: Panes the user opened (True) or folded (False) with their key, by id, the last
    #: pressed last; the others fold by the terminal's size.
    _opened: dict[str, bool]

    def fold_panes(self: HostScreen) -> None:
        """Fold each pane the user has not opened or folded by key: both below
        :data:`SHORT` rows, the launch pane below :data:`NARROW` columns unless a flag is
        missing. Below :data:`SHORT` rows one pane at most is open (the one opened last),
        so the log keeps its lines. Folded panes stack, one line each, and so do open
        ones below :data:`NARROW` columns; the hints fold with the metrics."""
        width, height = self.size
        short = height < SHORT
        launch, metrics = self.query_one(LaunchPane), self.query_one(MetricsPane)
        narrow = width < NARROW and not launch.has_class("-problem")
        launch.folded = not self._opened.get("launch", not (short or narrow))
        metrics.folded = not self._opened.get("metrics", not short)
        if short and not launch.folded and not metrics.folded:
            last = next(reversed(self._opened), "launch")
            (metrics if last == "launch" else launch).folded = True
        hints = self.query_one(HintsLine)
        hints.folded, hints.evidence = metrics.folded, not short
        stacked = launch.folded or metrics.folded or width < NARROW
        self.query_one("#top").set_class(stacked, "-stacked")
        self.query_one("#panes").set_class(short, "-short")
        limit = max(4, height * 4 // 10) if short else PANE_LINES
        for pane in (launch, metrics):
            pane.border_subtitle = f"{FOLDING[pane.id or '']} folds" if short else ""
            # In cells, not vh: a container of height auto counts a vh limit wrong.
            pane.styles.max_height = limit
        if launch.line_limit != limit - 2:
            launch.line_limit = limit - 2
            launch.refresh_rows()

    def action_toggle_pane(self: HostScreen, pane: str) -> None:
        """Open a folded pane, or fold an open one (``l`` launch, ``m`` metrics)."""
        widget = self.query_one(LaunchPane) if pane == "launch" else self.query_one(MetricsPane)
        opened = widget.folded
        self._opened.pop(pane, None)  # the last one pressed comes last
        self._opened[pane] = opened
        if opened and self.size.height < SHORT:
            other = "metrics" if pane == "launch" else "launch"
            if self._opened.get(other):
                self._opened[other] = False
        self.fold_panes()
