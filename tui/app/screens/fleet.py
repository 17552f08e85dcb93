"""The fleet screen: every service instance of the chosen hosts, one row each, worst first.

It is a view of the sessions (:mod:`tui.session`): each host's probe loop asks
for all of the fleet's services on it in one round trip and re-arms
``interval`` seconds after the answer came; the screen draws each host's state
when it changes. A host that does not answer delays only its own rows: they turn
UNKNOWN with the reason and the time of the next try, which backs off. While a
service's host screen covers the fleet, its hosts are asked only for what that
screen shows, and for everything again as soon as the fleet is back.

The rows are computed by :func:`tui.app.fleet_rows.fleet_row`, a pure function of
what the host last said, when, and the time now; the table
(:class:`tui.app.widgets.fleet_table.FleetTable`) redraws only the rows whose
cells changed.

``Enter`` opens the row's host screen (the app pushes it; ``Esc`` comes back),
where ``K``, ``r`` and ``R`` act on that service with their own guards. ``/``
filters the rows by name or verdict; ``s`` sorts them worst first, by service name,
or by host (the header says which); ``j``/``k`` move as in less and htop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Label, Static

from tui.app.fleet_rows import Fleet, FleetRow, fleet_row, natural_key, sort_key
from tui.app.screens.help import HelpScreen, keys_of, say_why_not
from tui.app.widgets.fleet_table import FleetTable
from tui.app.widgets.keys_footer import KeysFooter
from tui.config import Host, Service
from tui.core.verdicts import Verdict
from tui.session.sessions import Sessions
from tui.session.state import HostState
from tui.session.watch import HostWatch


def by_name(row: FleetRow) -> tuple[object, ...]:
    """By the service's name (``qwen`` on every host together), then its host."""
    host, _, service = row.key.partition("/")
    return (natural_key(service), natural_key(host))


def by_host(row: FleetRow) -> tuple[object, ...]:
    """By host, then the service's name: the fleet as hosts.yaml lists it."""
    return natural_key(row.key)


#: The fleet's orders, as the header names them; ``s`` steps through them.
SORTS: tuple[tuple[str, Callable[[FleetRow], tuple[object, ...]]], ...] = (
    ("worst first", sort_key),
    ("by name", by_name),
    ("by host", by_host),
)


class FleetScreen(Screen[None]):
    """Every service instance of ``targets``, one row each, worst first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "filter", key_display="/", id="fleet.filter"),
        Binding("escape", "clear_filter", "clear filter", id="fleet.clear_filter"),
        Binding(
            "s",
            "sort",
            "sort",
            id="fleet.sort",
            tooltip="sort: worst first, by service name, or by host (the header says which)",
        ),
        Binding("question_mark", "help", "help", key_display="?", id="fleet.help"),
    ]

    #: The heading of these keys in ``?``.
    HELP_SECTION = "the fleet"

    class ServiceChosen(Message):
        """The user asked to open ``service`` on ``host`` (Enter on its row)."""

        def __init__(self, host: Host, service: Service) -> None:
            super().__init__()
            self.host = host
            self.service = service

    def __init__(
        self, fleet: Fleet, sessions: Sessions, *, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__()
        self.targets = [(host, list(services)) for host, services in fleet.targets]
        self.sessions = sessions
        self.clock = clock
        self.interval = sessions.interval
        self.title_text = fleet.title
        self.watches = {host.name: sessions.watch(host) for host, _ in self.targets}
        self.hosts: dict[str, HostState] = {name: w.state for name, w in self.watches.items()}
        self.rows: dict[str, FleetRow] = {}
        #: How the rows are ordered: one of :data:`SORTS`' names.
        self.sort = SORTS[0][0]
        #: Lower-cased words every row shown must contain; empty shows all.
        self.filter_words: tuple[str, ...] = ()
        self._services = {s.label: (host, s) for host, services in self.targets for s in services}
        self._unlisten: list[Callable[[], None]] = []

    @property
    def answers(self) -> dict[str, int]:
        """Round trips that ended so far (answered or failed), per host."""
        return {name: watch.answers for name, watch in self.watches.items()}

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
        yield KeysFooter()

    def on_mount(self) -> None:
        self._show_rows(self.hosts)
        self.table.focus()
        self.set_interval(1.0, self._tick)
        for watch in self.watches.values():
            self._unlisten.append(watch.listen(self._answered))
        self._watch_all()

    def _watch_all(self) -> None:
        """Each host's loop asks for this fleet's services (a slow or dead host delays
        only its own rows)."""
        for host, services in self.targets:
            watch = self.watches[host.name]
            watch.want(self, [s.name for s in services])
            watch.start()

    def _answered(self, watch: HostWatch) -> None:
        """A host's state changed: its rows are drawn again when it answered or failed
        (a round trip on its way shows at the next second's tick, if it is slow)."""
        name = watch.host.name
        state = self.hosts[name] = watch.state
        if self.is_mounted and state.asking_since is None:
            self._show_rows({name: state})

    def _covered(self) -> bool:
        """Whether another full screen (a service's host screen) is over this one."""
        for screen in reversed(self.app.screen_stack):
            if not isinstance(screen, ModalScreen):
                return screen is not self
        return True

    def on_screen_suspend(self) -> None:
        """Under a host screen the hosts are asked only for what that screen shows."""
        self.call_after_refresh(self._drop_if_covered)

    def _drop_if_covered(self) -> None:
        if self._covered():
            for watch in self.watches.values():
                watch.drop(self)

    def on_screen_resume(self) -> None:
        """Back from a host screen: every host is asked again now."""
        self._watch_all()

    def on_unmount(self) -> None:
        for unlisten in self._unlisten:
            unlisten()
        for watch in self.watches.values():
            watch.drop(self)

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
        order = dict(SORTS)[self.sort]
        rows = sorted(
            (row for row in self.rows.values() if row.matches(self.filter_words)), key=order
        )
        self.table.show(rows)
        self._show_detail()
        self._show_header(now)

    def _show_header(self, now: float) -> None:
        counts: dict[str, int] = {}
        for row in self.rows.values():
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
        order = [v.word for v in sorted(Verdict, key=lambda v: -v.severity)]
        said = [f"{counts[v]} {v.lower()}" for v in order if counts.get(v)]
        hosts = len(self.targets)
        where = f"{hosts} host{'s' if hosts != 1 else ''} · {len(self.rows)} services"
        where += f" · sorted {self.sort}"
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

    # ------------------------------------------------------------------ keys

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.filter_words) or self.query_one("#fleet-filter").has_class("-open")
        return True

    def on_key(self, event: events.Key) -> None:
        say_why_not(self, event.key)

    def action_sort(self) -> None:
        """The next order of :data:`SORTS`; the cursor stays on its row."""
        names = [name for name, _ in SORTS]
        self.sort = names[(names.index(self.sort) + 1) % len(names)]
        self.table.held = True
        self._show_rows({})
        self.notify(f"sorted {self.sort}", timeout=2)

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
            "kill (K), relaunch (r) and replace (R) live on each service's screen: Enter "
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
