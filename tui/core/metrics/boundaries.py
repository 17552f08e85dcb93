"""Where a run starts in a log and when it is ready; :class:`LogScanner` over a file's lines."""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from tui.core.metrics.model import MetricSample
from tui.core.metrics.parse import MetricsParser, readers_for
from tui.engines import SPECS

#: How far one run's start may move between readings (its boot time read again, the
#: host's clock slewed) before its lines are placed again: past it the clock was stepped.
START_MOVED = 0.5

#: What a marker line says: ``<engine>-args`` (its args line), ``<engine>-start`` (another
#: line printed once per run near its start), ``<engine>-ready``.
ARGS, START, READY = "args", "start", "ready"


class RunEventKind(enum.Enum):
    STARTED = "started"
    READY = "ready"


@dataclass(frozen=True)
class RunEvent:
    """A run started (its startup sequence began) or became ready, at this line.

    ``run`` counts from 1 for the first startup seen in the file; lines before
    any startup belong to run 0. ``marker`` names the line (``sglang-args``,
    ``vllm-start``, ``vllm-ready``), ``engine`` the engine that prints it. ``text`` is
    the marker line, cut at 300 chars.
    """

    kind: RunEventKind
    run: int
    offset: int | None
    ts: datetime | None
    marker: str
    engine: str
    text: str

    def to_json(self) -> dict[str, object]:
        return {
            "event": self.kind.value,
            "run": self.run,
            "offset": self.offset,
            "ts": None if self.ts is None else self.ts.isoformat(),
            "marker": self.marker,
            "engine": self.engine,
            "text": self.text,
        }


@dataclass(frozen=True)
class _Marker:
    """A line that marks a run: the text it holds, whose it is, and what it says."""

    needle: str
    engine: str
    says: str

    @property
    def name(self) -> str:
        return f"{self.engine}-{self.says}"


def _markers(engines: tuple[str, ...]) -> tuple[_Marker, ...]:
    markers: list[_Marker] = []
    for name in engines:
        spec = SPECS[name]
        # the args line, printed once per run (on a line the engine's reader dates: after
        # its prefix, ``…] ``, ``…launcher: `` or a JSON record's stamp)
        markers += [_Marker(head.text, name, ARGS) for head in spec.args_heads]
        markers += [_Marker(text, name, START) for text in spec.run_starts]
    for name in engines:
        markers += [_Marker(text, name, READY) for text in SPECS[name].ready]
    return tuple(markers)


#: The shortest and longest hint: shorter ones are in too many lines, longer cost more.
_HINT_SIZES = range(4, 17)


@functools.cache
def _hints(needles: tuple[str, ...]) -> tuple[str, ...]:
    """Few substrings, one of which each needle holds: greedily, the one held by the
    most needles not yet covered (the longest of those), until all are."""
    left = set(needles)
    hints: list[str] = []
    while left:
        candidates = {
            n[i : i + size] for n in left for size in _HINT_SIZES for i in range(len(n) - size + 1)
        }
        best = max(
            (c for c in candidates if c.strip(" []:,.{(") == c),
            key=lambda c: (sum(c in n for n in left), len(c)),
            default=None,
        )
        if best is None:  # a needle shorter than any hint: it is its own
            best = min(left, key=len)
        hints.append(best)
        left = {n for n in left if best not in n}
    return tuple(hints)


class RunBoundary:
    """Finds where runs start and when they are ready, one line at a time.

    A run starts at a line each run prints exactly once near its start: an
    engine's args line (``] `` and one of its args heads, on a line its reader
    dates) or one of its ``run_starts`` (vLLM's version line). The first such line
    opens run 1; a kind of marker already seen in the current run, or one of
    another engine, opens the next (so vLLM's version line and args line make one
    run, not two). A ready line counts for the engine of the current run only (SGLang
    prints vLLM's ``Application startup complete.`` too, earlier); before any run,
    not on a line that another engine's reader dates and its own does not. Each run
    reports READY at most once.
    """

    def __init__(
        self,
        engine: object = None,
        *,
        line_time: Callable[[str], datetime | None] | None = None,
        parser: MetricsParser | None = None,
    ) -> None:
        name = getattr(engine, "value", engine)
        engines = tuple(s.name for s in readers_for(name if isinstance(name, str) else None))
        self.engine: str | None = engines[0] if len(engines) == 1 else None
        self.run = 0
        self._seen: set[str] = set()
        self._ready = False
        self._parser = parser or MetricsParser(self.engine)
        self._line_time = line_time or self._parser.line_time
        self._own_line_time = line_time is None
        self._markers = _markers(engines)
        #: substrings one of which every marker line holds (a cheap first test)
        self._hints = _hints(tuple(m.needle for m in self._markers))

    def use(self, parser: MetricsParser) -> None:
        """Date and check lines with ``parser`` from here on (the runs seen still count)."""
        self._parser = parser
        if self._own_line_time:
            self._line_time = parser.line_time

    def feed(self, text: str, offset: int | None) -> RunEvent | None:
        """The run event on this line, if it has one. Never raises."""
        marker = self._marker(text)
        if marker is None:
            return None
        if marker.says != READY:
            if self.run and marker.says not in self._seen and marker.engine == self.engine:
                self._seen.add(marker.says)
                return None
            self.run += 1
            self._seen = {marker.says}
            self._ready = False
            self.engine = marker.engine
            kind = RunEventKind.STARTED
        else:
            if self._ready:
                return None
            self._ready = True
            kind = RunEventKind.READY
        return RunEvent(
            kind=kind,
            run=self.run,
            offset=offset,
            ts=self._line_time(text),
            marker=marker.name,
            engine=marker.engine,
            text=text[:300],
        )

    def _marker(self, text: str) -> _Marker | None:
        for hint in self._hints:
            if hint in text:
                break
        else:
            return None
        for marker in self._markers:
            if marker.needle in text and self._plausible(marker, text):
                return marker
        return None

    def _plausible(self, marker: _Marker, text: str) -> bool:
        if marker.says == ARGS:
            return self._parser.line_time_of(marker.engine, text) is not None
        if marker.says == READY:
            if self.engine is not None:
                return marker.engine == self.engine
            return not self._dated_by_another(marker.engine, text)
        return True

    def _dated_by_another(self, engine: str, text: str) -> bool:
        """Whether another engine's reader dates the line and ``engine``'s does not."""
        if self._parser.line_time_of(engine, text) is not None:
            return False
        return any(
            self._parser.line_time_of(other, text) is not None
            for other in {m.engine for m in self._markers}
            if other != engine
        )


class LogScanner:
    """A :class:`MetricsParser` and a :class:`RunBoundary` over the lines of one log.

    ``feed`` returns the line's sample (stamped with the current run) or its run
    event, or None; a line is never both. ``started`` and ``utc_offset`` are the
    :class:`MetricsParser`'s (the run's start, the host's zone); :meth:`place` sets
    them once a probe has told them.
    """

    def __init__(
        self,
        engine: object = None,
        *,
        reference: datetime | None = None,
        clock: Callable[[], datetime] = datetime.now,
        started: datetime | None = None,
        utc_offset: int | None = None,
    ) -> None:
        self._engine = engine
        self._reference = reference
        self._clock = clock
        self.parser = MetricsParser(
            engine, reference=reference, clock=clock, started=started, utc_offset=utc_offset
        )
        self.boundary = RunBoundary(engine, parser=self.parser)
        #: The run, its start (epoch seconds) and the zone :meth:`place_run` placed by.
        self._placed: tuple[object, float | None, int] | None = None

    def place_run(self, run: object, start: float | None, utc_offset: int) -> None:
        """Place the lines from here on by ``run``'s ``start`` (host epoch seconds) on a
        host ``utc_offset`` seconds east of UTC, unless they already are: each probe reads
        the start afresh, and one read again a tick or a slew away is the same start
        (placing again would restart the parser for nothing). Another run, another zone
        or a start moved by :data:`START_MOVED` (the clock was stepped) places again."""
        if self._placed is not None:
            was_run, was_start, was_offset = self._placed
            same_start = start == was_start or (
                start is not None and was_start is not None and abs(start - was_start) < START_MOVED
            )
            if same_start and (run, utc_offset) == (was_run, was_offset):
                return
        self._placed = (run, start, utc_offset)
        started = None
        if start is not None:
            zone = timezone(timedelta(seconds=utc_offset))
            started = datetime.fromtimestamp(start, zone).replace(tzinfo=None)
        self.place(started, utc_offset)

    def place(self, started: datetime | None, utc_offset: int | None) -> None:
        """Read the lines from here on as a run started at ``started`` (host wall clock) on
        a host ``utc_offset`` seconds east of UTC; the runs seen still count."""
        self.parser = MetricsParser(
            self._engine,
            reference=self._reference,
            clock=self._clock,
            started=started,
            utc_offset=utc_offset,
        )
        self.boundary.use(self.parser)

    @property
    def run(self) -> int:
        return self.boundary.run

    @property
    def engine(self) -> str | None:
        return self.boundary.engine or self.parser.engine

    def feed(self, text: str, offset: int | None) -> MetricSample | RunEvent | None:
        sample = self.parser.parse_line(text, offset, run=self.boundary.run)
        if sample is not None:
            return sample
        return self.boundary.feed(text, offset)

    def feed_all(self, text: str, offset: int | None) -> Sequence[MetricSample | RunEvent]:
        """Every sample on the line (two or more when lines were glued together), or its
        run event, or nothing."""
        samples = self.parser.records(text, offset, run=self.boundary.run)
        if samples:
            return samples
        event = self.boundary.feed(text, offset)
        return () if event is None else (event,)
