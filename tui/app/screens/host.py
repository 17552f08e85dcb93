"""The host screen: one service on one host — header, (later) banner, launch and
metrics panes, the log pane, and the keys.

The log is followed by an async worker that applies each batch of rows once.
Every way the follower can end (an error, or simply stopping) is handled in one
place, :meth:`HostScreen.on_worker_state_changed`, and told on screen in plain
words; nothing the follower does can crash the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import ClassVar, Protocol

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerError, WorkerState

from tui.app.widgets.host_header import HostHeader
from tui.app.widgets.log_view import LogView
from tui.app.widgets.run_banner import RunBanner
from tui.app.widgets.search_bar import SearchBar
from tui.config import Host, Service
from tui.core.follow import FileInfo
from tui.core.logcursor import EventKind, EventRow, LogEvent, Row
from tui.core.runs import Assessment
from tui.core.sanitize import printable
from tui.errors import BabysitError
from tui.remote.transport import Transport

#: Seconds to wait, when the screen closes, for the follower to end its agent.
FOLLOWER_STOP_TIMEOUT = 3.0
#: Seconds between two probes of which run this is (a probe re-arms only once done).
PROBE_INTERVAL = 2.0

Probe = Callable[[], Awaitable[Assessment]]
WriterFollower = Callable[[int], "RowSource"]


class RowSource(Protocol):
    """What the screen needs from a follower (:class:`tui.remote.follow.Follower`)."""

    @property
    def file(self) -> FileInfo | None: ...

    def rows(self) -> AsyncIterator[list[Row]]: ...


class HostScreen(Screen[None]):
    """One service on one host. Panes stack in ``#panes``; the log pane takes the rest."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "open_search", "search", key_display="/", id="host.search"),
        Binding("w", "follow_writer", "follow writer", id="host.follow_writer"),
    ]

    def __init__(
        self,
        host: Host,
        service: Service,
        transport: Transport,
        follower: RowSource,
        *,
        clock: Callable[[], float] = time.time,
        probe: Probe | None = None,
        writer_follower: WriterFollower | None = None,
        probe_interval: float = PROBE_INTERVAL,
    ) -> None:
        super().__init__()
        self.host = host
        self.service = service
        self.transport = transport
        self.follower = follower
        self.clock = clock
        self.probe = probe
        self.writer_follower = writer_follower
        self.probe_interval = probe_interval
        self.assessment: Assessment | None = None
        self._follower_worker: Worker[None] | None = None

    @property
    def where(self) -> str:
        """``kpro5 (ssh root@10.0.0.15) · qwen``."""
        return f"{self.host.name} ({self.host.chain_text()}) · {self.service.name}"

    @property
    def log_view(self) -> LogView:
        return self.query_one(LogView)

    def compose(self) -> ComposeResult:
        yield HostHeader(self.where, self.transport.status_text, self.clock, id="header")
        with Vertical(id="panes"):
            yield RunBanner(self.clock, id="banner")
            # Later: LaunchPane beside MetricsPane, height: auto.
            yield Static(id="problem")
            yield LogView(self.service.log, id="log")
            yield SearchBar(id="search")
        yield Footer()

    def on_mount(self) -> None:
        self.log_view.focus()
        self._start_following()
        if self.probe is None:
            self.query_one(RunBanner).display = False
        else:
            self.run_worker(
                self._watch_run(),
                name=f"probe {self.service.label}",
                group=f"probe:{self.host.name}",
                exclusive=True,
                exit_on_error=False,
            )

    def _start_following(self) -> None:
        self._follower_worker = self.run_worker(
            self._follow(),
            name=f"follow {self.service.label}",
            group=f"follow:{self.host.name}",
            exclusive=True,
            exit_on_error=False,
        )

    async def _watch_run(self) -> None:
        """Probe which run this is, show it, and note every change of verdict in the log."""
        probe = self.probe
        while probe is not None:
            assessment = await probe()
            self.show_assessment(assessment)
            await asyncio.sleep(self.probe_interval)

    def show_assessment(self, assessment: Assessment) -> None:
        previous, self.assessment = self.assessment, assessment
        shown = self.follower.file.inode if self.follower.file else None
        self.query_one(RunBanner).show(assessment, shown)
        if previous is not None and previous.verdict is not assessment.verdict:
            old, new = previous.verdict.name, assessment.verdict.name
            self.log_view.add_rows(
                [
                    EventRow(
                        LogEvent(
                            EventKind.VERDICT, f"{old} → {new}: {assessment.summary}", self.clock()
                        )
                    )
                ]
            )
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "follow_writer":
            a = self.assessment
            if self.writer_follower is None or a is None or a.writer_file is None:
                return False
            shown = self.follower.file.inode if self.follower.file else None
            return True if shown != a.writer_file.inode else None
        return True

    async def action_follow_writer(self) -> None:
        """Follow the file the run actually writes (deleted or renamed), through its fd."""
        a = self.assessment
        if self.writer_follower is None or a is None or a.writer_pid is None:
            return
        worker = self._follower_worker
        if worker is not None and not worker.is_finished:
            worker.cancel()
            with contextlib.suppress(WorkerError, asyncio.TimeoutError):
                await asyncio.wait_for(worker.wait(), FOLLOWER_STOP_TIMEOUT)
        self.follower = self.writer_follower(a.writer_pid)
        self._start_following()
        self.query_one(RunBanner).show(a, None)
        self.refresh_bindings()

    async def on_unmount(self) -> None:
        """Stop following and let the follower end its agent before the loop goes."""
        worker = self._follower_worker
        if worker is None or worker.is_finished:
            return
        worker.cancel()
        with contextlib.suppress(WorkerError, asyncio.TimeoutError):
            await asyncio.wait_for(worker.wait(), FOLLOWER_STOP_TIMEOUT)

    async def _follow(self) -> None:
        """Apply each batch of rows to the log pane, once, in order."""
        log = self.log_view
        async for batch in self.follower.rows():
            log.add_rows(batch)
            log.set_file(self.follower.file)
            # A fast log must not starve input and drawing: let the loop breathe.
            await asyncio.sleep(0)

    # ------------------------------------------------------------------ errors

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place where the follower's end is handled."""
        worker = event.worker
        if worker.group != f"follow:{self.host.name}":
            return
        if event.state is WorkerState.ERROR:
            error = worker.error
            if isinstance(error, BabysitError):
                self.show_problem(error.title, error.message)
            else:
                self.show_problem("follower crashed", f"{type(error).__name__}: {error}")
        elif event.state is WorkerState.SUCCESS:
            self.log_view.add_rows([self._event("the follower stopped")])
            self.log_view.stop("the follower stopped")

    def _event(self, message: str) -> EventRow:
        return EventRow(LogEvent(EventKind.ERROR, message, self.clock()))

    def show_problem(self, title: str, message: str) -> None:
        """Say in plain words why the log cannot be followed."""
        text = f"Cannot follow {self.service.log} on {self.host.name}: {message}"
        problem = self.query_one("#problem", Static)
        problem.update(Content(printable(text)))
        problem.border_title = Content(printable(title))
        problem.add_class("-shown")
        self.log_view.add_rows([self._event(f"{title}: {message}")])
        self.log_view.stop(title)

    # ------------------------------------------------------------------ search

    def action_open_search(self) -> None:
        self.query_one(SearchBar).open(self.log_view.search_term)

    @on(SearchBar.Submitted)
    def _search(self, event: SearchBar.Submitted) -> None:
        log = self.log_view
        log.focus()
        log.start_search(event.term)

    @on(SearchBar.Closed)
    def _search_closed(self) -> None:
        self.log_view.focus()
