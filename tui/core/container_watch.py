"""A service's container over the probes of a watch: its runs, restarts and removal.

:class:`ContainerWatch` is what a service's facts remember of its container between
probes: the run the series count as current, the latest answer that found it (a
``--rm`` container is gone once it exits), and its :class:`RestartWatch`, which
keeps, per container id, each change of ``RestartCount`` the probes saw (the latest
:data:`RESTARTS_REMEMBERED`), so the crash-loop hint can say how many times the
container restarted and how often. A container the runtime restarts on its own
(``--restart always``/``unless-stopped``/``on-failure``) keeps its id and counts up;
a count that goes down (the container started by hand) begins the watch again.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from tui.core.assess_container import removed_at_exit
from tui.core.containers import ContainerIdentity, ContainerState
from tui.core.runs import Assessment

#: Changes of RestartCount remembered per watched container.
RESTARTS_REMEMBERED = 32
#: Restarts within this many seconds of the latest one make a loop.
LOOP_WINDOW = 600.0


@dataclass(frozen=True)
class RestartSeen:
    """A probe saw the container at ``count`` restarts, its run started at ``started_at``."""

    count: int
    started_at: float | None
    seen_at: float

    @property
    def at(self) -> float:
        """When this run began (its StartedAt, else when the probe saw it)."""
        return self.started_at if self.started_at is not None else self.seen_at


@dataclass(frozen=True)
class Restarts:
    """``restarts`` restarts of one container in ``span`` seconds (None: unknown); ``seen``:
    the probes' readings the count rests on (empty when read from one answer)."""

    restarts: int
    span: float | None
    seen: tuple[RestartSeen, ...]


class RestartWatch:
    """The RestartCount of one service's container over the probes."""

    def __init__(self, limit: int = RESTARTS_REMEMBERED) -> None:
        self._id = ""
        self._seen: deque[RestartSeen] = deque(maxlen=limit)

    def observe(self, c: ContainerState, seen_at: float) -> None:
        """One probe's answer about the container (one that does not find it changes nothing)."""
        if not c.found or not c.id:
            return
        if c.id != self._id:
            self._id = c.id
            self._seen.clear()
        last = self._seen[-1] if self._seen else None
        if last is not None and c.restart_count < last.count:
            self._seen.clear()  # started by hand: the runtime counts from 0 again
        elif last is not None and (last.count, last.started_at) == (
            c.restart_count,
            c.started_at,
        ):
            return
        self._seen.append(RestartSeen(c.restart_count, c.started_at, seen_at))

    def restarts(self, c: ContainerState, now: float) -> Restarts | None:
        """How often the container restarted lately: the climb of RestartCount the probes
        saw within :data:`LOOP_WINDOW`, or, for a container restarting now, its count
        since it was created. None when neither says it restarts."""
        if c.found and c.id == self._id and self._seen:
            latest = self._seen[-1]
            if now - latest.at <= LOOP_WINDOW:
                recent = [s for s in self._seen if latest.at - s.at <= LOOP_WINDOW]
                base = recent[0]
                if latest.count > base.count:
                    return Restarts(latest.count - base.count, latest.at - base.at, tuple(recent))
        if c.found and c.restarting and c.restart_count > 0:
            span = None
            if c.started_at is not None and c.created is not None and c.started_at > c.created:
                span = c.started_at - c.created
            return Restarts(c.restart_count, span, ())
        return None


@dataclass(frozen=True)
class ContainerNotes:
    """What a service's facts know of its container at one report, for the hints.

    ``state``: the latest answer; ``last_found``: the latest answer that found the
    container, and when (``last_found_at``); ``restarts``: from :class:`RestartWatch`.
    """

    state: ContainerState
    last_found: ContainerState | None
    last_found_at: float | None
    restarts: Restarts | None
    utc_offset: int
    now: float


class ContainerWatch:
    """What one service's facts remember of its container between probes."""

    def __init__(self) -> None:
        self.restarts = RestartWatch()
        #: The container's run the series count as the current one.
        self._run: ContainerIdentity | None = None
        #: The latest answer that found the container, and when.
        self._seen: tuple[ContainerState, float] | None = None

    def observe(self, a: Assessment) -> Assessment:
        """Keep what this answer says of the container; an absent container that ran
        with --rm is told as removed at its exit."""
        c = a.container
        if c is None:
            return a
        self.restarts.observe(c, a.checked_at)
        if c.found:
            self._seen = (c, a.checked_at)
        elif c.absent and self._seen is not None:
            seen, seen_at = self._seen
            if seen.auto_remove and seen.ref == c.ref:
                return removed_at_exit(a, seen, seen_at)
        return a

    def new_run(self, a: Assessment) -> bool:
        """Whether the answer names another run of the container than the last one
        (another id, StartedAt or RestartCount); the first one seen is not another."""
        identity = a.container.identity if a.container is not None else None
        if identity is None:
            return False
        before, self._run = self._run, identity
        return before is not None and before != identity

    def notes(self, a: Assessment, now: float) -> ContainerNotes | None:
        """What the hints know of the container at ``now`` (None: no container service)."""
        c = a.container
        if c is None:
            return None
        seen, seen_at = self._seen if self._seen is not None else (None, None)
        return ContainerNotes(c, seen, seen_at, self.restarts.restarts(c, now), a.utc_offset, now)
