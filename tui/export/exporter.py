"""Probe-only sessions for ``babysit export``, and the two ways their series leave it.

An :class:`Exporter` watches the services it was given through the same
:class:`~tui.session.sessions.Sessions` the screens use (one probe loop per host, one
report per service), and makes their series (:func:`tui.export.series.families`) on the
event loop, where the sessions live. Two readers take them:

- the HTTP server of prometheus_client, in its own threads: its collector
  (:class:`LoopCollector`) asks the event loop for the series at the moment of each
  scrape, so every age is the scrape's; a loop that does not answer in
  :data:`SCRAPE_WAIT` seconds fails the scrape (Prometheus's ``up`` turns 0), it never
  serves old series;
- the textfile for node_exporter (:func:`write_textfile`): written to a temporary name
  beside it and renamed over it, so a reader sees the old file or the new one, never a
  part; removed when babysit stops or cannot write it, so node_exporter does not keep
  serving the facts of a babysit that is gone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry, ProcessCollector, write_to_textfile
from prometheus_client.core import Metric

from tui.config import Host, Service
from tui.export.names import TEXTFILE
from tui.export.series import HostView, ServiceView, families
from tui.session.sessions import Sessions

#: Seconds a scrape waits for the event loop to make the series before it fails.
SCRAPE_WAIT = 5.0


class Frozen:
    """A collector of families made already (for :func:`generate_latest`, the textfile)."""

    def __init__(self, made: Sequence[Metric]) -> None:
        self._made = list(made)

    def collect(self) -> Iterable[Metric]:
        return self._made

    def describe(self) -> Iterable[Metric]:
        return ()


class Exporter:
    """The services of ``selection``, watched through ``sessions``, as series."""

    def __init__(
        self,
        selection: Sequence[tuple[Host, Sequence[Service]]],
        sessions: Sessions,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.selection = [(host, tuple(services)) for host, services in selection]
        self.sessions = sessions
        self.clock = clock
        #: Set once every host's first round trip has ended (answered or failed).
        self.first_answers = asyncio.Event()

    @property
    def services(self) -> int:
        return sum(len(services) for _, services in self.selection)

    def start(self) -> None:
        """Start each host's probe loop for its services (on the running event loop)."""
        for host, services in self.selection:
            watch = self.sessions.watch(host)
            watch.want(self, [s.name for s in services])
            watch.listen(self._heard)
            watch.start()
        self._heard()

    def _heard(self, _watch: object = None) -> None:
        if all(self.sessions.watch(host).answers for host, _ in self.selection):
            self.first_answers.set()

    def views(self, now: float) -> list[HostView]:
        """What the sessions know of each host and service at ``now``."""
        views = []
        for host, services in self.selection:
            state = self.sessions.watch(host).state
            up = state.failure is None and state.answered_at is not None
            views.append(
                HostView(
                    host.name,
                    up,
                    state.took,
                    tuple(
                        ServiceView(
                            s.name, s.engine.value, self.sessions.session(host, s).report(now)
                        )
                        for s in services
                    ),
                )
            )
        return views

    def families(self) -> list[Metric]:
        """The series now. Call it on the event loop the sessions run on."""
        now = self.clock()
        return families(self.views(now), now)


class LoopCollector:
    """The HTTP server's collector: the series of ``exporter``, made on ``loop`` when a
    scrape comes (the server's threads never touch the sessions themselves)."""

    def __init__(self, exporter: Exporter, loop: asyncio.AbstractEventLoop) -> None:
        self.exporter = exporter
        self.loop = loop

    def collect(self) -> Iterable[Metric]:
        future = asyncio.run_coroutine_threadsafe(self._families(), self.loop)
        try:
            return future.result(SCRAPE_WAIT)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def describe(self) -> Iterable[Metric]:
        return ()

    async def _families(self) -> list[Metric]:
        # A scrape before the first answers waits for them (the scrape's own timeout, or
        # SCRAPE_WAIT, ends the wait): a series from before any answer says nothing.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.exporter.first_answers.wait(), SCRAPE_WAIT - 1)
        return self.exporter.families()


def http_registry(exporter: Exporter, loop: asyncio.AbstractEventLoop) -> CollectorRegistry:
    """The registry ``/metrics`` renders: the services' series and this process's own
    (``process_cpu_seconds_total``, its memory, its start)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LoopCollector(exporter, loop))
    ProcessCollector(registry=registry)
    return registry


def write_textfile(folder: Path, made: Sequence[Metric]) -> Path:
    """Write ``made`` to ``folder``/:data:`TEXTFILE`: to a temporary name (which does
    not end in ``.prom``, so node_exporter skips it) in the same folder, then renamed
    over the old file. Blocking: run it off the event loop."""
    path = folder / TEXTFILE
    write_to_textfile(str(path), Frozen(made))
    return path


async def refresh_textfile(folder: Path, made: Sequence[Metric]) -> str | None:
    """Write the textfile off the event loop; None, or why it could not be written (the
    old file is then removed: it would be read as if it still held)."""
    try:
        await asyncio.to_thread(write_textfile, folder, made)
    except OSError as error:
        await asyncio.to_thread(remove_textfile, folder)
        return f"cannot write {folder / TEXTFILE}: {error.strerror or error}; removed it"
    return None


def remove_textfile(folder: Path) -> None:
    """Remove the textfile, so no reader takes its facts for current ones."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(folder / TEXTFILE)
