"""Following a log on a host: run the agent over a transport, across reconnects.

:class:`Follower` starts the agent (its follow mode, ``tui/agent/``, sent on its stdin and
never installed), decodes its frames through :class:`~tui.core.follow.FollowState`
and yields rows in order. When the connection drops it says so, waits for the
link to come back, and restarts the agent from the last delivered (dev, inode,
offset) with the file's first bytes and the bytes before that offset: the agent
resumes there only if the file still holds them, so no line is lost or shown
twice, and a file cut or made again meanwhile is said so and read from its start.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from tui.core.answers import AnswerError
from tui.core.containers import DOCKER_JSON, PLAIN
from tui.core.follow import FileInfo, FollowState, Start
from tui.core.frames import FrameDecoder, FrameError
from tui.core.logcursor import STREAM_DEV, EventKind, EventRow, LogEvent, Row
from tui.errors import AuthError, HostKeyError, TransportError
from tui.remote.agentcall import chatter_note, stream_agent
from tui.remote.backoff import backoff_delay
from tui.remote.dockerlogs import DockerLogs
from tui.remote.transport import Completed, Transport, last_line

#: Seconds between attempts to restart the agent after a failure that is not a lost link.
RETRY_DELAY = 2.0


class Follower:
    """Follows ``path`` (or what ``pid`` writes) on one host and yields rows in order.

    Given ``container`` (name, runtime) and no path, it follows the container's own
    log: its json-file (each record decoded), found by the agent on the host; where
    that file cannot be read (another user, another log driver), the runtime's
    ``docker logs`` (tui/remote/dockerlogs.py), and the first row says which.
    """

    def __init__(
        self,
        transport: Transport,
        path: str | None,
        *,
        label: str,
        start: Start | None = None,
        pid: int | None = None,
        follow: bool = True,
        container: tuple[str, str] | None = None,
        format: str = PLAIN,
    ) -> None:
        self.transport = transport
        self.path = path
        self.pid = pid
        self.follow = follow
        self.initial = start or Start()
        self.container = container if not path else None
        self.state = FollowState(
            path, label, format=DOCKER_JSON if self.container is not None else format
        )
        self.connected = False
        self._chatter_said = False
        #: The ``docker logs`` follower, once the json-file was found unreadable.
        self.fallback: DockerLogs | None = None

    @property
    def file(self) -> FileInfo | None:
        if self.fallback is not None:
            return self.fallback.file
        return self.state.file

    def _args(self, start: Start) -> dict[str, object]:
        if start.cursor is not None and start.cursor.dev == STREAM_DEV:
            start = Start(from_start=True)  # a cursor in docker logs: no file to resume in
        args: dict[str, object] = {
            "path": self.path,
            "follow": self.follow,
            "start": start.to_json(),
        }
        if self.pid is not None:
            args["pid"] = self.pid
        if self.container is not None:
            args["container"] = {"name": self.container[0], "runtime": self.container[1]}
        return args

    def _unreadable(self) -> DockerLogs | None:
        """The ``docker logs`` follower, when the host said the json-file cannot be read."""
        source = self.state.container
        if self.container is None or source is None or not source.found or source.readable:
            return None
        cursor = self.initial.cursor
        # A cursor in the json-file is of no use to docker logs: this run from its start.
        start = (
            self.initial if cursor is None or cursor.dev == STREAM_DEV else Start(from_start=True)
        )
        return DockerLogs(
            self.transport,
            source.id or self.container[0],
            runtime=self.container[1],
            reason=source.why or "the json-file cannot be read here",
            start=start,
            follow=self.follow,
            started_local=source.started_local,
            name=source.name or self.container[0],
        )

    async def rows(self) -> AsyncIterator[list[Row]]:
        """Batches of rows, in order. Ends at the end of the file without ``follow``;
        otherwise runs until cancelled."""
        async for batch in self._agent_rows():
            yield batch
        if self.fallback is not None:
            async for batch in self.fallback.rows():
                yield batch

    def _started(self, chatter: bytes, lost_at: float | None) -> list[Row]:
        """The rows an agent's first output brings: the login shell's chatter (said once)
        and, after a lost link, how long it was down."""
        rows: list[Row] = []
        if chatter and not self._chatter_said:
            self._chatter_said = True
            rows.append(
                EventRow(LogEvent(EventKind.SHELL_CHATTER, chatter_note(chatter), time.time()))
            )
        self.connected = True
        if lost_at is not None:
            rows.extend(self.state.reconnected(time.monotonic() - lost_at))
        return rows

    async def _agent_rows(self) -> AsyncIterator[list[Row]]:
        lost_at: float | None = None
        failures = 0
        while True:
            start = self.state.resume_start(self.initial)
            try:
                async with stream_agent(self.transport, self._args(start)) as process:
                    decoder = FrameDecoder()
                    first = True
                    async for chunk in process.chunks():
                        batch: list[Row] = []
                        if first:
                            first = False
                            batch.extend(self._started(process.chatter, lost_at))
                            lost_at = None
                        for frame in decoder.feed(chunk):
                            batch.extend(self.state.handle(frame))
                        if batch:
                            yield batch
                    stderr = await process.read_stderr()
                    status = await process.wait()
                    # A hop that failed (a stopped container) is the way failing, not the log.
                    self.transport.check(Completed(("follow",), status, process.chatter, stderr))
                self.fallback = self._unreadable()
                if self.fallback is not None:
                    return
                if not self.follow and (self.state.eof or status == 0):
                    return  # the end, or the agent said why it read nothing (missing, …)
                detail = last_line(stderr) or f"exit status {status}"
                if status == 127:
                    detail = f"python3 not found on the host ({detail})"
                yield [
                    EventRow(
                        LogEvent(EventKind.ERROR, f"the follower stopped: {detail}", time.time())
                    )
                ]
                if not self.follow:
                    return
                await asyncio.sleep(RETRY_DELAY)
            except (FrameError, AnswerError) as error:
                yield [
                    EventRow(
                        LogEvent(EventKind.ERROR, f"garbled follower output: {error}", time.time())
                    )
                ]
                if not self.follow:
                    return
                await asyncio.sleep(RETRY_DELAY)
            except (HostKeyError, AuthError):
                raise  # retrying cannot help, and may lock the account
            except TransportError as error:
                self.connected = False
                if not self.follow:
                    raise
                if lost_at is None:
                    lost_at = time.monotonic()
                    failures = 0
                    yield self.state.disconnected(error.message)
                await asyncio.sleep(backoff_delay(min(failures, 5)))
                failures += 1
