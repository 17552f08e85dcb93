"""Log lines into :class:`~tui.core.metrics.model.MetricSample` objects, by the engines' readers.

:class:`MetricsParser` knows no engine: it asks the registry (:func:`tui.engines.readable`)
for the line readers and hands each line to them. Each engine's formats are its module's
(:mod:`tui.engines.sglang`, :mod:`tui.engines.vllm`, ...).

Invariants:

* Parsing never raises on any text; a line that does not parse gives no sample.
* Timestamps come from the line (host wall clock, naive).
* The hot path is cheap: each reader looks at a line with a regex only after a
  substring test says it may be one of its metric lines; most lines are not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from tui.core.metrics.model import MetricSample
from tui.engines import readable, spec
from tui.engines.spec import EngineSpec, new_reader


def readers_for(engine: str | None) -> tuple[EngineSpec, ...]:
    """The engines whose readers read a log of ``engine``: its own, or every readable
    engine's when it names none or one without a reader (a generic server's log may
    come from any of them)."""
    if engine is not None:
        own = spec(engine)
        if own.reader is not None:
            return (own,)
    return readable()


class MetricsParser:
    """Parses one line at a time into samples.

    ``engine`` (a name) restricts the readers to that engine's; ``None`` (or an
    engine without a reader) tries every readable engine's, and :attr:`engine` then
    says which one gave the first sample. ``reference`` is the time the log was last
    written (its mtime), for stamps without a year; ``None`` asks ``clock`` (following
    a live log). ``started`` is the run's start, for stamps counted from it; ``utc_offset``
    the host's zone (seconds east of UTC), for stamps in UTC. Never raises.
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
        name = getattr(engine, "value", engine)
        specs = readers_for(name if isinstance(name, str) else None)
        self.engine: str | None = specs[0].name if len(specs) == 1 else None
        self._readers = tuple(
            (
                s.name,
                new_reader(
                    s.reader,  # type: ignore[arg-type]
                    reference=reference,
                    clock=clock,
                    started=started,
                    utc_offset=utc_offset,
                ),
            )
            for s in specs
        )
        #: (name, its reader's ``records``), bound once: the hot path
        self._records = tuple((name, reader.records) for name, reader in self._readers)

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        """The samples on this line (none for most lines; two or more for glued lines)."""
        for name, records in self._records:
            found = records(text, offset, run=run)
            if found:
                if self.engine is None:
                    self.engine = name
                return found
        return ()

    def parse_line(self, text: str, offset: int | None, *, run: int = 0) -> MetricSample | None:
        """The (first) sample on this line, or None when it is not a metric line."""
        for name, records in self._records:
            found = records(text, offset, run=run)
            if found:
                if self.engine is None:
                    self.engine = name
                return found[0]
        return None

    def line_time(self, text: str) -> datetime | None:
        """The time printed at the start of the line, by the first reader that dates it."""
        for _, reader in self._readers:
            ts = reader.line_time(text)
            if ts is not None:
                return ts
        return None

    def line_time_of(self, engine: str, text: str) -> datetime | None:
        """The time ``engine``'s reader reads at the start of the line (None when it is not
        one of this parser's readers, or the line is not stamped its way)."""
        for name, reader in self._readers:
            if name == engine:
                return reader.line_time(text)
        return None
