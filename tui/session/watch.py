"""One host's probe loop: one round trip for the services someone watches, again and again.

A :class:`HostWatch` is the one place where a probe's failure is handled. An
unreachable host, an agent that failed, an answer that did not come within the
timeout, and a probe or a report that raised (a bug in babysit) all end the same
way: the host's state turns failed with the reason in plain words, every view of
it shows UNKNOWN with that reason and when babysit asks again, and the loop asks
again after a backoff (see :mod:`tui.session.retry`). Nothing it does can leave an
old verdict standing as a live one.

Views say what they watch (:meth:`HostWatch.want`): the loop asks only for those
services, and waits while nobody watches any.

A watched service with ``canary.every`` gets a canary (:mod:`tui.session.canary`)
every that many seconds, sent by the loop after an answer that shows a run to ask:
one at a time per service, none while the host does not answer, and the period kept
after a canary that failed. Its result is the service's facts', and the views are
told when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from tui.config import Host, Service
from tui.core.report import ProbeDetails, ServiceReport
from tui.core.runs import Assessment, unknown
from tui.session.canary import CanaryBusy, run_canary, target
from tui.session.retry import failure_reason, retry_delay
from tui.session.state import HostState, probe_failure

if TYPE_CHECKING:
    from tui.session.service import ServiceSession

#: One round trip to a host: each service's verdict and the probe's raw extras, given
#: the bytes of each log's end to bring back (by service name).
Probe = Callable[
    [Host, Sequence[Service], Mapping[str, int]], Awaitable[list[tuple[Assessment, ProbeDetails]]]
]
Listener = Callable[["HostWatch"], None]

#: Seconds between two round trips (a round trip re-arms only once answered).
REFRESH_INTERVAL = 2.0
#: Seconds a host may take to answer before its services turn UNKNOWN.
ANSWER_TIMEOUT = 10.0


class HostWatch:
    """The probe loop of ``host`` for its :class:`ServiceSession` objects."""

    def __init__(
        self,
        host: Host,
        probe: Probe,
        sessions: Mapping[str, ServiceSession],
        *,
        clock: Callable[[], float] = time.time,
        interval: float = REFRESH_INTERVAL,
        timeout: float | None = ANSWER_TIMEOUT,
    ) -> None:
        self.host = host
        self.sessions = sessions
        self.clock = clock
        self.interval = interval
        self.timeout = timeout
        self.state = HostState()
        #: Round trips that ended so far (answered or failed).
        self.answers = 0
        self._probe = probe
        self._lock = asyncio.Lock()
        self._wants: dict[object, frozenset[str]] = {}
        self._listeners: list[Listener] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Per service: its ``canary.every`` canary on its way, and when the next is due.
        self._canaries: dict[str, asyncio.Task[None]] = {}
        self._canary_due: dict[str, float] = {}

    # ------------------------------------------------------------------ who watches

    @property
    def wanted(self) -> list[Service]:
        """The services some view watches, in the host's order."""
        names = frozenset().union(*self._wants.values()) if self._wants else frozenset()
        return [s for name, s in self.host.services.items() if name in names]

    def want(self, viewer: object, names: Sequence[str]) -> None:
        """``viewer`` watches ``names`` (replacing what it watched); the loop asks now
        when that adds a service nobody watched."""
        before = {s.name for s in self.wanted}
        self._wants[viewer] = frozenset(names)
        if not frozenset(names) <= before:
            self.wake()

    def drop(self, viewer: object) -> None:
        self._wants.pop(viewer, None)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` at each change of :attr:`state`; returns how to stop."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def wake(self) -> None:
        """Ask again now instead of at the end of the wait."""
        self._wake.set()

    # ------------------------------------------------------------------ the loop

    def start(self) -> None:
        """Run the loop (on the running event loop) until :meth:`stop`."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"watch {self.host.name}"
            )

    @property
    def running(self) -> bool:
        """Whether the loop runs (it asks again after a failure)."""
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        task, self._task = self._task, None
        canaries, self._canaries = list(self._canaries.values()), {}
        for each in (task, *canaries):
            if each is not None:
                each.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await each

    async def _run(self) -> None:
        while True:
            while not self.wanted:
                self._wake.clear()
                await self._wake.wait()
            self._wake.clear()
            try:
                await self.refresh(self.wanted)
            except Exception as error:  # a bug in the loop itself: said, and asked again
                self._failed(failure_reason(error))
            self._send_canaries()
            delay = self.interval
            if self.state.failure is not None and self.state.retry_at is not None:
                delay = max(0.0, self.state.retry_at - self.clock())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def refresh(self, services: Sequence[Service] | None = None) -> HostState:
        """One round trip now for ``services`` (default: those watched); the state after it.

        Round trips are one at a time, so an older answer never replaces a newer one."""
        chosen = list(services if services is not None else self.wanted)
        async with self._lock:
            self.state = self.state.asking(self.clock())
            self._tell()
            failure: str | None
            reports: list[ServiceReport] = []
            try:
                tails = {s.name: self.sessions[s.name].tail_to_ask() for s in chosen}
                # None: no limit but the link's own (a verb that asks once waits for the
                # host's connect_timeout and the probe's own timeout, as long as they say).
                pairs = await asyncio.wait_for(self._probe(self.host, chosen, tails), self.timeout)
                for service, (a, details) in zip(chosen, pairs, strict=True):
                    reports.append(self._observe(service, a, details))
                    # A first answer holds up to 256 KiB of log per service: let the
                    # screen draw and take keys between two services' lines.
                    await asyncio.sleep(0)
            except asyncio.TimeoutError:
                failure = f"no answer within {self.timeout:g} s"
            except Exception as error:  # said in every view and retried, never a dead loop
                failure = failure_reason(error)
            else:
                failure = probe_failure(reports)
            self.answers += 1
            if failure is None:
                self.state = self.state.answered(reports, self.clock())
                self._tell()
            else:
                self._failed(failure)
            return self.state

    def _send_canaries(self) -> None:
        """Start the canary of each watched service whose ``canary.every`` is due."""
        if self.state.failure is not None:
            return  # the host does not answer: nothing to ask it
        now = self.clock()
        for service in self.wanted:
            every = service.canary.every
            report = self.state.reports.get(service.name)
            if every is None or report is None or now < self._canary_due.get(service.name, now):
                continue
            session = self.sessions[service.name]
            if session.canary_running or target(report.assessment) is None:
                continue
            self._canary_due[service.name] = now + every
            self._canaries[service.name] = asyncio.get_running_loop().create_task(
                self._canary(session, report.assessment), name=f"canary {service.label}"
            )

    async def _canary(self, session: ServiceSession, assessment: Assessment) -> None:
        """One ``canary.every`` canary; the views are told when it ends."""
        with contextlib.suppress(CanaryBusy):  # one from the c key went first
            await run_canary(session, assessment=assessment)
        self._canaries.pop(session.service.name, None)
        self._tell()

    def _observe(self, service: Service, a: Assessment, details: ProbeDetails) -> ServiceReport:
        session = self.sessions[service.name]
        try:
            return session.observe(a, details)
        except Exception as error:  # what a host said broke babysit: UNKNOWN, and why
            reason = (
                f"babysit could not read what {self.host.name} said of it "
                f"({type(error).__name__}: {error}); this is a bug in babysit"
            )
            return session.observe(unknown(self.host.name, service.name, reason, a.checked_at))

    def _failed(self, reason: str) -> None:
        delay = retry_delay(self.state.failures + 1, self.interval)
        self.state = self.state.failed(reason, self.clock(), delay)
        self._tell()

    def _tell(self) -> None:
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:  # noqa: S112 - a view's bug must not stop the loop others read
                continue
