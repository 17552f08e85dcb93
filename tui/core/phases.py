"""Where a starting run is in its startup, how long the service's last run took there,
and when this one should be ready.

Everything rests on this run's own bytes and on the host's run history:

* The agent finds, past the run's anchor, the first line of each of the engine's
  phases (:class:`~tui.engines.spec.Phase`) and the last progress figures printed in
  it (shard 3 of 8): one :class:`PhaseMark` each, in the order the log shows them.
* The agent keeps each run's phase start times in the service's run history on the
  host (``startups.json`` beside its run records): a :class:`StartupRecord` per run,
  the newest last. A later run of the same service reads the last one that reached
  ready, on whatever boot.

:func:`startup` is pure: the same marks, history and ``now`` give the same
:class:`Startup`. Phases are named by the engine's spec, and two more by this module:
:data:`LAUNCHING` (from the process's start to the first phase line) and
:data:`READY` (from the ready line on).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tui.core.answers import Fields
from tui.core.units import duration_words

#: From the process's start to its first phase line.
LAUNCHING = "launching"
#: From the ready line on.
READY = "ready"
#: A phase that has run more than this many times its last run's duration is said...
OVERDUE_FACTOR = 2.0
#: ...once it has also run this many seconds past that duration: lines are stamped to
#: the second, so a phase of 1 s that took 3 s is the stamps' rounding, not a hang.
OVERDUE_MARGIN = 5.0


@dataclass(frozen=True)
class PhaseMark:
    """The first line of one phase past this run's anchor, as the agent found it.

    ``at``: when it began (host epoch seconds), from the line's stamp, else the stamp of
    the last stamped line before it, else when the agent first saw it (``dated`` says
    which: ``stamp``, ``before`` or ``seen``); None when none is known. ``done`` and
    ``total``: the last progress figures printed in the phase (shard 3 of 8)."""

    name: str
    offset: int
    at: float | None = None
    dated: str = "stamp"
    done: int | None = None
    total: int | None = None

    @classmethod
    def from_json(cls, data: Fields) -> PhaseMark:
        return cls(
            name=data.string("name"),
            offset=data.integer("offset"),
            at=data.opt_time("at"),
            dated=data.opt_string("dated") or "stamp",
            done=data.opt_integer("done"),
            total=data.opt_integer("total"),
        )


@dataclass(frozen=True)
class StartupRecord:
    """One run's startup as the host's run history keeps it: when the process started,
    when each phase began (in order, :data:`LAUNCHING` left out) and when it was ready."""

    boot_id: str
    pid: int
    start_ticks: int
    started: float
    phases: tuple[tuple[str, float], ...] = ()
    ready_at: float | None = None

    @property
    def identity(self) -> tuple[str, int, int]:
        return (self.boot_id, self.pid, self.start_ticks)

    def durations(self) -> dict[str, float]:
        """Seconds spent in each phase, :data:`LAUNCHING` included; the last phase's
        only when the run reached ready. Empty for a run that never did."""
        if self.ready_at is None:
            return {}
        starts = [(LAUNCHING, self.started), *self.phases, (READY, self.ready_at)]
        spent: dict[str, float] = {}
        for (name, began), (_, ended) in itertools.pairwise(starts):
            spent[name] = spent.get(name, 0.0) + max(0.0, ended - began)
        return spent

    @classmethod
    def from_json(cls, data: Fields) -> StartupRecord:
        phases = []
        for pair in data.children("phases"):
            phases.append((pair.string("name"), pair.time("at")))
        return cls(
            boot_id=data.opt_string("boot_id") or "",
            pid=data.integer("pid"),
            start_ticks=data.integer("start_ticks"),
            started=data.time("started"),
            phases=tuple(phases),
            ready_at=data.opt_time("ready_at"),
        )


@dataclass(frozen=True)
class Startup:
    """Where one run is in its startup at ``now``.

    ``phase`` began at ``since`` (:data:`READY` once the run serves). ``passed``: this
    run's phases so far, (name, began), :data:`LAUNCHING` first. ``last``: seconds the
    service's last run that reached ready spent in each phase (empty when none is
    kept). ``eta``: when this run should be ready by those durations (None: ready, or
    nothing to go by). ``overdue``: the last run's duration of this phase, set when this
    one has run more than :data:`OVERDUE_FACTOR` times it (and :data:`OVERDUE_MARGIN`
    seconds past it)."""

    phase: str
    since: float | None
    passed: tuple[tuple[str, float | None], ...] = ()
    done: int | None = None
    total: int | None = None
    last: Mapping[str, float] = field(default_factory=dict)
    eta: float | None = None
    overdue: float | None = None

    @property
    def ready(self) -> bool:
        return self.phase == READY

    def to_json(self, iso: Callable[[float | None], str | None]) -> dict[str, object]:
        """The ``ready`` object's startup keys of ``babysit status --json``."""
        return {
            "phase": self.phase,
            "phase_since": iso(self.since),
            "eta": iso(self.eta),
            "progress": (
                {"done": self.done, "total": self.total} if self.total is not None else None
            ),
            "phases": [{"name": n, "since": iso(at)} for n, at in self.passed],
            "last_run_s": dict(self.last) or None,
            "overdue": (
                {"last_s": self.overdue, "factor": OVERDUE_FACTOR}
                if self.overdue is not None
                else None
            ),
        }


def startup(
    *,
    started: float,
    marks: Sequence[PhaseMark],
    ready_at: float | None,
    ready: bool,
    history: Sequence[StartupRecord],
    identity: tuple[str, int, int] | None,
    now: float,
) -> Startup:
    """Where the run that started at ``started`` is at ``now``.

    ``marks``: its phase lines in log order; ``ready``/``ready_at``: whether (and when)
    its ready line was seen; ``history``: the service's run history (this run's own
    record, named by ``identity``, is never its own yardstick)."""
    passed: list[tuple[str, float | None]] = [(LAUNCHING, started)]
    seen: set[str] = set()
    for mark in marks:
        if mark.name in seen:
            continue
        seen.add(mark.name)
        passed.append((mark.name, _not_before(mark.at, passed)))
    last = _last_durations(history, identity)
    if ready:
        since = ready_at if ready_at is not None else passed[-1][1]
        return Startup(READY, since, tuple(passed), last=last)
    phase, since = passed[-1]
    mark = next((m for m in reversed(marks) if m.name == phase), None)
    done, total = (mark.done, mark.total) if mark is not None else (None, None)
    eta = overdue = None
    if last:
        elapsed = max(0.0, now - since) if since is not None else 0.0
        spent = last.get(phase)
        if spent is not None and elapsed > max(OVERDUE_FACTOR * spent, spent + OVERDUE_MARGIN):
            overdue = spent
        eta = now + _remaining(phase, elapsed, {n for n, _ in passed}, last)
    return Startup(phase, since, tuple(passed), done, total, last, eta, overdue)


def _not_before(at: float | None, passed: Sequence[tuple[str, float | None]]) -> float | None:
    """A phase never begins before the one the log shows ahead of it (stamps of whole
    seconds, a clock step): its start is the later of the two."""
    before = [t for _, t in passed if t is not None]
    if at is None or not before:
        return at
    return max(at, before[-1])


def _last_durations(
    history: Sequence[StartupRecord], identity: tuple[str, int, int] | None
) -> dict[str, float]:
    """The durations of the newest other run of the history that reached ready."""
    for record in reversed(history):
        if record.identity == identity:
            continue
        spent = record.durations()
        if spent:
            return spent
    return {}


def _remaining(phase: str, elapsed: float, passed: set[str], last: Mapping[str, float]) -> float:
    """Seconds to ready by the last run: what is left of this phase (none once it ran
    past its last duration) and each phase the last run went through after it that this
    run has not passed (all of them, for a phase the last run did not have)."""
    left = max(0.0, last.get(phase, 0.0) - elapsed)
    names = list(last)
    later = names[names.index(phase) + 1 :] if phase in names else names
    return left + sum(last[n] for n in later if n not in passed)


def startup_words(s: Startup, now: float, clock: Callable[[float], str]) -> str:
    """``loading weights (shard 3 of 8) for 2m 10s; ready by about 14:05 (the last run
    took 4m 30s here)``, or the overdue note: ``loading weights has run 9m 12s, more
    than twice the 4m 30s the last run took``. ``clock`` writes a host time."""
    if s.ready:
        return READY
    progress = f" ({s.done} of {s.total})" if s.total is not None and s.done is not None else ""
    elapsed = duration_words(max(0.0, now - s.since)) if s.since is not None else None
    head = f"{s.phase}{progress}" + (f" for {elapsed}" if elapsed else "")
    if s.overdue is not None and elapsed:
        return (
            f"{s.phase}{progress} has run {elapsed}, more than {_times(OVERDUE_FACTOR)} the "
            f"{duration_words(s.overdue)} the last run took"
        )
    if s.eta is None:
        return head
    spent = s.last.get(s.phase)
    took = f" (the last run took {duration_words(spent)} here)" if spent else ""
    return f"{head}; ready by about {clock(s.eta)}{took}"


def _times(factor: float) -> str:
    return "twice" if factor == 2.0 else f"{factor:g} times"
