"""Every service session of one babysit process, and the connections they share.

:class:`Sessions` is the one factory the CLI, the app and the tests build views
from. It opens one transport per host (SSH connections are shared per endpoint),
one long-lived probe agent per host, one :class:`HostWatch` per host and one
:class:`ServiceSession` per service, each made once and shared by every view.
Its four seams — :meth:`Sessions.probe`, :meth:`Sessions.follower`,
:meth:`Sessions.ops` and :meth:`Sessions.transport` — are where a test puts a
stand-in (fixed rows, fixed answers, an action that never changes between runs).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Protocol

from tui.config import Host, Service
from tui.core.follow import FileInfo, Start
from tui.core.logcursor import LogCursor, Row
from tui.core.report import ProbeDetails, ServiceFacts
from tui.core.runs import Assessment
from tui.ops.hostops import HostOps, TransportOps
from tui.ops.relaunch import DEFAULT_TIMEOUT
from tui.remote import SshLinks, Transport, open_transport
from tui.remote.follow import Follower
from tui.remote.probe import APPS_MAX_AGE, ProbeChannel, probe_services
from tui.session.service import ServiceSession
from tui.session.watch import ANSWER_TIMEOUT, REFRESH_INTERVAL, HostWatch

#: Lines a host screen shows from before it opened.
DEFAULT_TAIL = 500

TransportFactory = Callable[[Host, SshLinks], Transport]


def service_follower(
    transport: Transport,
    service: Service,
    *,
    start: Start,
    pid: int | None = None,
    follow: bool = True,
) -> Follower:
    """A follower of ``service``'s log: the file at its ``log:``, or, for a container
    service without one, the container's own log (its json-file, or ``docker logs``)."""
    ref = service.container
    return Follower(
        transport,
        service.log or None,
        label=service.label,
        start=start,
        pid=pid,
        follow=follow,
        container=(ref.name, ref.runtime) if ref is not None and not service.log else None,
    )


class RowSource(Protocol):
    """What a view needs from a follower (:class:`tui.remote.follow.Follower`)."""

    @property
    def file(self) -> FileInfo | None: ...

    def rows(self) -> AsyncIterator[list[Row]]: ...


class Sessions:
    """The sessions of one babysit process; :meth:`close` ends their agents and links."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        interval: float = REFRESH_INTERVAL,
        timeout: float | None = ANSWER_TIMEOUT,
        transport_factory: TransportFactory = open_transport,
        tail: int = DEFAULT_TAIL,
        long_lived: bool = True,
        wait_timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.clock = clock
        self.interval = interval
        #: Seconds a round trip may take before its services turn UNKNOWN; None leaves
        #: it to the link's own limits (connect_timeout, the probe's timeout).
        self.timeout = timeout
        #: Lines a follower shows from before it started.
        self.tail = tail
        #: One probe agent per host asked again at each refresh (a screen), or one
        #: agent per round trip (a verb that asks once).
        self.long_lived = long_lived
        #: Seconds a readiness wait after a launch waits.
        self.wait_timeout = wait_timeout
        self.links = SshLinks()
        self._transport_factory = transport_factory
        self._transports: dict[str, Transport] = {}
        self._channels: dict[str, ProbeChannel] = {}
        self._watches: dict[str, HostWatch] = {}
        self._sessions: dict[tuple[str, str], ServiceSession] = {}

    # ------------------------------------------------------------------ what is shared

    def transport(self, host: Host) -> Transport:
        """One transport per host (building it connects nothing yet)."""
        if host.name not in self._transports:
            self._transports[host.name] = self._transport_factory(host, self.links)
        return self._transports[host.name]

    def watch(self, host: Host) -> HostWatch:
        """The probe loop of ``host`` (started by the first view that watches it)."""
        if host.name not in self._watches:
            sessions: dict[str, ServiceSession] = {}
            watch = HostWatch(
                host,
                self.probe,
                sessions,
                clock=self.clock,
                interval=self.interval,
                timeout=self.timeout,
            )
            self._watches[host.name] = watch
            for service in host.services.values():
                sessions[service.name] = self.session(host, service)
        return self._watches[host.name]

    def session(self, host: Host, service: Service) -> ServiceSession:
        key = (host.name, service.name)
        if key not in self._sessions:
            facts = ServiceFacts.of(host.name, service)
            session = ServiceSession(host, service, facts, self.ops(host, service))
            self._sessions[key] = session
            session.transport = self.transport(host)
            session.watch = self.watch(host)
        return self._sessions[key]

    # ------------------------------------------------------------------ the seams

    async def probe(
        self, host: Host, services: Sequence[Service], tails: Mapping[str, int]
    ) -> list[tuple[Assessment, ProbeDetails]]:
        """One round trip to ``host`` for ``services``."""
        transport = self.transport(host)
        channel = None
        if self.long_lived:
            if host.name not in self._channels:
                self._channels[host.name] = ProbeChannel(transport)
            channel = self._channels[host.name]
        return await probe_services(
            transport,
            host,
            services,
            tail_bytes=tails,
            gpus=True,
            channel=channel,
            apps_max_age=APPS_MAX_AGE if self.long_lived else 0.0,
        )

    def follower(
        self,
        session: ServiceSession,
        *,
        cursor: LogCursor | None = None,
        pid: int | None = None,
    ) -> RowSource:
        """A follower of the session's log (:func:`service_follower`): from :attr:`tail`
        lines back, from ``cursor`` (a new run's anchor), or of the file ``pid`` writes."""
        start = Start(cursor=cursor) if cursor is not None else Start(tail=self.tail)
        return service_follower(self.transport(session.host), session.service, start=start, pid=pid)

    def ops(self, host: Host, service: Service) -> HostOps:
        return TransportOps(self.transport(host), service, wait_timeout=self.wait_timeout)

    # ------------------------------------------------------------------ the end

    async def close(self) -> None:
        for watch in self._watches.values():
            await watch.stop()
        for channel in self._channels.values():
            await channel.close()
        await self.links.close()
