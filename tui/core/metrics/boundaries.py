"""Where a run starts in a log and when it is ready; :class:`LogScanner` over a file's lines."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from tui.core.engines import ARGS_HEADS
from tui.core.metrics.model import Engine, MetricSample
from tui.core.metrics.parse import SGLANG_PREFIX, MetricsParser


class RunMarker(enum.Enum):
    """A line that starts a run (printed once per run) or says it is ready."""

    SGLANG_SERVER_ARGS = "sglang-server-args"
    VLLM_VERSION = "vllm-version"
    VLLM_ARGS = "vllm-args"
    SGLANG_READY = "sglang-ready"
    VLLM_READY = "vllm-ready"


class RunEventKind(enum.Enum):
    STARTED = "started"
    READY = "ready"


@dataclass(frozen=True)
class RunEvent:
    """A run started (its startup sequence began) or became ready, at this line.

    ``run`` counts from 1 for the first startup seen in the file; lines before
    any startup belong to run 0. ``text`` is the marker line, cut at 300 chars.
    """

    kind: RunEventKind
    run: int
    offset: int | None
    ts: datetime | None
    marker: RunMarker
    engine: Engine
    text: str

    def to_json(self) -> dict[str, object]:
        return {
            "event": self.kind.value,
            "run": self.run,
            "offset": self.offset,
            "ts": None if self.ts is None else self.ts.isoformat(),
            "marker": self.marker.value,
            "engine": self.engine.value,
            "text": self.text,
        }


_START_ENGINE = {
    RunMarker.SGLANG_SERVER_ARGS: Engine.SGLANG,
    RunMarker.VLLM_VERSION: Engine.VLLM,
    RunMarker.VLLM_ARGS: Engine.VLLM,
}
_ARGS_MARKER = {Engine.SGLANG: RunMarker.SGLANG_SERVER_ARGS, Engine.VLLM: RunMarker.VLLM_ARGS}
_MARKER_TEXTS = (
    # the args line, printed once per run, after the line's prefix (``…] ``)
    *(("] " + head.text, _ARGS_MARKER[Engine(head.engine)]) for head in ARGS_HEADS),
    ("vLLM API server version ", RunMarker.VLLM_VERSION),
    ("vLLM server version ", RunMarker.VLLM_VERSION),
    ("The server is fired up and ready to roll!", RunMarker.SGLANG_READY),
    ("Application startup complete.", RunMarker.VLLM_READY),
)
_MARKER_ENGINE = {
    **_START_ENGINE,
    RunMarker.SGLANG_READY: Engine.SGLANG,
    RunMarker.VLLM_READY: Engine.VLLM,
}


class RunBoundary:
    """Finds where runs start and when they are ready, one line at a time.

    A run starts at a line each run prints exactly once near its start: SGLang's
    ``server_args=…``; vLLM's ``vLLM (API) server version …`` and its
    ``non-default args: {…}`` / ``args: Namespace(…)``. The first such line
    opens run 1; a kind of marker already seen in the current run, or one of
    another engine, opens the next (so vLLM's version line and args line make
    one run, not two). Ready
    lines: SGLang ``The server is fired up and ready to roll!``, vLLM
    ``Application startup complete.`` (SGLang prints that one too, earlier,
    so it counts only for vLLM runs); each run reports READY at most once.
    """

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        line_time: Callable[[str], datetime | None] | None = None,
    ) -> None:
        self.engine = engine
        self.run = 0
        self._want = engine
        self._seen: set[RunMarker] = set()
        self._ready = False
        self._line_time = line_time or MetricsParser(engine).line_time

    def feed(self, text: str, offset: int | None) -> RunEvent | None:
        """The run event on this line, if it has one. Never raises."""
        marker = self._marker(text)
        if marker is None:
            return None
        if marker in _START_ENGINE:
            engine = _START_ENGINE[marker]
            if self.run and marker not in self._seen and engine is self.engine:
                self._seen.add(marker)
                return None
            self.run += 1
            self._seen = {marker}
            self._ready = False
            self.engine = engine
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
            marker=marker,
            engine=_MARKER_ENGINE[marker],
            text=text[:300],
        )

    def _marker(self, text: str) -> RunMarker | None:
        if not (
            "args" in text
            or "version" in text
            or "ready to roll" in text
            or "startup complete" in text
        ):
            return None
        for needle, marker in _MARKER_TEXTS:
            if (
                needle in text
                and self._want in (None, _MARKER_ENGINE[marker])
                and self._plausible(marker, text)
            ):
                return marker
        return None

    def _plausible(self, marker: RunMarker, text: str) -> bool:
        if marker is RunMarker.SGLANG_SERVER_ARGS:
            return SGLANG_PREFIX.search(text) is not None
        if marker is RunMarker.VLLM_READY:
            if self.engine is Engine.SGLANG:
                return False
            # With no run seen yet, an SGLang-stamped line is SGLang's uvicorn, not vLLM.
            return not (self.engine is None and SGLANG_PREFIX.match(text))
        return True


class LogScanner:
    """A :class:`MetricsParser` and a :class:`RunBoundary` over the lines of one log.

    ``feed`` returns the line's sample (stamped with the current run) or its run
    event, or None; a line is never both.
    """

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        reference: datetime | None = None,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        self.parser = MetricsParser(engine, reference=reference, clock=clock)
        self.boundary = RunBoundary(engine, line_time=self.parser.line_time)

    @property
    def run(self) -> int:
        return self.boundary.run

    @property
    def engine(self) -> Engine | None:
        return self.boundary.engine or self.parser.engine

    def feed(self, text: str, offset: int | None) -> MetricSample | RunEvent | None:
        sample = self.parser.parse_line(text, offset, run=self.boundary.run)
        if sample is not None:
            return sample
        return self.boundary.feed(text, offset)
