"""What the host screen does to a host: ``K`` kill, ``r`` relaunch and ``R`` replace.

Each runs in a worker of its own group (``action:<host>``), one at a time: a
confirmation that shows exactly what will happen, then the service session's
flows (:mod:`tui.ops.actions`, the same ones ``babysit kill`` and ``babysit
relaunch`` run, which write the audit record), each step rendered on the
progress line under the banner and as a note in the log pane. They are offered
only when the latest assessment has a verified run to act on (or, for relaunch,
verifiably none), and never with ``read_only``.

:class:`HostActions` is a part of :class:`~tui.app.screens.host.HostScreen`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from tui.agent.protocol import KILL_CHANGED, KILL_LOST, KILL_REFUSED
from tui.app.screens.action_words import KillWords, WaitWords, clip
from tui.app.screens.confirm import (
    ALTERNATIVE,
    CONFIRM,
    ConfirmAction,
    Plan,
    gpu_text,
    kill_plan,
    orphans_plan,
    relaunch_plan,
    replace_plan,
    with_orphans,
)
from tui.core.logcursor import EventKind, EventRow, LogEvent
from tui.core.runs import Assessment, Run
from tui.core.sanitize import printable
from tui.core.secrets import command_text
from tui.core.verdicts import Verdict
from tui.errors import BabysitError
from tui.ops.actions import Checking, Finished, Planned, Step
from tui.ops.hostops import HostOps
from tui.ops.kill_outcome import KillEvent
from tui.ops.relaunch import Launched, WaitProgress

if TYPE_CHECKING:
    from tui.app.screens.host import HostScreen

#: Verdicts whose run may be killed: the run is this service's, verified by the probe.
KILLABLE = frozenset({Verdict.LIVE, Verdict.STARTING, Verdict.STALE, Verdict.NO_LOG})
#: The actions that change the host; never offered with ``read_only``.
HOST_ACTIONS = ("kill", "relaunch", "replace")


class HostActions:
    """The host screen's actions (mixed into :class:`HostScreen`)."""

    def can(self: HostScreen, action: str) -> bool:
        """May ``action`` run now, on the latest assessment? (One action at a time.)"""
        if self.read_only or self.ops is None or self.action_running:
            return False
        a = self.assessment
        if a is None:
            return False
        has_run = a.run is not None and a.verdict in KILLABLE
        launchable = self.service.launch is not None or self.service.container is not None
        if action == "kill":
            return has_run or bool(self.session.orphans())
        if action == "replace":
            return has_run and launchable
        if action == "relaunch":
            # Verifiably no run: DEAD. (AMBIGUOUS and UNKNOWN have no run either, but
            # only because babysit cannot tell which one it is.)
            return launchable and a.run is None and a.verdict is Verdict.DEAD
        return False

    def why_not_act(self: HostScreen, action: str) -> str:
        """Why ``action`` (one of :data:`HOST_ACTIONS`) is not offered now, in plain words."""
        a = self.assessment
        blocked = self._why_nothing_now()
        if blocked is not None or a is None:
            return blocked or "no verdict yet: wait for the first probe"
        launchable = self.service.launch is not None or self.service.container is not None
        has_run = a.run is not None and a.verdict in KILLABLE
        word = a.verdict.word
        if action == "kill":
            return f"no verified run to kill ({word}), and no orphans on its GPUs"
        if action == "replace":
            return (
                "no launch: in hosts.yaml to start it again"
                if has_run
                else f"no verified run to replace ({word})"
            )
        if not launchable:
            return "no launch: in hosts.yaml to start the service from"
        if a.run is not None:
            return "a run is there: replace (R) kills it first"
        return f"babysit cannot tell whether a run is there ({word}): nothing is started"

    def _why_nothing_now(self: HostScreen) -> str | None:
        """Why no action at all can run now, or None."""
        if self.read_only:
            return "babysit runs read-only: nothing on the host is changed"
        if self.ops is None:
            return f"babysit cannot act on {self.host.name} from here"
        if self.action_running:
            return "another action is running: wait for it to end"
        if self.assessment is None:
            return "no verdict yet: wait for the first probe"
        return None

    @property
    def action_running(self: HostScreen) -> bool:
        return self._action_worker is not None and not self._action_worker.is_finished

    # ------------------------------------------------------------------ actions

    def action_kill(self: HostScreen) -> None:
        self._start_action("kill", self._kill_flow)

    def action_relaunch(self: HostScreen) -> None:
        self._start_action("relaunch", self._relaunch_flow)

    def action_replace(self: HostScreen) -> None:
        self._start_action("replace", self._replace_flow)

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

    async def _confirm(
        self: HostScreen, plan: Plan, ops: HostOps, run: Run | None = None
    ) -> str | None:
        """Show ``plan``; while it is open, ask the host which GPU memory ``run`` holds.
        The button pressed (CONFIRM or ALTERNATIVE), None when cancelled."""
        modal = ConfirmAction(plan)
        gpu = asyncio.create_task(self._gpu_fact(ops, modal, run)) if run is not None else None
        try:
            return await self.app.push_screen_wait(modal)
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

    async def _kill_flow(self: HostScreen, ops: HostOps, a: Assessment) -> None:
        orphans = self.session.orphans()
        run = a.run if a.verdict in KILLABLE else None
        actions, grace = self.session.actions("screen"), self.service.stop_grace
        if run is None:
            if orphans and await self._confirm(orphans_plan(self.service, a, orphans), ops):
                await self._show(actions.kill_orphans(orphans, a.boot_id, grace=grace))
            return
        plan = kill_plan(self.service, a, run)
        if orphans:
            plan = with_orphans(plan, self.service, a, orphans)
        choice = await self._confirm(plan, ops, run)
        if choice == CONFIRM:
            await self._show(actions.kill(run, a.boot_id, grace=grace, container=a.container))
        elif choice == ALTERNATIVE:
            await self._show(actions.kill_orphans(orphans, a.boot_id, grace=grace))

    async def _relaunch_flow(self: HostScreen, ops: HostOps, a: Assessment) -> None:
        spec = self.service.launch
        if spec is None and self.service.container is None:
            return
        if await self._confirm(relaunch_plan(self.service, spec, a), ops) == CONFIRM:
            await self._show(self.session.actions("screen").relaunch(self.session.fresh))

    async def _replace_flow(self: HostScreen, ops: HostOps, a: Assessment) -> None:
        spec, run = self.service.launch, a.run
        if (spec is None and self.service.container is None) or run is None:
            return
        if await self._confirm(replace_plan(self.service, spec, a, run), ops, run) == CONFIRM:
            grace = self.service.stop_grace
            await self._show(
                self.session.actions("screen").replace(
                    run, a.boot_id, self.session.fresh, grace=grace, container=a.container
                )
            )

    async def _show(self: HostScreen, steps: AsyncIterator[Step]) -> None:
        """Render an action's steps (:mod:`tui.ops.actions`): the progress line, the
        notes in the log pane, the outcome; after a launch, the pane follows the new run."""
        kill: KillWords | None = None
        wait: WaitWords | None = None
        started = self.clock()
        async for step in steps:
            if isinstance(step, Planned):
                kill = KillWords(step.target, step.grace)
                self.progress.running(kill.text)
                self.note(f"kill: {step.text}")
            elif isinstance(step, KillEvent) and kill is not None:
                kill.add(step)
                self.progress.redraw()
                if step.kind in (KILL_CHANGED, KILL_REFUSED, KILL_LOST):
                    self.note(f"kill: {step.message}", ok=False)
            elif isinstance(step, Checking):
                self.progress.running(
                    lambda elapsed: (
                        f"relaunch: checking the run, the port and the GPUs … {elapsed:.0f} s"
                    )
                )
            elif isinstance(step, Launched):
                moved = f"; old log renamed to {step.rotated_to}" if step.rotated_to else ""
                self.note(f"relaunch: started pid {step.pid}: {command_text(step.argv)}{moved}")
                await self.follow_from(step.anchor)
                wait = WaitWords(step)
                self.progress.running(wait.text)
                started = self.clock()
            elif isinstance(step, WaitProgress) and wait is not None:
                wait.add(step, self.clock() - started)
                self.progress.redraw()
            elif isinstance(step, Finished):
                self._finished(step)

    def _finished(self: HostScreen, end: Finished) -> None:
        if end.action == "replace":  # the kill's own outcome is on the progress line
            self.note(f"replace: {end.result}", ok=False)
            return
        launched = end.launched
        if end.action == "kill" or launched is None:
            self.finished(end.action, end.result, ok=end.ok)
        elif end.wait is None:
            self.finished(end.action, f"pid {launched.pid}: {end.result}", ok=False)
        else:
            seconds = f"{end.wait.elapsed:.0f} s"
            if end.ok:
                said = f"pid {launched.pid} is ready after {seconds} — {end.result}"
            else:
                said = f"pid {launched.pid} after {seconds}: {end.result}"
            self.finished(end.action, clip(said, 400), ok=end.ok)

    def note(self: HostScreen, message: str, *, ok: bool = True) -> None:
        """An action's step as an event row in the log pane."""
        kind = EventKind.VERDICT if ok else EventKind.ERROR
        self.log_view.add_rows([EventRow(LogEvent(kind, message, self.clock()))])

    def finished(self: HostScreen, action: str, message: str, *, ok: bool) -> None:
        """An action's outcome: on the progress line, as an event row, and as a notification."""
        self.progress.finished(message, ok=ok)
        self.note(f"{action}: {message}", ok=ok)
        self.notify(
            printable(message),
            title=action,
            severity="information" if ok else "error",
            markup=False,
        )

    def action_failed(self: HostScreen, action: str, error: BaseException | None) -> None:
        """An action ended by an error: said in plain words, never a crash."""
        if isinstance(error, BabysitError):
            message = error.message
        else:
            message = f"{type(error).__name__}: {error}"
        self.finished(action, f"not done: {message}", ok=False)
