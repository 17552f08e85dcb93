"""One watched service: its facts, its report, its actions.

A :class:`ServiceSession` is shared by every view of the service in one babysit
process: the fleet's row and the host screen render the same report, made by the
same :class:`~tui.core.report.ServiceFacts` from the same log. The probe loop of
its host (:class:`~tui.session.watch.HostWatch`) feeds it probe answers; a host
screen's follower feeds it the lines it reads (:meth:`ServiceSession.feed_rows`).

How much of the log each probe brings back is decided here, the same for every
view: the first answer reads :data:`~tui.remote.probe.REPORT_TAIL` of the log's
end; later ones read :data:`FOLLOW_UP_TAIL` (lines already read are skipped by
offset), or nothing while a follower feeds every line. Lines a follower reads
before that first answer wait for it, so the first tail is read in order.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tui.config import Host, Service
from tui.core.gpu import Orphan
from tui.core.logcursor import EventKind, EventRow, LogLine, Row
from tui.core.report import ProbeDetails, ServiceFacts, ServiceReport
from tui.core.runs import Assessment, unknown
from tui.ops.actions import ServiceActions
from tui.remote.probe import REPORT_TAIL
from tui.session.state import HostState

if TYPE_CHECKING:
    from tui.ops.hostops import HostOps
    from tui.remote.transport import Transport
    from tui.session.watch import HostWatch

#: Bytes of the log's end later probes read, for a session no follower feeds.
FOLLOW_UP_TAIL = 16 * 1024
#: Events of a follower after which a file's lines are read afresh.
CUT = frozenset({EventKind.TRUNCATED})
#: Round trips that may ask for the first (long) tail before babysit asks for less.
FIRST_TAIL_ASKS = 2
#: Followed lines kept while the first probe answer is awaited.
MAX_WAITING_ROWS = 20_000


class ServiceSession:
    """``service`` on ``host``, watched by :attr:`watch`."""

    def __init__(self, host: Host, service: Service, facts: ServiceFacts, ops: HostOps) -> None:
        self.host = host
        self.service = service
        self.facts = facts
        #: Kill, relaunch and the readiness wait on this service's host.
        self.ops = ops
        self.watch: HostWatch | None = None
        #: The host's transport (a canary is asked through it; None: not asked here).
        self.transport: Transport | None = None
        #: Whether a canary of this service is on its way (one at a time).
        self.canary_running = False
        #: Followers feeding this session's lines now.
        self.followers = 0
        #: Lines a follower read are held until the first answer (then fed after its tail).
        self._seeded = False
        #: Whether an answer has brought back the first tail of the log.
        self._tail_read = False
        self._first_tail_asks = 0
        self._waiting: list[LogLine] = []

    @property
    def label(self) -> str:
        return self.service.label

    def tail_to_ask(self) -> int:
        """Bytes of the log's end to ask for in the next round trip: the first tail until
        an answer brought it (asked :data:`FIRST_TAIL_ASKS` times at most, so a slow
        link that cannot carry it still gets answers), then what is new."""
        if not self._tail_read and self._first_tail_asks < FIRST_TAIL_ASKS:
            self._first_tail_asks += 1
            return REPORT_TAIL
        return 0 if self.followers else FOLLOW_UP_TAIL

    @property
    def state(self) -> HostState:
        return self.watch.state if self.watch is not None else HostState()

    def observe(self, assessment: Assessment, details: ProbeDetails | None = None) -> ServiceReport:
        """A probe's answer for this service; the report it makes."""
        waiting: list[LogLine] = []
        if assessment.log is not None:  # a real answer: its tail first, then what waited
            self._seeded = self._tail_read = True
            waiting, self._waiting = self._waiting, []
        return self.facts.observe(assessment, details or ProbeDetails(), waiting)

    def feed_rows(self, rows: Sequence[Row]) -> int:
        """Lines a follower read; how many gave a metric sample."""
        for row in rows:
            if isinstance(row, EventRow) and row.event.kind in CUT:
                inode = row.event.data.get("inode")
                if isinstance(inode, int):
                    self.facts.file_cut(inode)
        lines = [row for row in rows if isinstance(row, LogLine)]
        if not self._seeded:
            self._waiting.extend(lines)
            if len(self._waiting) <= MAX_WAITING_ROWS:
                return 0
            self._seeded = True  # the first answer is late: read on without it
            lines, self._waiting = self._waiting, []
        return self._feed(lines)

    def _feed(self, lines: Sequence[LogLine]) -> int:
        known = self.facts.utc_offset
        utc_offset = known if known is not None else time.localtime().tm_gmtoff
        return sum(self.facts.feed_line(line, utc_offset=utc_offset) for line in lines)

    def report(self, now: float) -> ServiceReport:
        """The report at ``now``: the latest verdict and the facts aged to ``now``.

        After a failed round trip the verdict is UNKNOWN with the reason; the series stay,
        each with its age, and what only the last answer could say (the launch diff, GPU
        use, the hints) is not shown as if it still held."""
        report = self.facts.report(now)
        state = self.state
        if state.failure is not None:
            reason = state.failure
            if self.watch is not None and self.watch.running:
                wait = max(0.0, (state.retry_at or now) - now)
                reason = f"{reason}; asking again in {wait:.0f} s"
            failed = unknown(self.host.name, self.service.name, reason, now)
            report = replace(report, assessment=failed, launch=None, gpus=None, hints=())
        return report

    def actions(self, actor: str) -> ServiceActions:
        """Kill, relaunch and replace of this service, audited as done by ``actor``
        (``cli`` or ``screen``)."""
        return ServiceActions(self.ops, self.host, self.service, actor=actor, orphans=self.orphans)

    def orphans(self) -> tuple[Orphan, ...]:
        """The orphans on the service's GPUs in the latest answer."""
        gpus = self.facts.report(self.watch.clock() if self.watch else time.time()).gpus
        return gpus.orphans if gpus is not None and self.state.failure is None else ()

    async def fresh(self) -> Assessment:
        """Ask the host now (one round trip for this service); the verdict it gives."""
        if self.watch is None:
            raise RuntimeError(f"{self.label}: no probe loop")
        state = await self.watch.refresh([self.service])
        if state.failure is not None:
            return unknown(self.host.name, self.service.name, state.failure, self.watch.clock())
        return state.reports[self.service.name].assessment
