"""The host screen: one service on one host, a view of its service session.

Header, the "which run is this?" banner, the launch and metrics panes, the hints,
the log pane and the keys. Every fact on it is the session's report (the same one
the fleet row and ``babysit status --json`` show); the screen only adds the lines
its follower reads (which the session turns into metrics too) and draws.

The log is followed by an async worker that applies each batch of rows once.
Every way the follower can end (an error, or simply stopping) is handled in one
place, :meth:`HostScreen.on_worker_state_changed`, and told on screen in plain
words; nothing the follower does can crash the app. A failing probe is handled by
the host's probe loop (:mod:`tui.session.watch`): the banner turns UNKNOWN with
the reason. ``K``, ``r`` and ``R`` are in :mod:`tui.app.screens.host_actions`, ``c``
in :mod:`tui.app.screens.host_canary`, ``d`` in :mod:`tui.app.screens.host_dump`,
``l`` and ``m`` (the panes that fold) in :mod:`tui.app.screens.host_panes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerError, WorkerState

from tui.app.screens.help import HelpScreen, keys_of, say_why_not
from tui.app.screens.host_actions import HOST_ACTIONS, HostActions
from tui.app.screens.host_canary import HostCanary
from tui.app.screens.host_dump import HostDump
from tui.app.screens.host_panes import HostPanes
from tui.app.widgets.action_progress import ActionProgress
from tui.app.widgets.host_header import HostHeader
from tui.app.widgets.keys_footer import KeysFooter
from tui.app.widgets.launch_pane import LaunchPane
from tui.app.widgets.log_view import LogView
from tui.app.widgets.metrics_pane import CanaryLine, HintsLine, MetricsPane
from tui.app.widgets.run_banner import RunBanner
from tui.app.widgets.search_bar import SearchBar
from tui.core.gpu import Attribution
from tui.core.logcursor import EventKind, EventRow, LogCursor, LogEvent
from tui.core.report import ServiceReport
from tui.core.runs import Assessment
from tui.core.sanitize import printable
from tui.core.verdict_words import why
from tui.errors import BabysitError
from tui.ops.hostops import HostOps
from tui.session.retry import retry_delay
from tui.session.service import ServiceSession
from tui.session.sessions import RowSource, Sessions
from tui.session.watch import HostWatch

#: Seconds to wait, when the screen closes, for the follower to end its agent.
FOLLOWER_STOP_TIMEOUT = 3.0


#: Seconds between two redraws of the metrics pane while lines keep coming.
METRICS_REDRAW = 1.0


class HostScreen(HostActions, HostCanary, HostDump, HostPanes, Screen[None]):
    """One service on one host. Panes stack in ``#panes``; the log pane takes the rest."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "open_search", "search", key_display="/", id="host.search"),
        Binding(
            "w",
            "follow_writer",
            "follow writer",
            id="host.follow_writer",
            tooltip="follow writer: the file the run writes (deleted or renamed)",
        ),
        Binding(
            "K",
            "kill",
            "kill",
            id="host.kill",
            tooltip="kill: stop the verified run, or the orphans on its GPUs, after asking",
        ),
        Binding(
            "r",
            "relaunch",
            "relaunch",
            id="host.relaunch",
            tooltip="relaunch: start the service from its launch: when no run is there, "
            "after asking",
        ),
        Binding(
            "R",
            "replace",
            "replace",
            id="host.replace",
            tooltip="replace: kill the run, then relaunch, after asking",
        ),
        Binding(
            "c",
            "canary",
            "canary",
            id="host.canary",
            tooltip="canary: send the run one small completion and show what came back",
            # In ? and the palette: the footer has no room left at 80 columns.
            show=False,
        ),
        Binding(
            "d",
            "dump",
            "dump",
            id="host.dump",
            tooltip="dump: write each process's stacks, nvidia-smi and the last log lines",
            show=False,
        ),
        Binding("question_mark", "help", "help", key_display="?", id="host.help"),
        Binding(
            "tab",
            "app.switch_service(1)",
            "next service",
            id="host.next_service",
            tooltip="next service: another service of this host",
        ),
        Binding(
            "shift+tab",
            "app.switch_service(-1)",
            "previous service",
            show=False,
            id="host.previous_service",
        ),
        # The panes that fold (see HostPanes.fold_panes); their summary lines name the keys.
        Binding(
            "l",
            "toggle_pane('launch')",
            "launch",
            id="host.launch",
            tooltip="launch: open or fold the launch flags pane",
            show=False,
        ),
        Binding(
            "m",
            "toggle_pane('metrics')",
            "metrics",
            id="host.metrics",
            tooltip="metrics: open or fold the metrics pane and the hints",
            show=False,
        ),
    ]

    #: The heading of these keys in ``?``.
    HELP_SECTION = "this service"

    def __init__(
        self,
        session: ServiceSession,
        sessions: Sessions,
        *,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
    ) -> None:
        super().__init__()
        self.session = session
        self.sessions = sessions
        self.host = session.host
        self.service = session.service
        self.transport = sessions.transport(session.host)
        self.follower: RowSource = sessions.follower(session)
        self.clock = clock
        self.probe_interval = sessions.interval
        #: Kill and relaunch on this host.
        self.ops: HostOps | None = session.ops
        #: No action that changes the host is offered or run.
        self.read_only = read_only
        self.assessment: Assessment | None = None
        self._follower_worker: Worker[None] | None = None
        #: Follower crashes in a row (for the backoff before following again).
        self._follow_failures = 0
        self._action_worker: Worker[None] | None = None
        self._unlisten: Callable[[], None] | None = None
        # What the footer last showed as allowed (see _sync_bindings).
        self._shown_bindings: tuple[bool | None, ...] | None = None
        self._metrics_drawn = 0.0
        self._metrics_pending = False
        self._opened: dict[str, bool] = {}  # see HostPanes

    @property
    def where(self) -> str:
        """``kpro5 (ssh root@10.0.0.15) · qwen``."""
        return f"{self.host.name} ({self.host.chain_text()}) · {self.service.name}"

    @property
    def log_view(self) -> LogView:
        return self.query_one(LogView)

    @property
    def progress(self) -> ActionProgress:
        return self.query_one(ActionProgress)

    def compose(self) -> ComposeResult:
        where = f"{self.where} · read-only" if self.read_only else self.where
        yield HostHeader(where, self.transport.status_text, self.clock, id="header")
        with Vertical(id="panes"):
            yield RunBanner(self.clock, id="banner")
            yield ActionProgress(self.clock, id="progress")
            with Horizontal(id="top"):
                yield LaunchPane(id="launch")
                yield MetricsPane(id="metrics")
            yield HintsLine(id="hints")
            yield CanaryLine(id="canary")
            yield Static(id="problem")
            yield LogView(self.service.log_text, clock=self.clock, id="log")
            yield SearchBar(id="search")
        yield KeysFooter()

    def on_resize(self, event: events.Resize) -> None:
        self.fold_panes()

    def on_mount(self) -> None:
        self.log_view.focus()
        self._start_following()
        watch = self.session.watch
        if watch is not None:
            self._unlisten = watch.listen(self._watched)
            state = watch.state
            recent = state.answered_at is not None and (
                self.clock() - state.answered_at <= 2 * self.probe_interval
            )
            if state.failure is not None or (recent and self.service.name in state.reports):
                # what the fleet saw a moment ago (an older answer waits for a new one)
                self.show_report(self.session.report(self.clock()))
            watch.want(self, [self.service.name])
            watch.start()

    def _start_following(self) -> None:
        self._follower_worker = self.run_worker(
            self._follow(),
            name=f"follow {self.service.label}",
            group=f"follow:{self.host.name}",
            exclusive=True,
            exit_on_error=False,
        )

    def _watched(self, watch: HostWatch) -> None:
        """The host's probe loop answered or failed: show what the session says now.

        A failure (whatever the probe raised) turns the banner UNKNOWN with the
        reason and when babysit asks again; the loop itself retries (see
        :mod:`tui.session.watch`), so an old verdict never stays up."""
        state = watch.state
        if not self.is_mounted:
            return
        if state.asking_since is not None:
            return  # on its way: the answer is shown when it comes
        if state.failure is None and self.service.name not in state.reports:
            return  # a round trip for other services
        self.show_report(self.session.report(self.clock()))

    def show_report(self, report: ServiceReport) -> None:
        """The session's report: the verdict, the launch diff, the metrics, the hints."""
        offers_kill = self.ops is not None and not self.read_only
        self.query_one(RunBanner).show_report(report, offers_kill=offers_kill)
        self.show_assessment(report.assessment)
        launch_note = None if report.assessment.run else "no run to compare with"
        self.query_one(LaunchPane).show(report.launch, launch_note)
        self.fold_panes()  # a flag missing opens the launch pane on a narrow terminal
        self._show_metrics(report)

    def show_metrics(self) -> None:
        self._show_metrics(self.session.report(self.clock()))

    def _show_metrics(self, report: ServiceReport) -> None:
        gpus = report.gpus
        # Say why GPU use is not tied to this run (no nvidia-smi, host PIDs in a
        # container, …) instead of showing nothing.
        note = (
            gpus.note
            if gpus and (gpus.problem or gpus.attribution is not Attribution.TIED)
            else None
        )
        if report.metrics is not None:
            self.query_one(MetricsPane).show(report.metrics, note)
        self.query_one(HintsLine).show(list(report.hints))
        self.query_one(CanaryLine).show(report.canary, report.assessment.utc_offset, self.clock())

    def _metrics_changed(self) -> None:
        """Redraw the metrics now, or within half a second when a busy log keeps adding."""
        if self.assessment is None:
            return  # the first probe draws them
        now = time.monotonic()
        if now - self._metrics_drawn >= METRICS_REDRAW:
            self._metrics_drawn = now
            self.show_metrics()
        elif not self._metrics_pending:
            self._metrics_pending = True
            self.set_timer(METRICS_REDRAW, self._redraw_metrics)

    def _redraw_metrics(self) -> None:
        self._metrics_pending = False
        self._metrics_drawn = time.monotonic()
        self.show_metrics()

    def show_assessment(self, assessment: Assessment) -> None:
        previous, self.assessment = self.assessment, assessment
        shown = self.follower.file.inode if self.follower.file else None
        self.query_one(RunBanner).show(assessment, shown)
        if previous is not None and previous.verdict is not assessment.verdict:
            old, new = previous.verdict.word, assessment.verdict.word
            cause = assessment.cause
            said = f"{why(cause)}; {assessment.summary}" if cause else assessment.summary
            self.log_view.add_rows(
                [EventRow(LogEvent(EventKind.VERDICT, f"{old} → {new}: {said}", self.clock()))]
            )
        self._sync_bindings()

    def _sync_bindings(self) -> None:
        """Redraw the footer's keys only when what they allow has changed: a redraw
        rebuilds the whole footer, and a probe answers every few seconds."""
        allowed = tuple(self.check_action(a, ()) for a in ("follow_writer", "dump", *HOST_ACTIONS))
        if allowed != self._shown_bindings:
            self._shown_bindings = allowed
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "follow_writer":
            a = self.assessment
            if a is None or a.writer_file is None:
                return False
            shown = self.follower.file.inode if self.follower.file else None
            return True if shown != a.writer_file.inode else None
        if action == "dump":
            return True if self.can_dump() else None
        if action in HOST_ACTIONS:
            if self.read_only or self.ops is None:
                return False
            return True if self.can(action) else None
        return True

    def why_not(self, action: str) -> str | None:
        """Why the greyed-out ``action`` does nothing now (said when its key is pressed)."""
        if action == "follow_writer":
            a = self.assessment
            if a is None or a.writer_file is None:
                return "no writer file: the run writes the file the pane follows, or none"
            return "the pane follows the file the run writes already"
        if action in HOST_ACTIONS:
            return self.why_not_act(action)
        return None

    def on_key(self, event: events.Key) -> None:
        say_why_not(self, event.key)

    async def action_follow_writer(self) -> None:
        """Follow the file the run actually writes (deleted or renamed), through its fd."""
        a = self.assessment
        if a is None or a.writer_pid is None:
            return
        await self._stop_following()
        self.follower = self.sessions.follower(self.session, pid=a.writer_pid)
        self._start_following()
        self.query_one(RunBanner).show(a, None)
        self.refresh_bindings()

    async def _stop_following(self) -> None:
        worker = self._follower_worker
        if worker is not None and not worker.is_finished:
            worker.cancel()
            with contextlib.suppress(WorkerError, asyncio.TimeoutError):
                await asyncio.wait_for(worker.wait(), FOLLOWER_STOP_TIMEOUT)

    async def follow_from(self, cursor: LogCursor) -> None:
        """Follow the log from ``cursor`` (a new run's anchor), each line shown once.

        A follower that runs on the cursor's file already (it followed the path to
        the new file, which it reads from its start; or the log was appended to, and
        it was opened before the launch) shows the new run's lines: it stays, as a
        second one would show them again. Else a new follower starts at the cursor,
        or past it where the pane shows that file further.
        """
        worker, file = self._follower_worker, self.follower.file
        if (
            worker is not None
            and not worker.is_finished
            and file is not None
            and (file.dev, file.inode) == (cursor.dev, cursor.inode)
        ):
            return
        await self._stop_following()
        shown = self.log_view.shown_until(cursor.dev, cursor.inode)
        if shown is not None and shown > cursor.offset:
            cursor = LogCursor(cursor.dev, cursor.inode, shown)
        self.follower = self.sessions.follower(self.session, cursor=cursor)
        self.query_one("#problem", Static).remove_class("-shown")
        self.log_view.resume()
        self._start_following()
        self.refresh_bindings()

    async def on_unmount(self) -> None:
        """Stop watching, stop following, and let the follower end its agent."""
        if self.session.watch is not None:
            self.session.watch.drop(self)
        if self._unlisten is not None:
            self._unlisten()
        await self._stop_following()

    async def _follow(self) -> None:
        """Apply each batch of rows to the log pane, once, in order."""
        log = self.log_view
        self.session.followers += 1
        try:
            async for batch in self.follower.rows():
                self._follow_failures = 0
                log.add_rows(batch)
                log.set_file(self.follower.file)
                if self.session.feed_rows(batch):
                    self._metrics_changed()
                # A fast log must not starve input and drawing: let the loop breathe.
                await asyncio.sleep(0)
        finally:
            self.session.followers -= 1

    # ------------------------------------------------------------------ errors

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place where the follower's end, and an action's failure, are handled."""
        worker = event.worker
        if worker.group == f"action:{self.host.name}":
            if event.state is WorkerState.ERROR:
                self.action_failed(worker.name, worker.error)
            if worker.is_finished:
                self.refresh_bindings()
            return
        if worker.group != f"follow:{self.host.name}":
            return
        if event.state is WorkerState.ERROR:
            error = worker.error
            if isinstance(error, BabysitError):
                self.show_problem(error.title, error.message)
            else:  # a bug: said, and followed again after a backoff, from the last line shown
                self._follow_failures += 1
                delay = retry_delay(self._follow_failures, self.probe_interval)
                said = f"{type(error).__name__}: {error}; following again in {delay:g} s"
                self.show_problem("follower crashed", said)
                self.set_timer(delay, self._follow_again)
        elif event.state is WorkerState.SUCCESS:
            self.log_view.add_rows([self._event("the follower stopped")])
            self.log_view.stop("the follower stopped")

    async def _follow_again(self) -> None:
        """A new follower after a crash, from the end of the last line shown."""
        file = self.follower.file
        shown = self.log_view.shown_until(file.dev, file.inode) if file is not None else None
        if file is not None and shown is not None:
            cursor = LogCursor(file.dev, file.inode, shown)
            self.follower = self.sessions.follower(self.session, cursor=cursor)
        else:
            self.follower = self.sessions.follower(self.session)
        self.query_one("#problem", Static).remove_class("-shown")
        self.log_view.resume()
        self._start_following()

    def _event(self, message: str) -> EventRow:
        return EventRow(LogEvent(EventKind.ERROR, message, self.clock()))

    def show_problem(self, title: str, message: str) -> None:
        """Say in plain words why the log cannot be followed."""
        text = f"Cannot follow {self.service.log_text} on {self.host.name}: {message}"
        problem = self.query_one("#problem", Static)
        problem.update(Content(printable(text)))
        problem.border_title = Content(printable(title))
        problem.add_class("-shown")
        self.log_view.add_rows([self._event(f"{title}: {message}")])
        self.log_view.stop(title)

    def action_help(self) -> None:
        note = "read-only: kill, relaunch and replace are not offered" if self.read_only else None
        self.app.push_screen(HelpScreen(f"keys · {self.where}", keys_of(self), note))

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
