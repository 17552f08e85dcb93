"""Following a container's log through ``docker logs`` where its json-file cannot be read.

The host's runtime CLI runs through the host's transport (no agent):
``docker logs --timestamps --since <bound> [--follow] [--tail N] -- <id>``, its
stderr joined to its stdout (the container's stderr lines come there). Each line
starts with its RFC 3339 stamp, which becomes the line's stamp; a line without one
is the CLI's own words, shown as an event.

A stream has no file, so its lines get a synthetic (dev, inode, offset):
``dev`` is :data:`~tui.core.logcursor.STREAM_DEV` (no real device is negative, so
core tells such a line apart by it: ``LogLine.from_stream``), ``inode`` is the
container id's first 60 bits, and ``offset`` is the line's stamp in nanoseconds
times :data:`SAME_STAMP` plus how many lines came before it at that very stamp
(``size`` 1). So the identity is stable across reconnects and orders lines by
time; after a reconnect the stream asks again from the last stamp seen and drops
as many lines at that stamp as were shown (the daemon's ``--since`` includes the
stamp itself): none is shown twice. The bound is this run's
(:func:`~tui.core.containers.run_since`: the last run's FinishedAt when it precedes
StartedAt, since a process may print before docker records its start).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from tui.core.containers import run_since
from tui.core.follow import FileInfo, Start
from tui.core.lines import NANOSECONDS, rfc3339_ns
from tui.core.logcursor import STREAM_DEV, EventKind, EventRow, LineSplitter, LogEvent, LogLine, Row
from tui.core.sanitize import printable
from tui.errors import AuthError, HostKeyError, TransportError
from tui.remote.backoff import backoff_delay
from tui.remote.transport import Transport, last_line

#: Lines at one stamp told apart in a line's offset (more share the last slot).
SAME_STAMP = 1_000_000
#: Seconds one ``inspect`` may take.
INSPECT_TIMEOUT = 20.0
#: Seconds before asking again after the stream ended (the container stopped).
RETRY_DELAY = 2.0
#: Bits of the container id that make a stream's inode.
ID_BITS = 60
#: The CLI's stderr joined to its stdout, in order.
JOINED_OUTPUT = 'exec "$@" 2>&1'


def stream_inode(container_id: str) -> int:
    """The synthetic inode of a container's ``docker logs`` stream."""
    try:
        return int(container_id[: ID_BITS // 4], 16)
    except ValueError:
        return 0


def since_text(ns: int) -> str:
    """``--since`` for a stamp: seconds and nanoseconds, which the CLI takes as they are."""
    return f"{ns // NANOSECONDS}.{ns % NANOSECONDS:09d}"


def logs_argv(
    runtime: str, container_id: str, since_ns: int | None, *, follow: bool, tail: int | None
) -> list[str]:
    """The argv that streams the container's log (each argument quoted by the transport)."""
    argv = ["sh", "-c", JOINED_OUTPUT, "sh", runtime, "logs", "--timestamps"]
    if since_ns is not None:
        argv += ["--since", since_text(since_ns)]
    if follow:
        argv.append("--follow")
    if tail is not None:
        argv += ["--tail", str(tail)]
    return [*argv, "--", container_id]


class DockerLogs:
    """Follows one container's log through its runtime's ``logs`` command; yields rows
    in order, with :attr:`file` a synthetic :class:`FileInfo` naming the source."""

    def __init__(
        self,
        transport: Transport,
        ref: str,
        *,
        runtime: str = "docker",
        reason: str,
        start: Start | None = None,
        follow: bool = True,
        started_local: str | None = None,
        name: str | None = None,
    ) -> None:
        self.transport = transport
        self.ref = ref
        #: The container's name, to show (``ref`` may be its id).
        self.name = name or ref
        self.runtime = runtime
        self.reason = reason
        self.initial = start or Start()
        self.follow = follow
        self.started_local = started_local
        self.file: FileInfo | None = None
        self._id = ""
        self._started_ns: int | None = None
        self._since_ns: int | None = None
        #: The last stamp shown and how many lines were shown at it.
        self._last: tuple[int, int] | None = None
        self._replaying = False
        self._skip = 0
        #: Why the last run of the logs command failed (None: it did not).
        self._stopped: str | None = None
        if self.initial.cursor is not None and self.initial.cursor.dev == STREAM_DEV:
            at, count = divmod(self.initial.cursor.offset, SAME_STAMP)
            self._last = (at, count)

    def _event(self, kind: EventKind, message: str, **data: object) -> EventRow:
        return EventRow(LogEvent(kind, message, time.time(), dict(data)))

    async def _inspect(self) -> str | None:
        """The container's id and its run's start, asked again; why not, if it cannot be."""
        done = await self.transport.run(
            [
                self.runtime,
                "inspect",
                "--type",
                "container",
                "--format",
                "{{.Id}} {{.State.StartedAt}} {{.State.FinishedAt}}",
                "--",
                self.ref,
            ],
            timeout=INSPECT_TIMEOUT,
        )
        self.transport.check(done)
        if not done.ok:
            return done.stderr_line() or f"{self.runtime} inspect exited with {done.exit_status}"
        words = done.stdout.decode("utf-8", "replace").split()
        if len(words) != 3:
            return f"{self.runtime} inspect gave {printable(' '.join(words))!r}"
        if words[0] != self._id:
            if self._id:
                self._last = None  # another container under the name: its log from its start
            self._id = words[0]
        self._started_ns = rfc3339_ns(words[1])
        # From this run's bound: its first lines may be read before its StartedAt.
        self._since_ns = run_since(self._started_ns, rfc3339_ns(words[2]))
        return None

    def _opened(self) -> EventRow:
        name = printable(self.name)
        started = self.started_local
        if started is None and self._started_ns is not None:
            stamp = time.gmtime(self._started_ns // NANOSECONDS)
            started = time.strftime("%H:%M:%S UTC", stamp)
        since = f" since {started}" if started else ""
        words = f"{self.runtime} logs {self.name}"
        self.file = FileInfo(
            words, STREAM_DEV, stream_inode(self._id), 0, time.time(), label=f"container {words}"
        )
        return self._event(
            EventKind.SOURCE,
            f"following {self.runtime} logs of {name}{since}: {printable(self.reason)}",
            source="docker-logs",
            container=self._id,
            reason=self.reason,
        )

    def _argv(self, first: bool) -> list[str]:
        if self._last is not None:
            since, tail = self._last[0], None
        else:
            since = self._since_ns
            tail = self.initial.tail if first and not self.initial.from_start else None
        return logs_argv(self.runtime, self._id, since, follow=self.follow, tail=tail)

    def _replay_from(self) -> None:
        """A new stream starts at the last stamp shown: its lines there shown already
        are dropped."""
        self._replaying = self._last is not None
        self._skip = self._last[1] if self._last is not None else 0

    def _line(self, line: LogLine) -> Row | None:
        """A line of the stream as a row: stamped, or the CLI's words; None when it was
        shown before."""
        stamp, _, text = line.text.partition(" ")
        ns = rfc3339_ns(stamp)
        if ns is None:
            return self._event(EventKind.ERROR, f"{self.runtime} logs: {line.text}")
        last = self._last
        if self._replaying and last is not None:
            if ns < last[0] or (ns == last[0] and self._skip > 0):
                self._skip -= ns == last[0]
                return None
            self._replaying = False
        count = last[1] + 1 if last is not None and ns == last[0] else 1
        if last is None or ns >= last[0]:
            self._last = (ns, count)
        return LogLine(
            text,
            STREAM_DEV,
            stream_inode(self._id),
            ns * SAME_STAMP + min(count - 1, SAME_STAMP - 1),
            1,
            line.arrived_at,
            cut=line.cut,
            complete=line.complete,
            stamp=ns / NANOSECONDS,
        )

    async def _stream(self, argv: list[str], batch: list[Row]) -> AsyncIterator[list[Row]]:
        """One run of the logs command: its rows, after ``batch``; :attr:`_stopped` says
        why it failed, when it did."""
        self._replay_from()
        self._stopped = None
        splitter = LineSplitter()
        async with self.transport.stream(argv) as process:
            received = 0
            async for chunk in process.chunks():
                for line in splitter.feed(STREAM_DEV, 0, received, chunk):
                    row = self._line(line)
                    if row is not None:
                        batch.append(row)
                received += len(chunk)
                if batch:
                    yield batch
                    batch = []
            stderr = await process.read_stderr()
            status = await process.wait()
        rows = [row for line in splitter.flush() if (row := self._line(line)) is not None]
        if batch or rows:
            yield [*batch, *rows]
        if status not in (0, None):
            self._stopped = last_line(stderr) or f"exit status {status}"

    async def rows(self) -> AsyncIterator[list[Row]]:
        """Batches of rows, in order; ends when the stream ends without ``follow``."""
        failures = 0
        first = True
        lost_at: float | None = None
        said: str | None = None
        while True:
            try:
                problem = await self._inspect()
                if problem is not None:
                    if problem != said:  # once for the same words
                        yield [self._event(EventKind.MISSING, f"container {self.name}: {problem}")]
                    said = problem
                    if not self.follow:
                        return
                    await asyncio.sleep(RETRY_DELAY)
                    continue
                said = None
                batch: list[Row] = [self._opened()] if first else []
                if lost_at is not None:
                    gap = time.monotonic() - lost_at
                    lost_at = None
                    batch.append(
                        self._event(
                            EventKind.RECONNECTED,
                            f"reconnected after {gap:.0f} s; asking {self.runtime} logs again "
                            "from the last line shown",
                            gap=gap,
                        )
                    )
                argv = self._argv(first)
                first = False
                async for rows in self._stream(argv, batch):
                    failures = 0
                    yield rows
                if not self.follow:
                    return
                if self._stopped is not None:
                    yield [
                        self._event(
                            EventKind.ERROR, f"{self.runtime} logs stopped: {self._stopped}"
                        )
                    ]
                await asyncio.sleep(RETRY_DELAY)
            except (HostKeyError, AuthError):
                raise
            except TransportError as error:
                if not self.follow:
                    raise
                if lost_at is None:
                    lost_at = time.monotonic()
                    failures = 0
                    yield [
                        self._event(
                            EventKind.DISCONNECTED,
                            f"connection lost: {error.message}; reconnecting",
                        )
                    ]
                await asyncio.sleep(backoff_delay(min(failures, 5)))
                failures += 1
