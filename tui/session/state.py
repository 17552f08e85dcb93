"""What babysit knows of one host's probe loop at an instant: a pure value.

``reports`` are from the last answer that came (``answered_at``); a failure
keeps them, to be drawn as old. Invariant: ``failure`` and ``retry_at`` are set
together, and only after a failed round trip; ``asking_since`` is set while a
round trip is on its way. ``took``: seconds the last round trip took, answered or
failed (None before any). Times are the watching side's clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from tui.core.report import ServiceReport
from tui.core.verdicts import Verdict


@dataclass(frozen=True)
class HostState:
    reports: Mapping[str, ServiceReport] = field(default_factory=lambda: MappingProxyType({}))
    answered_at: float | None = None
    asking_since: float | None = None
    failure: str | None = None
    retry_at: float | None = None
    failures: int = 0
    took: float | None = None

    def asking(self, now: float) -> HostState:
        return dataclasses.replace(self, asking_since=now)

    def answered(self, reports: Sequence[ServiceReport], now: float) -> HostState:
        by_name = MappingProxyType({r.assessment.service: r for r in reports})
        return HostState(reports=by_name, answered_at=now, took=self._took(now))

    def failed(self, reason: str, now: float, retry_in: float) -> HostState:
        return dataclasses.replace(
            self,
            asking_since=None,
            failure=reason,
            retry_at=now + retry_in,
            failures=self.failures + 1,
            took=self._took(now),
        )

    def _took(self, now: float) -> float | None:
        return None if self.asking_since is None else max(0.0, now - self.asking_since)


def probe_failure(reports: Sequence[ServiceReport]) -> str | None:
    """Why the round trip failed, or None if the host answered.

    A report of a round trip that failed (the host could not be reached, or the
    agent did not run) is UNKNOWN and carries no log facts: the agent reports a
    log state for every service it saw, even a missing one.
    """
    if not reports or not all(
        r.assessment.verdict is Verdict.UNKNOWN and r.assessment.log is None for r in reports
    ):
        return None
    return reports[0].assessment.summary.removeprefix("cannot tell: ")
