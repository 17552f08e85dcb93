"""The fleet screen: every service instance of the chosen hosts, one row each, worst first.

Each host is watched by a worker of its own (group ``fleet:<host>``). It asks for
all of the host's services in one round trip (a report with a small log tail, so
the row can show throughput, accept length, the queue, KV and GPU power), and
re-arms ``interval`` seconds after the answer came. A host that does not answer
delays only its own rows: they turn UNKNOWN with the reason and the time of the
next try, which backs off (see :mod:`tui.app.retry`).
While a service's host screen covers the fleet the workers wait, and they ask
again as soon as the fleet is shown.

The rows are computed by :func:`fleet_row`, a pure function of what the host last
said, when, and the time now: every value older than :data:`AGE_SHOWN_AFTER`
carries its age, and everything from an old answer is drawn as old. The table
(a line-API widget) redraws only the rows whose cells changed.

``Enter`` opens the row's host screen (the app pushes it; ``Esc`` comes back),
where ``k``, ``r`` and ``R`` act on that service with their own guards. ``/``
filters the rows by name or verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Input, Label, Static
from textual.worker import Worker, WorkerState

from tui.app.retry import failure_reason, retry_delay
from tui.app.screens.help import HelpScreen, keys_of
from tui.app.widgets.metrics_pane import sparkline
from tui.config import Host, Service
from tui.core.metrics import Latest, Metric, ServiceMetrics
from tui.core.report import ServiceReport
from tui.core.runs import Verdict
from tui.core.sanitize import printable
from tui.core.units import human_age

#: Seconds between two refreshes of a host (a refresh re-arms only once answered).
REFRESH_INTERVAL = 2.0
#: Seconds a host may take to answer before its rows turn UNKNOWN.
ANSWER_TIMEOUT = 10.0
#: A value at least this old shows its age beside it.
AGE_SHOWN_AFTER = 15.0
#: Bytes of each log's end a refresh reads for the metric columns (dozens of stats lines).
FLEET_TAIL = 16 * 1024
SPARK_WIDTH = 8
#: The note column is at least this wide (wider when the screen has room); the line
#: under the table says the rest.
NOTE_WIDTH = 30

#: One round trip to one host: a report per service asked for, in that order.
FleetReport = Callable[[Host, Sequence[Service]], Awaitable[Sequence[ServiceReport]]]


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    #: Cells; 0 for the service and note columns, which are sized when the table mounts.
    width: int


#: Left to right. Widths are fixed so that columns never jump; a value with its age
#: (`` 3m``) still fits.
COLUMNS: tuple[Column, ...] = (
    Column("service", "service", 0),
    Column("verdict", "verdict", 9),
    Column("pid", "pid", 7),
    Column("up", "up", 6),
    Column("gen", "gen tok/s", SPARK_WIDTH + 9),
    Column("accept", "accept", 8),
    Column("queue", "run/queue", 10),
    Column("kv", "KV", 8),
    Column("gpu", "GPU W", 12),
    Column("log", "last line", 9),
    Column("note", "note", 0),
)

#: How each verdict is drawn (a component class of :class:`FleetTable`, styled in TCSS).
TONES: Mapping[Verdict, str] = MappingProxyType(
    {
        Verdict.LIVE: "live",
        Verdict.STARTING: "starting",
        Verdict.STALE: "bad",
        Verdict.DEAD: "bad",
        Verdict.NO_LOG: "bad",
        Verdict.AMBIGUOUS: "bad",
        Verdict.UNKNOWN: "unknown",
    }
)


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Fleet:
    """What the fleet view watches: hosts with the services to show, and its name.

    Invariant: every host has at least one service (hosts without any are left out).
    """

    targets: tuple[tuple[Host, tuple[Service, ...]], ...]
    title: str = "fleet"
    timeout: float = ANSWER_TIMEOUT

    @classmethod
    def of(
        cls,
        targets: Sequence[tuple[Host, Sequence[Service]]],
        title: str = "fleet",
        timeout: float = ANSWER_TIMEOUT,
    ) -> Fleet:
        kept = tuple((host, tuple(services)) for host, services in targets if services)
        return cls(kept, title, timeout)


@dataclass(frozen=True)
class HostState:
    """What the screen knows of one host. Times are the screen's clock.

    ``reports`` are from the last answer that came (``answered_at``); a failure
    keeps them, to be drawn as old. Invariant: ``failure`` and ``retry_at`` are
    set together, and only after a failed round trip; ``asking_since`` is set
    while a round trip is on its way.
    """

    reports: Mapping[str, ServiceReport] = field(default_factory=lambda: MappingProxyType({}))
    answered_at: float | None = None
    asking_since: float | None = None
    failure: str | None = None
    retry_at: float | None = None
    failures: int = 0

    def asking(self, now: float) -> HostState:
        return dataclasses.replace(self, asking_since=now)

    def answered(self, reports: Sequence[ServiceReport], now: float) -> HostState:
        by_name = MappingProxyType({r.assessment.service: r for r in reports})
        return HostState(reports=by_name, answered_at=now)

    def failed(self, reason: str, now: float, retry_in: float) -> HostState:
        return dataclasses.replace(
            self,
            asking_since=None,
            failure=reason,
            retry_at=now + retry_in,
            failures=self.failures + 1,
        )


@dataclass(frozen=True)
class Cell:
    """One cell's text and its tones (component classes of :class:`FleetTable`), and the
    age of its value when that is not fresh (drawn after it, as old)."""

    text: str
    tones: tuple[str, ...] = ()
    age: str = ""


@dataclass(frozen=True)
class FleetRow:
    """One service instance as the table shows it. ``cells`` follow :data:`COLUMNS`."""

    key: str
    severity: int
    cells: tuple[Cell, ...]
    #: The words under the table when this row is selected.
    detail: str
    #: The row's tone for the detail line (``live``, ``bad``, …; ``""`` before any answer).
    tone: str

    @property
    def verdict(self) -> str:
        return self.cells[1].text

    def matches(self, words: Sequence[str]) -> bool:
        """Whether every word is in the row's name or verdict (case-insensitive)."""
        text = f"{self.key} {self.verdict}".lower()
        return all(word in text for word in words)


def probe_failure(reports: Sequence[ServiceReport]) -> str | None:
    """Why the round trip failed, or None if the host answered.

    A report of a round trip that failed (the host could not be reached, or the
    agent did not run) is UNKNOWN and carries no log facts: the agent reports a
    log state for every service it saw, even a missing one.
    """
    if not reports or not all(
        r.assessment.verdict is Verdict.UNKNOWN and r.assessment.log is None for r in reports
    ):
        return None
    return reports[0].assessment.summary.removeprefix("cannot tell: ")


def failure_word(reason: str) -> str:
    """``probe failed`` when the host ran the probe but it failed; else ``unreachable``."""
    return "probe failed" if reason.startswith("the probe") else "unreachable"


def short_age(seconds: float) -> str:
    """``45s``, ``3m``, ``2h``, ``3d``: an age that fits beside a value."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f}{unit}"
    return f"{seconds:.0f}s"


def natural_key(text: str) -> tuple[object, ...]:
    """``dp-2`` before ``dp-10``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def sort_key(row: FleetRow) -> tuple[object, ...]:
    """Worst verdict first, then by name."""
    return (-row.severity, natural_key(row.key))


def _number(latest: Latest) -> str:
    """The value without its unit (the header says it): ``61.2``, ``3.41``, ``81%``."""
    return latest.text.removesuffix(f" {latest.unit.value}")


NONE = Cell("—", ("muted",))


def fleet_row(service: Service, state: HostState, now: float, *, interval: float) -> FleetRow:
    """The row for ``service`` from its host's state, at ``now``. Pure."""
    key = service.label
    report = state.reports.get(service.name)
    lag = now - state.answered_at if state.answered_at is not None else 0.0
    slow = state.asking_since is not None and now - state.asking_since > 2 * interval + 1
    old = state.failure is not None or slow
    cells = dict.fromkeys((column.key for column in COLUMNS), NONE)
    cells["service"] = Cell(key)
    cells["note"] = Cell("")
    notes: list[str] = []
    details: list[str] = []
    tone = ""
    severity = -1
    if report is not None:
        a = report.assessment
        severity = a.verdict.severity
        tone = TONES[a.verdict]
        cells.update(_report_cells(report, lag, old))
        details.append(f"{a.verdict.name.replace('_', '-')} — {printable(a.summary)}")
        for hint in report.hints:
            details.append(f"hint: {printable(hint.message)}")
            notes.append(f"hint: {printable(hint.message)}")

    if state.failure is not None:
        severity = Verdict.UNKNOWN.severity
        tone = TONES[Verdict.UNKNOWN]
        cells["verdict"] = Cell("UNKNOWN", (tone,))
        note = _failure_note(state, now)
        seen = f"; last answer {human_age(lag)} ago" if state.answered_at is not None else ""
        notes.insert(0, note)
        details.insert(0, f"UNKNOWN — {note}: {printable(state.failure)}{seen}")
    elif slow and state.asking_since is not None:
        waited = human_age(now - state.asking_since)
        notes.insert(0, f"no answer for {waited}")
        details.insert(0, f"no answer for {waited}; what follows is from before")
    elif report is None:
        cells["verdict"] = Cell("…", ("muted",))
        notes.append("asking…")
        details.append("asking the host…")

    if notes:
        bad = state.failure is not None or tone in ("bad", "unknown")
        cells["note"] = Cell(notes[0], ("bad",) if bad else ("muted",))
    detail = f"{key} · " + "\n".join(details)
    return FleetRow(key, severity, tuple(cells[c.key] for c in COLUMNS), detail, tone)


def _failure_note(state: HostState, now: float) -> str:
    """``unreachable — retrying in 8 s`` (or ``— asking again (3 s)`` while it asks)."""
    word = failure_word(state.failure or "")
    if state.asking_since is not None:
        return f"{word} — asking again ({human_age(now - state.asking_since)})"
    wait = max(0.0, (state.retry_at or now) - now)
    return f"{word} — retrying in {wait:.0f} s"


def _report_cells(report: ServiceReport, lag: float, old: bool) -> dict[str, Cell]:
    """The cells one report fills; ``lag`` seconds passed since it came."""
    a = report.assessment
    faded = ("old",) if old else ()

    def aged(text: str, latest: Latest, *, of_run: bool = True) -> Cell:
        """``of_run``: the value comes from the run's log lines (then it is old once the
        run is gone); GPU readings are the GPUs' own, whatever runs."""
        age = latest.age + lag
        shown = short_age(age) if age >= AGE_SHOWN_AFTER else ""
        faded = latest.stale or old or (of_run and a.run is None)
        return Cell(text, ("old",) if faded else (), shown)

    cells = {"verdict": Cell(a.verdict.name.replace("_", "-"), (TONES[a.verdict], *faded))}
    if a.run is not None:
        cells["pid"] = Cell(str(a.run.root.pid), faded)
        cells["up"] = Cell(human_age(a.checked_at - a.run.root.start_time + lag), faded)
    elif a.others:
        cells["pid"] = Cell(f"{len(a.others)} runs", faded)
    if a.log is not None and not a.log.exists:
        cells["log"] = Cell("no log", ("bad", *faded))
    elif a.log is not None and (a.log.last_ts or a.log.mtime) is not None:
        written = a.log.last_ts or a.log.mtime or 0.0
        cells["log"] = Cell(human_age(a.checked_at - written + lag), faded)
    metrics = report.metrics
    if metrics is None:
        return cells
    gen = metrics.latest_of(Metric.GEN_THROUGHPUT)
    if gen is not None:
        points = [p.value for p in metrics.series_of(Metric.GEN_THROUGHPUT)]
        cells["gen"] = aged(f"{sparkline(points, SPARK_WIDTH)} {_number(gen)}", gen)
    for column, metric in (("accept", Metric.ACCEPT_LEN), ("kv", Metric.TOKEN_USAGE)):
        latest = metrics.latest_of(metric)
        if latest is not None:
            cells[column] = aged(_number(latest), latest)
    running = metrics.latest_of(Metric.RUNNING)
    queued = metrics.latest_of(Metric.QUEUED)
    first = running or queued
    if first is not None:
        text = "/".join(_number(m) if m else "—" for m in (running, queued))
        cells["queue"] = aged(text, first)
    power = _gpu_power(metrics)
    if power is not None:
        text, latest = power
        cells["gpu"] = aged(text, latest, of_run=False)
    return cells


def _gpu_power(metrics: ServiceMetrics) -> tuple[str, Latest] | None:
    """``612/1000`` summed over the service's GPUs, and the oldest power reading; None
    without GPU readings."""
    labels = sorted({k.label for k in metrics.latest if k.metric is Metric.GPU_POWER})
    powers = [p for p in (metrics.latest_of(Metric.GPU_POWER, label) for label in labels) if p]
    if not powers:
        return None
    limits = [
        m for m in (metrics.latest_of(Metric.GPU_POWER_LIMIT, label) for label in labels) if m
    ]
    text = f"{sum(p.value for p in powers):.0f}"
    if limits:
        text += f"/{sum(m.value for m in limits):.0f}"
    oldest = max(powers, key=lambda p: p.age)
    return text, oldest


# --------------------------------------------------------------------------- the table


class FleetTable(ScrollView, can_focus=True):
    """The rows, drawn through the line API: a header line, then one line per row.

    Each row's line is drawn once and kept until its cells change, so a refresh
    costs the rows that changed, not the table. The cursor stays on the top (the
    worst) row until the user moves it; from then on it follows its row when
    rows move.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "fleet-table--header",
        "fleet-table--cursor",
        "fleet-table--live",
        "fleet-table--starting",
        "fleet-table--bad",
        "fleet-table--unknown",
        "fleet-table--old",
        "fleet-table--muted",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select",
            "open (k/r/R there)",
            id="fleet.open",
            tooltip="open the service's screen; kill (k), relaunch (r) and replace (R) are "
            "there, each offered only when safe",
        ),
        Binding("up", "move(-1)", "up", show=False),
        Binding("down", "move(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "move_to(0)", "first", show=False),
        Binding("end", "move_to(-1)", "last", show=False),
    ]

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
        for cell, width in zip(cells, self._widths, strict=True):
            style = base + self._style(cell.tones)
            text = cell.text
            age = f" {cell.age}" if cell.age else ""
            if cell_len(text) + cell_len(age) > width:
                age = ""
                if cell_len(text) > width:
                    text = set_cell_size(text, width - 1) + "…"
            segments.append(Segment(" ", base))
            segments.append(Segment(text, style))
            if age:
                segments.append(Segment(age, base + self._style(("old",))))
            pad = width - cell_len(text) - cell_len(age)
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


# --------------------------------------------------------------------------- the screen


class FleetScreen(Screen[None]):
    """Every service instance of ``targets``, one row each, worst first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "filter", key_display="/", id="fleet.filter"),
        Binding("escape", "clear_filter", "clear filter", id="fleet.clear_filter"),
        Binding("question_mark", "help", "help", key_display="?", id="fleet.help"),
    ]

    class ServiceChosen(Message):
        """The user asked to open ``service`` on ``host`` (Enter on its row)."""

        def __init__(self, host: Host, service: Service) -> None:
            super().__init__()
            self.host = host
            self.service = service

    def __init__(
        self,
        targets: Sequence[tuple[Host, Sequence[Service]]],
        report: FleetReport,
        *,
        clock: Callable[[], float] = time.time,
        interval: float = REFRESH_INTERVAL,
        timeout: float = ANSWER_TIMEOUT,
        title: str = "fleet",
    ) -> None:
        super().__init__()
        self.targets = [(host, list(services)) for host, services in targets if services]
        self.report = report
        self.clock = clock
        self.interval = interval
        self.timeout = timeout
        self.title_text = title
        self.hosts: dict[str, HostState] = {host.name: HostState() for host, _ in self.targets}
        self.rows: dict[str, FleetRow] = {}
        #: Lower-cased words every row shown must contain; empty shows all.
        self.filter_words: tuple[str, ...] = ()
        #: Round trips that ended so far (answered or failed), per host.
        self.answers: dict[str, int] = dict.fromkeys(self.hosts, 0)
        self._services = {s.label: (host, s) for host, services in self.targets for s in services}
        self._wake = asyncio.Event()

    @property
    def table(self) -> FleetTable:
        return self.query_one(FleetTable)

    def compose(self) -> ComposeResult:
        with Horizontal(id="fleet-header"):
            yield Static(Content(f"babysit · {self.title_text}"), id="fleet-title")
            yield Static(id="fleet-counts")
            yield Static(id="fleet-clock")
        width = max((len(label) for label in self._services), default=7)
        yield FleetTable(min(max(width, 7), 40), id="fleet-table")
        with Horizontal(id="fleet-filter"):
            yield Label(Content("/"), id="fleet-filter-prompt")
            yield Input(
                placeholder="show rows whose name or verdict has these words; Esc clears",
                compact=True,
                id="fleet-filter-input",
            )
        yield Static(id="fleet-detail")
        yield Footer()

    def on_mount(self) -> None:
        self._show_rows(self.hosts)
        self.table.focus()
        self.set_interval(1.0, self._tick)
        for host, services in self.targets:
            self._start_watching(host, services)

    def _start_watching(self, host: Host, services: Sequence[Service]) -> None:
        """One worker per host, so that a slow or dead host delays only its own rows."""
        self.run_worker(
            self._watch(host, services),
            name=f"fleet {host.name}",
            group=f"fleet:{host.name}",
            exclusive=True,
            exit_on_error=False,
        )

    # ------------------------------------------------------------------ refresh

    async def _watch(self, host: Host, services: Sequence[Service]) -> None:
        """Ask ``host`` about its services, show the answer, wait, again; never returns."""
        name = host.name
        while True:
            await self._until_shown()
            self.hosts[name] = self.hosts[name].asking(self.clock())
            failure: str | None
            try:
                reports = await asyncio.wait_for(self.report(host, services), self.timeout)
            except asyncio.TimeoutError:
                failure = f"no answer within {self.timeout:g} s"
            except Exception as error:  # said in the row and retried, never a dead watcher
                failure = failure_reason(error)
            else:
                failure = probe_failure(reports)
            now = self.clock()
            if failure is None:
                self.hosts[name] = self.hosts[name].answered(reports, now)
                delay = self.interval
            else:
                delay = retry_delay(self.hosts[name].failures + 1, self.interval)
                self.hosts[name] = self.hosts[name].failed(failure, now, delay)
            self.answers[name] += 1
            self._show_rows({name: self.hosts[name]})
            await self._sleep(delay)

    def _covered(self) -> bool:
        """Whether another full screen (a service's host screen) is over this one."""
        for screen in reversed(self.app.screen_stack):
            if not isinstance(screen, ModalScreen):
                return screen is not self
        return True

    async def _until_shown(self) -> None:
        while self._covered():
            await self._wake.wait()

    async def _sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less if the fleet comes back into view."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    def on_screen_resume(self) -> None:
        """Back from a host screen: every host is asked again now."""
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    def _tick(self) -> None:
        """Once a second: the ages, the countdowns and the clock move on."""
        self._show_rows(self.hosts)

    def _show_rows(self, hosts: Mapping[str, HostState]) -> None:
        now = self.clock()
        for host, services in self.targets:
            state = hosts.get(host.name)
            if state is None:
                continue
            for service in services:
                self.rows[service.label] = fleet_row(service, state, now, interval=self.interval)
        rows = sorted(
            (row for row in self.rows.values() if row.matches(self.filter_words)), key=sort_key
        )
        self.table.show(rows)
        self._show_detail()
        self._show_header(now)

    def _show_header(self, now: float) -> None:
        counts: dict[str, int] = {}
        for row in self.rows.values():
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
        order = [v.name.replace("_", "-") for v in sorted(Verdict, key=lambda v: -v.severity)]
        said = [f"{counts[v]} {v.lower()}" for v in order if counts.get(v)]
        hosts = len(self.targets)
        where = f"{hosts} host{'s' if hosts != 1 else ''} · {len(self.rows)} services"
        if self.filter_words:
            where += f" · {self.table.row_count} shown for '{' '.join(self.filter_words)}'"
        self.query_one("#fleet-counts", Static).update(
            Content(f"· {where} · {', '.join(said) or 'asking…'}")
        )
        clock = time.strftime("%H:%M:%S", time.localtime(now))
        self.query_one("#fleet-clock", Static).update(Content(clock))

    def _show_detail(self) -> None:
        detail = self.query_one("#fleet-detail", Static)
        key = self.table.selected
        row = self.rows.get(key) if key is not None else None
        if row is None:
            text = "no service matches the filter" if self.filter_words else ""
            detail.update(Content(text))
            detail.set_classes("")
            return
        detail.update(Content(row.detail))
        detail.set_classes(f"-{row.tone}" if row.tone else "")

    @on(FleetTable.Highlighted)
    def _highlighted(self) -> None:
        self._show_detail()

    # ------------------------------------------------------------------ errors

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a host's watcher that broke is handled: said, then restarted."""
        worker = event.worker
        if not worker.group.startswith("fleet:") or event.state is not WorkerState.ERROR:
            return
        name = worker.group.removeprefix("fleet:")
        error = worker.error
        reason = failure_reason(error) if error is not None else "the probe stopped"
        delay = retry_delay(self.hosts[name].failures + 1, self.interval)
        self.hosts[name] = self.hosts[name].failed(reason, self.clock(), delay)
        self._show_rows({name: self.hosts[name]})
        host, services = next((h, s) for h, s in self.targets if h.name == name)
        self.set_timer(delay, lambda: self._start_watching(host, services))

    # ------------------------------------------------------------------ keys

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.filter_words) or self.query_one("#fleet-filter").has_class("-open")
        return True

    def action_open(self) -> None:
        key = self.table.selected
        if key is not None and key in self._services:
            host, service = self._services[key]
            self.post_message(self.ServiceChosen(host, service))

    @on(FleetTable.Selected)
    def _selected(self, event: FleetTable.Selected) -> None:
        event.stop()
        self.action_open()

    def action_help(self) -> None:
        note = (
            "kill (k), relaunch (r) and replace (R) live on each service's screen: Enter "
            "opens it, Esc comes back. There they ask first and are offered only when safe."
        )
        self.app.push_screen(HelpScreen("keys · fleet", keys_of(self), note))

    # ------------------------------------------------------------------ filter

    def action_filter(self) -> None:
        bar = self.query_one("#fleet-filter")
        bar.add_class("-open")
        field = self.query_one("#fleet-filter-input", Input)
        field.value = " ".join(self.filter_words)
        field.focus()
        self.refresh_bindings()

    def action_clear_filter(self) -> None:
        self.query_one("#fleet-filter").remove_class("-open")
        self.query_one("#fleet-filter-input", Input).value = ""
        self._set_filter("")
        self.table.focus()
        self.refresh_bindings()

    @on(Input.Changed, "#fleet-filter-input")
    def _filter_changed(self, event: Input.Changed) -> None:
        self._set_filter(event.value)

    @on(Input.Submitted, "#fleet-filter-input")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self._set_filter(event.value)
        if not self.filter_words:
            self.query_one("#fleet-filter").remove_class("-open")
        self.table.focus()
        self.refresh_bindings()

    def _set_filter(self, text: str) -> None:
        words = tuple(text.lower().split())
        if words != self.filter_words:
            self.filter_words = words
            self._show_rows({})
            self.refresh_bindings()
