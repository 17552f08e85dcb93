"""Kill, relaunch and replace, written once for every caller (``babysit kill``,
``babysit relaunch``, the host screen's k, r and R).

Each flow is an async generator of typed steps that a caller only renders:

- :class:`Planned`: the kill of exactly this target is about to begin;
- each :class:`~tui.ops.kill.KillEvent` of the kill as the host sends it;
- :class:`Checking`: the fresh check before a launch (run, port, GPUs) has begun;
- :class:`~tui.ops.relaunch.Launched`: the new run, as recorded on the host;
- each :class:`~tui.ops.relaunch.WaitProgress` of its readiness wait;
- one :class:`Finished` last: the outcome in words, ok or not, and the CLI's exit status.

A refusal or a failure that is not an outcome (a launch refused, the host
unreachable) is raised, after it is audited. The flows write the audit record
of every end themselves (:mod:`tui.ops.audit`), the same record whoever acted.
They talk to the host only through :class:`~tui.ops.hostops.HostOps`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from tui.config import Host, Service
from tui.core.containers import ContainerState
from tui.core.gpu import Orphan
from tui.core.runs import Assessment, Run
from tui.core.sanitize import printable
from tui.errors import BabysitError
from tui.ops import audit
from tui.ops.audit import Actor, AuditRecord, Identity
from tui.ops.container_kill import ContainerTarget, KillRefused
from tui.ops.container_relaunch import check_container
from tui.ops.hostops import HostOps
from tui.ops.kill import KillTarget
from tui.ops.kill_outcome import KillEvent, KillOutcome, outcome_of
from tui.ops.relaunch import (
    Launched,
    LaunchRefused,
    WaitProgress,
    WaitResult,
    check_orphans,
    check_preconditions,
    check_resources,
    started_words,
)

#: A new look at the service (a probe), taken right before a launch.
Fresh = Callable[[], Awaitable[Assessment]]

#: The exit statuses of a relaunch's or a replace's end: done (started, and ready when
#: waited for) or not (a refusal is raised: LaunchRefused's 2).
DONE = 0
NOT_DONE = 1
#: What a replace whose kill did not end cleanly says (nothing was launched).
NOT_STOPPED = "not relaunched, the old run was not stopped cleanly"


@dataclass(frozen=True)
class Planned:
    """The kill of exactly ``target`` is about to begin: SIGTERM, ``grace`` s, SIGKILL
    (a container's: ``docker stop -t grace`` of its full id)."""

    target: KillTarget | ContainerTarget
    grace: float

    @property
    def text(self) -> str:
        if isinstance(self.target, ContainerTarget):
            return (
                f"stopping {self.target.text}: {self.target.runtime} stop -t "
                f"{math.ceil(self.grace)} {self.target.id}, once its StartedAt is checked again"
            )
        return f"stopping {self.target.text}: SIGTERM, {self.grace:g} s, then SIGKILL"


@dataclass(frozen=True)
class Checking:
    """The fresh check before a launch (the run, the port, the GPUs) has begun."""


@dataclass(frozen=True)
class Finished:
    """The end of ``action`` (``kill``, ``relaunch`` or ``replace``), in words.

    A kill's carries its outcome; a relaunch's the run it started and, when it was
    waited for, the wait's result (None: the wait ended without one).
    """

    action: str
    ok: bool
    result: str
    exit_status: int
    kill: KillOutcome | None = None
    launched: Launched | None = None
    wait: WaitResult | None = None


Step = Planned | KillEvent | Checking | Launched | WaitProgress | Finished


def describe(error: BaseException) -> str:
    """An error in the words the audit log and the screen use."""
    if isinstance(error, BabysitError):
        return error.message
    if isinstance(error, asyncio.CancelledError):
        return "babysit stopped before the end was known"
    return f"{type(error).__name__}: {error}"


class ServiceActions:
    """The flows on one service of one host, by ``actor``, through ``ops``."""

    def __init__(
        self,
        ops: HostOps,
        host: Host,
        service: Service,
        *,
        actor: Actor,
        orphans: Callable[[], Sequence[Orphan]] = tuple,
    ) -> None:
        self.ops = ops
        self.host = host
        self.service = service
        self.actor = actor
        #: The orphans on the service's GPUs the latest look at the host shows (a launch
        #: is refused while there are any).
        self.orphans = orphans

    async def _audit(
        self,
        action: str,
        identity: Identity,
        command: Sequence[str] | None,
        result: str,
        *,
        ok: bool,
    ) -> None:
        await audit.append(self._record(action, identity, command, result, ok=ok))

    def _abandoned(self, action: str, identity: Identity, command: Sequence[str] | None) -> None:
        """The reader of the steps went away mid-action (``| head``, a closed screen): the
        record is written at once (an abandoned generator may await nothing more)."""
        reason = "failed: babysit stopped reading before the end was known"
        audit.write(self._record(action, identity, command, reason, ok=False))

    def _record(
        self,
        action: str,
        identity: Identity,
        command: Sequence[str] | None,
        result: str,
        *,
        ok: bool,
    ) -> AuditRecord:
        return AuditRecord.of(
            self.host.name,
            self.service.name,
            action,
            self.actor,
            identity=identity,
            command=command,
            ok=ok,
            result=result,
        )

    async def kill(
        self,
        run: Run | None,
        boot_id: str | None,
        *,
        grace: float,
        container: ContainerState | None = None,
    ) -> AsyncIterator[Step]:
        """The guarded kill of exactly ``run`` (as confirmed, on boot ``boot_id``); of a
        container service, the stop of its ``container`` run as confirmed."""
        if self.service.container is not None:
            async for step in self.kill_container(container, run, grace=grace, boot_id=boot_id):
                yield step
            return
        if run is None:
            raise KillRefused(f"{self.service.label}: no run to kill; nothing was signalled")
        target = KillTarget.of(run, boot_id or "", self.service)
        async for step in self._kill(
            target, Identity.of_run(run, boot_id), run.root.cmdline, grace=grace
        ):
            yield step

    async def kill_orphans(
        self, orphans: Sequence[Orphan], boot_id: str | None, *, grace: float
    ) -> AsyncIterator[Step]:
        """The guarded kill of exactly ``orphans`` (as confirmed, on boot ``boot_id``),
        each a root of its own: its start time re-checked right before each signal, then
        the wait until the memory they held is free."""
        if not orphans:
            raise KillRefused(f"{self.service.label}: no orphans to kill; nothing was signalled")
        target = KillTarget.of_orphans(orphans, boot_id or "", self.service)
        first = orphans[0]
        identity = Identity(boot_id or None, first.pid, first.start_ticks)
        async for step in self._kill(target, identity, first.cmdline, grace=grace):
            yield step

    async def kill_container(
        self,
        container: ContainerState | None,
        run: Run | None,
        *,
        grace: float,
        boot_id: str | None = None,
    ) -> AsyncIterator[Step]:
        """``docker stop`` of the container's run as confirmed (``container``, with the
        host processes of ``run`` when the probe saw them)."""
        if container is None or not container.found or not container.id:
            why = container.problem if container is not None else None
            message = (
                f"{self.service.label}: babysit cannot tell which run of container "
                f"{self.service.container} to stop ({why or 'its state was not read'}); "
                "nothing was stopped"
            )
            await self._audit("kill", Identity(), None, message, ok=False)
            raise KillRefused(message)
        target = ContainerTarget.of(container, run, self.service)
        identity = Identity.of_container(container, run, boot_id)
        command = run.root.cmdline if run is not None else None
        async for step in self._kill(target, identity, command, grace=grace):
            yield step

    async def _kill(
        self,
        target: KillTarget | ContainerTarget,
        identity: Identity,
        command: Sequence[str] | None,
        *,
        grace: float,
    ) -> AsyncIterator[Step]:
        yield Planned(target, grace)
        events: list[KillEvent] = []
        stream = (
            self.ops.stop_container(target, grace=grace)
            if isinstance(target, ContainerTarget)
            else self.ops.kill(target, grace=grace)
        )
        try:
            async for event in stream:
                events.append(event)
                yield event
        except GeneratorExit:
            self._abandoned("kill", identity, command)
            raise
        except (Exception, asyncio.CancelledError) as error:
            await self._audit("kill", identity, command, f"failed: {describe(error)}", ok=False)
            raise
        outcome = outcome_of(events)
        outcome.orphans = isinstance(target, KillTarget) and target.orphans
        summary = outcome.summary(target, self.service.port)
        await self._audit("kill", identity, command, summary, ok=outcome.ok)
        yield Finished("kill", outcome.ok, summary, outcome.exit_status, kill=outcome)

    async def relaunch(
        self,
        fresh: Fresh,
        *,
        wait: bool = True,
        container: ContainerState | None = None,
        grace: float | None = None,
        restart: bool = False,
    ) -> AsyncIterator[Step]:
        """Check again (``fresh``), launch, and with ``wait`` follow the new run until it
        is ready, fails or the wait times out. A container service without ``launch:``
        starts its stopped container; with ``restart`` it restarts the running one: the
        run confirmed (``container``; else the one ``fresh`` sees), ``grace`` its stop's."""
        yield Checking()
        try:
            launched = await self._start(fresh, container, grace, restart=restart)
        except (Exception, asyncio.CancelledError) as error:
            await self._audit("relaunch", Identity(), self._command(), describe(error), ok=False)
            raise
        identity = Identity(launched.boot_id, launched.pid, launched.start_ticks, launched.run_id)
        started = started_words(launched)
        await self._audit("relaunch", identity, launched.argv, started, ok=True)
        yield launched
        if not wait:
            yield Finished("relaunch", True, started, DONE, launched=launched)
            return
        result: WaitResult | None = None
        try:
            async for step in self.ops.wait_ready(launched):
                if isinstance(step, WaitResult):
                    result = step
                else:
                    yield step
        except GeneratorExit:
            self._abandoned("wait", identity, launched.argv)
            raise
        except (Exception, asyncio.CancelledError) as error:
            await self._audit(
                "wait", identity, launched.argv, f"failed: {describe(error)}", ok=False
            )
            raise
        ok = result is not None and result.ready
        reason = result.reason if result is not None else "the wait ended without a result"
        await self._audit("wait", identity, launched.argv, reason, ok=ok)
        status = DONE if ok else NOT_DONE
        yield Finished("relaunch", ok, reason, status, launched=launched, wait=result)

    def _command(self) -> tuple[str, ...] | None:
        spec = self.service.launch
        return None if spec is None else spec.command

    async def _start(
        self,
        fresh: Fresh,
        confirmed: ContainerState | None,
        grace: float | None,
        *,
        restart: bool,
    ) -> Launched:
        """The new run: the service's ``launch:``, or its container started (restarted,
        with ``restart``, when it runs), once the checks allow it."""
        service = self.service
        assessment = await fresh()
        if service.container is None or service.launch is not None:
            checks = await self.ops.preflight()
            check_preconditions(
                service, assessment, checks, replacing=False, orphans=self.orphans()
            )
            return await self.ops.launch()
        seen = confirmed or assessment.container or await self.ops.container_state()
        container = check_container(service, seen)
        target = ContainerTarget.of(container, assessment.run, service)
        if target.running and not restart:
            # Its own status: a restarting or paused container is not "running".
            status = printable(container.status) or "running"
            raise LaunchRefused(
                f"{service.label}: {target.text} is {status}; use --replace (R) to restart it"
            )
        if not target.running:
            check_orphans(service, self.orphans())
            check_resources(service, await self.ops.preflight())
        return await self.ops.start_container(target, grace=grace or service.stop_grace)

    async def replace(
        self,
        run: Run | None,
        boot_id: str | None,
        fresh: Fresh,
        *,
        grace: float,
        wait: bool = True,
        container: ContainerState | None = None,
    ) -> AsyncIterator[Step]:
        """Kill ``run`` (when there is one), then relaunch — only when the kill ended
        cleanly; else the last step is the replace's own :class:`Finished`, not ok.

        A container service without ``launch:`` restarts the ``container`` run confirmed
        (``docker restart``, after its identity is checked again) in one step."""
        if self.service.container is not None and self.service.launch is None:
            steps = self.relaunch(fresh, wait=wait, container=container, grace=grace, restart=True)
            async for step in steps:
                yield step
            return
        running = container is not None and container.found and container.running
        if run is not None or running:
            stopped: Finished | None = None
            async for step in self.kill(run, boot_id, grace=grace, container=container):
                if isinstance(step, Finished):
                    stopped = step
                yield step
            if stopped is None or not stopped.ok:
                outcome = stopped.kill if stopped is not None else None
                yield Finished("replace", False, NOT_STOPPED, NOT_DONE, kill=outcome)
                return
        async for step in self.relaunch(fresh, wait=wait):
            yield step
