"""The host screen: one service on one host — header, banner, (later) launch and
metrics panes, the log pane, and the keys.

The log is followed by an async worker that applies each batch of rows once.
Every way the follower can end (an error, or simply stopping) is handled in one
place, :meth:`HostScreen.on_worker_state_changed`, and told on screen in plain
words; nothing the follower does can crash the app.

``k`` kill, ``r`` relaunch and ``R`` replace run in a worker of their own group
(``action:<host>``), one at a time, in the order of ``babysit kill`` and
``babysit relaunch``: a confirmation that shows exactly what will happen, then
the :mod:`tui.ops` functions, each step on the progress line under the banner,
each action and outcome in the audit log. They are offered only when the latest
assessment has a verified run to act on (or, for relaunch, verifiably none), and
never with ``read_only``. Their failures too are told in the one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import ClassVar, Protocol

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerError, WorkerState

from tui.app.operations import HostOps
from tui.app.retry import failure_reason, retry_delay
from tui.app.screens.action_words import KillWords, WaitWords, clip
from tui.app.screens.confirm import (
    ConfirmAction,
    Plan,
    gpu_text,
    kill_plan,
    relaunch_plan,
    replace_plan,
)
from tui.app.screens.help import HelpScreen, keys_of
from tui.app.widgets.action_progress import ActionProgress
from tui.app.widgets.host_header import HostHeader
from tui.app.widgets.launch_pane import LaunchPane
from tui.app.widgets.log_view import LogView
from tui.app.widgets.metrics_pane import HintsLine, MetricsPane
from tui.app.widgets.run_banner import RunBanner
from tui.app.widgets.search_bar import SearchBar
from tui.config import Host, MetricsSource, Service
from tui.core.follow import FileInfo
from tui.core.gpu import Attribution, gpu_values
from tui.core.hints import DeathWatch, hints
from tui.core.logcursor import EventKind, EventRow, LogCursor, LogEvent, LogLine, Row
from tui.core.metrics import Engine as MetricsEngine
from tui.core.metrics import (
    LogScanner,
    MetricSample,
    RunEvent,
    RunEventKind,
    SeriesStore,
)
from tui.core.report import ServiceReport, run_writes_log
from tui.core.runs import Assessment, Run, Verdict, unknown
from tui.core.sanitize import printable
from tui.core.secrets import command_text
from tui.errors import BabysitError
from tui.ops.kill import KillOutcome, KillTarget, outcome_of
from tui.ops.relaunch import (
    Launched,
    LaunchRefused,
    WaitProgress,
    WaitResult,
    audit,
    check_preconditions,
)
from tui.remote.transport import Transport

#: Seconds to wait, when the screen closes, for the follower to end its agent.
FOLLOWER_STOP_TIMEOUT = 3.0
#: Seconds between two probes of which run this is (a probe re-arms only once done).
PROBE_INTERVAL = 2.0

#: Verdicts whose run may be killed: the run is this service's, verified by the probe.
KILLABLE = frozenset({Verdict.LIVE, Verdict.STARTING, Verdict.STALE, Verdict.NO_LOG})
#: The actions that change the host; never offered with ``read_only``.
HOST_ACTIONS = ("kill", "relaunch", "replace")

#: A probe answers with a verdict alone, or with a full report (metrics, launch, GPUs).
Probe = Callable[[], Awaitable[Assessment | ServiceReport]]
#: A metric older than this many probe intervals is drawn as stale.
STALE_INTERVALS = 3
#: Below this many columns the launch pane steps aside unless it shows a problem.
NARROW = 100
#: Seconds between two redraws of the metrics pane while lines keep coming.
METRICS_REDRAW = 1.0
WriterFollower = Callable[[int], "RowSource"]
AnchorFollower = Callable[[LogCursor], "RowSource"]


class RowSource(Protocol):
    """What the screen needs from a follower (:class:`tui.remote.follow.Follower`)."""

    @property
    def file(self) -> FileInfo | None: ...

    def rows(self) -> AsyncIterator[list[Row]]: ...


class HostScreen(Screen[None]):
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
            "k",
            "kill",
            "kill",
            id="host.kill",
            tooltip="kill: stop the verified run (SIGTERM, grace, SIGKILL), after asking",
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
        ops: HostOps | None = None,
        anchor_follower: AnchorFollower | None = None,
        read_only: bool = False,
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
        #: Kill and relaunch on this host; None offers neither.
        self.ops = ops
        #: A follower from a cursor (the new run's anchor, after a relaunch).
        self.anchor_follower = anchor_follower
        #: No action that changes the host is offered or run.
        self.read_only = read_only
        self.assessment: Assessment | None = None
        self._follower_worker: Worker[None] | None = None
        self._action_worker: Worker[None] | None = None
        # One probe at a time (the refresh loop's and an action's), so an older answer
        # never lands on screen after a newer one.
        self._probe_lock = asyncio.Lock()
        # What the footer last showed as allowed (see _sync_bindings).
        self._shown_bindings: tuple[bool | None, ...] | None = None
        # Metrics come from the followed lines (and GPU readings from the probe); the
        # scanner marks run boundaries so one series never spans two runs.
        engine = service.engine.value
        self.scanner = LogScanner(MetricsEngine.of(engine) if engine != "generic" else None)
        self.deaths = DeathWatch(engine)
        #: For ``metrics: prometheus`` the metrics come from each report's /metrics
        #: sample (its rates made by the readers the app keeps), not from log lines.
        self.prometheus = service.metrics is MetricsSource.PROMETHEUS
        self.series = SeriesStore()
        self.report: ServiceReport | None = None
        self._metrics_drawn = 0.0
        self._metrics_pending = False

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
            yield Static(id="problem")
            yield LogView(self.service.log, id="log")
            yield SearchBar(id="search")
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        # Narrow terminals show the launch pane only when a flag is missing.
        self.query_one("#top").set_class(event.size.width < NARROW, "-narrow")

    def on_mount(self) -> None:
        self.log_view.focus()
        self._start_following()
        if self.probe is None:
            self.query_one(RunBanner).display = False
            self.query_one("#top").display = False
            self.query_one(HintsLine).display = False
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
        """Probe which run this is, show it, and note every change of verdict in the log.

        The one place a probe's failure is handled: whatever it raises turns the
        banner UNKNOWN with the reason, and the loop asks again after a backoff (as
        the fleet does), so a failing probe never leaves an old verdict up.
        """
        probe = self.probe
        failures = 0
        while probe is not None:
            try:
                await self._probe_once(probe)
            except Exception as error:  # said on the banner and retried, never lost
                failures += 1
                delay = retry_delay(failures, self.probe_interval)
                reason = f"{failure_reason(error)}; asking again in {delay:g} s"
                self.show_assessment(
                    unknown(self.host.name, self.service.name, reason, self.clock())
                )
            else:
                failures = 0
                delay = self.probe_interval
            await asyncio.sleep(delay)

    async def _probe_once(self, probe: Probe) -> Assessment:
        """Probe, show everything it said, and return its verdict."""
        async with self._probe_lock:
            answer = await probe()
        if isinstance(answer, ServiceReport):
            self.show_report(answer)
            return answer.assessment
        self.show_assessment(answer)
        self.query_one(LaunchPane).show(None, "this probe compares no launch flags")
        self.show_metrics()
        return answer

    def show_report(self, report: ServiceReport) -> None:
        """A probe's full answer: the verdict, GPU readings, the launch diff, the hints."""
        self.report = report
        self.show_assessment(report.assessment)
        name = self.service.label
        if self.prometheus and report.prometheus_sample is not None:
            sample = replace(report.prometheus_sample, run=self.series.current_run(name))
            self.series.add_sample(name, sample, utc_offset=report.assessment.utc_offset)
        if report.gpus is not None:
            run = self.series.current_run(name)
            for label, values in gpu_values(report.gpus.gpus).items():
                self.series.add_values(
                    name, values, ts=report.assessment.checked_at, run=run, label=label
                )
        launch_note = None if report.assessment.run else "no run to compare with"
        self.query_one(LaunchPane).show(report.launch, launch_note)
        self.show_metrics()

    def show_metrics(self) -> None:
        now = self.clock()
        snapshot = self.series.snapshot(
            self.service.label, now=now, stale_after=STALE_INTERVALS * max(self.probe_interval, 10)
        )
        report = self.report
        found = hints(
            snapshot,
            launch=report.launch if report else None,
            gpus=report.gpus if report else None,
            death=self.deaths.line(
                running=self.assessment is not None and run_writes_log(self.assessment)
            ),
        )
        gpus = report.gpus if report else None
        # Say why GPU use is not tied to this run (no nvidia-smi, host PIDs in a
        # container, …) instead of showing nothing.
        note = (
            gpus.note
            if gpus and (gpus.problem or gpus.attribution is not Attribution.TIED)
            else None
        )
        self.query_one(MetricsPane).show(snapshot, note)
        self.query_one(HintsLine).show(found)

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

    def _measure(self, rows: list[Row]) -> int:
        """Feed the followed lines to the metric parser (cheap: most lines are skipped);
        how many samples they gave. (Run boundaries still come from the log when the
        metrics come from /metrics.)"""
        name = self.service.label
        samples = 0
        offset = self.assessment.utc_offset if self.assessment else time.localtime().tm_gmtoff
        for row in rows:
            if not isinstance(row, LogLine):
                continue
            found = self.scanner.feed(row.text, row.offset)
            self.deaths.feed(row.text, row.offset)
            if isinstance(found, MetricSample):
                if not self.prometheus:
                    samples += self.series.add_sample(name, found, utc_offset=offset) > 0
            elif isinstance(found, RunEvent) and found.kind is RunEventKind.STARTED:
                self.deaths.new_run()
                self.series.begin_run(name, found.run)
        return samples

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
        self._sync_bindings()

    def _sync_bindings(self) -> None:
        """Redraw the footer's keys only when what they allow has changed: a redraw
        rebuilds the whole footer, and a probe answers every few seconds."""
        allowed = tuple(self.check_action(a, ()) for a in ("follow_writer", *HOST_ACTIONS))
        if allowed != self._shown_bindings:
            self._shown_bindings = allowed
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "follow_writer":
            a = self.assessment
            if self.writer_follower is None or a is None or a.writer_file is None:
                return False
            shown = self.follower.file.inode if self.follower.file else None
            return True if shown != a.writer_file.inode else None
        if action in HOST_ACTIONS:
            if self.read_only or self.ops is None:
                return False
            return True if self.can(action) else None
        return True

    def can(self, action: str) -> bool:
        """May ``action`` run now, on the latest assessment? (One action at a time.)"""
        if self.read_only or self.ops is None or self.action_running:
            return False
        a = self.assessment
        if a is None:
            return False
        has_run = a.run is not None and a.verdict in KILLABLE
        launchable = self.service.launch is not None
        if action == "kill":
            return has_run
        if action == "replace":
            return has_run and launchable
        if action == "relaunch":
            # Verifiably no run: DEAD. (AMBIGUOUS and UNKNOWN have no run either, but
            # only because babysit cannot tell which one it is.)
            return launchable and a.run is None and a.verdict is Verdict.DEAD
        return False

    @property
    def action_running(self) -> bool:
        return self._action_worker is not None and not self._action_worker.is_finished

    async def action_follow_writer(self) -> None:
        """Follow the file the run actually writes (deleted or renamed), through its fd."""
        a = self.assessment
        if self.writer_follower is None or a is None or a.writer_pid is None:
            return
        await self._stop_following()
        self.follower = self.writer_follower(a.writer_pid)
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
        if self.anchor_follower is None:
            return
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
        self.follower = self.anchor_follower(cursor)
        self.query_one("#problem", Static).remove_class("-shown")
        self.log_view.resume()
        self._start_following()
        self.refresh_bindings()

    async def on_unmount(self) -> None:
        """Stop following and let the follower end its agent before the loop goes."""
        await self._stop_following()

    async def _follow(self) -> None:
        """Apply each batch of rows to the log pane, once, in order."""
        log = self.log_view
        async for batch in self.follower.rows():
            log.add_rows(batch)
            log.set_file(self.follower.file)
            if self._measure(batch):
                self._metrics_changed()
            # A fast log must not starve input and drawing: let the loop breathe.
            await asyncio.sleep(0)

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

    # ------------------------------------------------------------------ actions

    def action_kill(self) -> None:
        self._start_action("kill", self._kill_flow)

    def action_relaunch(self) -> None:
        self._start_action("relaunch", self._relaunch_flow)

    def action_replace(self) -> None:
        self._start_action("replace", self._replace_flow)

    def action_help(self) -> None:
        note = "read-only: kill, relaunch and replace are not offered" if self.read_only else None
        self.app.push_screen(HelpScreen(f"keys · {self.where}", keys_of(self), note))

    def _start_action(
        self, action: str, flow: Callable[[HostOps, Assessment], Awaitable[None]]
    ) -> None:
        """Run ``flow`` on the assessment shown now, in the action worker group."""
        if self.read_only or self.ops is None:
            self.notify(
                "babysit runs read-only: nothing on the host is changed",
                title=action,
                severity="warning",
            )
            return
        a = self.assessment
        if not self.can(action) or a is None:
            return
        self._action_worker = self.run_worker(
            flow(self.ops, a),
            name=action,
            group=f"action:{self.host.name}",
            exclusive=True,
            exit_on_error=False,
        )
        self.refresh_bindings()

    async def _confirm(self, plan: Plan, ops: HostOps, run: Run | None = None) -> bool:
        """Show ``plan``; while it is open, ask the host which GPU memory ``run`` holds."""
        modal = ConfirmAction(plan)
        gpu = asyncio.create_task(self._gpu_fact(ops, modal, run)) if run is not None else None
        try:
            return bool(await self.app.push_screen_wait(modal))
        finally:
            if gpu is not None:
                gpu.cancel()
                await asyncio.gather(gpu, return_exceptions=True)

    @staticmethod
    async def _gpu_fact(ops: HostOps, modal: ConfirmAction, run: Run) -> None:
        try:
            checks = await ops.preflight()
        except BabysitError as error:
            modal.set_fact("gpu", f"unknown ({printable(error.message)})")
        else:
            modal.set_fact("gpu", gpu_text(checks, run.pids))

    async def _kill_flow(self, ops: HostOps, a: Assessment) -> None:
        if a.run is None:
            return
        if await self._confirm(kill_plan(self.service, a, a.run), ops, a.run):
            await self._kill(ops, a, a.run)

    async def _relaunch_flow(self, ops: HostOps, a: Assessment) -> None:
        spec = self.service.launch
        if spec is None:
            return
        if await self._confirm(relaunch_plan(self.service, spec, a), ops):
            await self._relaunch(ops)

    async def _replace_flow(self, ops: HostOps, a: Assessment) -> None:
        spec, run = self.service.launch, a.run
        if spec is None or run is None:
            return
        if not await self._confirm(replace_plan(self.service, spec, a, run), ops, run):
            return
        outcome = await self._kill(ops, a, run)
        if outcome.ok:
            await self._relaunch(ops)
        else:
            self.note("replace: not relaunched, the old run was not stopped cleanly", ok=False)

    async def _kill(self, ops: HostOps, a: Assessment, run: Run) -> KillOutcome:
        """The guarded kill of exactly ``run`` as confirmed, as ``babysit kill`` does it."""
        service = self.service
        grace = service.stop_grace
        target = KillTarget.of(run, a.boot_id or "", service)
        identity: dict[str, object] = {
            "boot_id": target.boot_id,
            "pid": run.root.pid,
            "start_ticks": run.root.start_ticks,
        }
        command = list(run.root.cmdline)
        words = KillWords(target, grace)
        self.progress.running(words.text)
        self.note(
            f"kill: stopping pid {run.root.pid} and {len(run.pids) - 1} child process(es): "
            f"SIGTERM, {grace:g} s, then SIGKILL"
        )
        events = []
        try:
            async for event in ops.kill(target, grace=grace):
                events.append(event)
                words.add(event)
                self.progress.redraw()
                if event.kind in ("changed", "refused", "lost"):
                    self.note(f"kill: {event.message}", ok=False)
        except Exception as error:
            await self._audit("kill", identity, command, f"failed: {error}", ok=False)
            raise
        outcome = outcome_of(events)
        summary = outcome.summary(target, service.port)
        await self._audit("kill", identity, command, summary, ok=outcome.ok)
        self.finished("kill", summary, ok=outcome.ok)
        return outcome

    async def _relaunch(self, ops: HostOps) -> None:
        """Check again, launch, follow the new run from its anchor, wait until it is ready —
        the order of ``babysit relaunch --wait``."""
        service = self.service
        probe = self.probe
        self.progress.running(
            lambda elapsed: f"relaunch: checking the run, the port and the GPUs … {elapsed:.0f} s"
        )
        try:
            if probe is None:
                raise LaunchRefused(f"{service.label}: cannot tell whether it runs (no probe)")
            fresh = await self._probe_once(probe)
            check_preconditions(service, fresh, await ops.preflight(), replacing=False)
            launched = await ops.launch()
        except Exception as error:
            await self._audit("relaunch", None, None, str(error), ok=False)
            raise
        moved = f"; old log renamed to {launched.rotated_to}" if launched.rotated_to else ""
        self.note(f"relaunch: started pid {launched.pid}: {command_text(launched.argv)}{moved}")
        identity: dict[str, object] = {
            "boot_id": launched.boot_id,
            "pid": launched.pid,
            "start_ticks": launched.start_ticks,
            "run_id": launched.run_id,
        }
        await self._audit(
            "relaunch", identity, list(launched.argv), f"started pid {launched.pid}", ok=True
        )
        await self.follow_from(launched.anchor)
        await self._wait(ops, launched, identity)

    async def _wait(self, ops: HostOps, launched: Launched, identity: dict[str, object]) -> None:
        words = WaitWords(launched)
        self.progress.running(words.text)
        started = self.clock()
        try:
            async for step in ops.wait_ready(launched):
                if isinstance(step, WaitProgress):
                    words.add(step, self.clock() - started)
                    self.progress.redraw()
                elif isinstance(step, WaitResult):
                    await self._audit("wait", identity, None, step.reason, ok=step.ready)
                    seconds = f"{step.elapsed:.0f} s"
                    if step.ready:
                        said = f"pid {launched.pid} is ready after {seconds} — {step.reason}"
                    else:
                        said = f"pid {launched.pid} after {seconds}: {step.reason}"
                    self.finished("relaunch", clip(said, 400), ok=step.ready)
                    return
        except Exception as error:
            await self._audit("wait", identity, None, f"failed: {error}", ok=False)
            raise
        self.finished("relaunch", f"pid {launched.pid}: the wait ended without a result", ok=False)

    async def _audit(
        self,
        action: str,
        identity: dict[str, object] | None,
        command: list[str] | None,
        result: str,
        *,
        ok: bool,
    ) -> None:
        """Append to the audit log on this machine (a file write: off the event loop)."""
        await asyncio.to_thread(
            audit,
            self.host,
            self.service,
            action,
            identity=identity,
            command=command,
            result=result,
            ok=ok,
        )

    def note(self, message: str, *, ok: bool = True) -> None:
        """An action's step as an event row in the log pane."""
        kind = EventKind.VERDICT if ok else EventKind.ERROR
        self.log_view.add_rows([EventRow(LogEvent(kind, message, self.clock()))])

    def finished(self, action: str, message: str, *, ok: bool) -> None:
        """An action's outcome: on the progress line, as an event row, and as a notification."""
        self.progress.finished(message, ok=ok)
        self.note(f"{action}: {message}", ok=ok)
        self.notify(
            printable(message),
            title=action,
            severity="information" if ok else "error",
            markup=False,
        )

    def action_failed(self, action: str, error: BaseException | None) -> None:
        """An action ended by an error: said in plain words, never a crash."""
        if isinstance(error, BabysitError):
            message = error.message
        else:
            message = f"{type(error).__name__}: {error}"
        self.finished(action, f"not done: {message}", ok=False)

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
