"""Sessions with stand-in seams, for screens that must draw the same on every run.

:class:`StandIns` is the one factory app tests build from: real sessions, real
facts and real probe loops, with any of the four seams replaced — the host's
answers (an Assessment, or an (Assessment, ProbeDetails) pair, per service), the
follower, the actions, the transport.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence

from tui.config import Host, Service
from tui.core.logcursor import LogCursor
from tui.core.report import ProbeDetails
from tui.core.runs import Assessment
from tui.ops.hostops import HostOps
from tui.remote.transport import Transport
from tui.session.service import ServiceSession
from tui.session.sessions import RowSource, Sessions

Answer = Assessment | tuple[Assessment, ProbeDetails]
Answers = Callable[[Host, Sequence[Service]], Sequence[Answer] | Awaitable[Sequence[Answer]]]
FollowerOf = Callable[[ServiceSession, LogCursor | None, int | None], RowSource]


class StandIns(Sessions):
    def __init__(
        self,
        *,
        answers: Answers | None = None,
        follower: FollowerOf | None = None,
        ops: Callable[[Host, Service], HostOps] | None = None,
        transport: Transport | None = None,
        **kwargs: object,
    ) -> None:
        if transport is not None:
            kwargs["transport_factory"] = lambda host, links: transport
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._answers = answers
        self._follower = follower
        self._ops = ops

    async def probe(
        self, host: Host, services: Sequence[Service], tails: Mapping[str, int]
    ) -> list[tuple[Assessment, ProbeDetails]]:
        if self._answers is None:
            return await super().probe(host, services, tails)
        got = self._answers(host, services)
        if inspect.isawaitable(got):
            got = await got
        return [a if isinstance(a, tuple) else (a, ProbeDetails()) for a in got]

    def follower(
        self, session: ServiceSession, *, cursor: LogCursor | None = None, pid: int | None = None
    ) -> RowSource:
        if self._follower is None:
            return super().follower(session, cursor=cursor, pid=pid)
        return self._follower(session, cursor, pid)

    def ops(self, host: Host, service: Service) -> HostOps:
        if self._ops is None:
            return super().ops(host, service)
        return self._ops(host, service)
