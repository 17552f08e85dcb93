"""The SSH transport: argv lists run as channels on an endpoint's shared link.

Each command is a new channel on one of the link's connections
(:mod:`tui.remote.sshlink`), behind the prefix of the chain's other hops
(``pct exec VMID --``, ``docker exec -i NAME``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator, Sequence

import asyncssh

from tui.errors import CommandTimeout, HostUnreachable
from tui.hops.spec import Hop
from tui.hops.ssh import SshHop
from tui.remote.sshlink import SshLink
from tui.remote.transport import (
    Completed,
    RemoteProcess,
    Transport,
    remote_command,
)

_CHUNK = 64 * 1024


class SshProcess(RemoteProcess):
    def __init__(self, process: asyncssh.SSHClientProcess, name: str) -> None:
        self._process = process
        self._name = name

    @contextlib.contextmanager
    def _lost(self) -> Iterator[None]:
        try:
            yield
        except (asyncssh.DisconnectError, BrokenPipeError, ConnectionError) as error:
            raise HostUnreachable(
                f"{self._name}: connection lost while the command ran "
                f"({getattr(error, 'reason', None) or error})"
            ) from None

    async def chunks(self) -> AsyncIterator[bytes]:  # type: ignore[override]
        while True:
            with self._lost():
                chunk = await self._process.stdout.read(_CHUNK)
            if not chunk:
                return
            yield chunk

    async def read_stderr(self) -> bytes:
        with self._lost():
            return await self._process.stderr.read()

    async def write(self, data: bytes) -> None:
        with self._lost():
            self._process.stdin.write(data)
            await self._process.stdin.drain()

    async def close_stdin(self) -> None:
        with self._lost():
            self._process.stdin.write_eof()

    async def wait(self) -> int | None:
        with self._lost():
            await self._process.wait_closed()
        return _status_of(self._process, self._name)[0]


def _status_of(process: asyncssh.SSHClientProcess, name: str) -> tuple[int | None, str | None]:
    """(exit status, signal name) of a finished process; a channel that closed with
    neither means the connection died under it."""
    if process.exit_status is not None and process.exit_status >= 0:
        return process.exit_status, None
    if process.exit_signal is not None:
        return None, process.exit_signal[0]
    raise HostUnreachable(f"{name}: connection lost while the command ran")


class SshTransport(Transport):
    """Runs argv lists over an :class:`SshLink`, behind the prefix hops of ``hops``
    (the first is the ssh base whose server the link reaches)."""

    def __init__(self, link: SshLink, hops: Sequence[Hop] | None = None) -> None:
        self.link = link
        self.take(hops if hops is not None else (SshHop(link.endpoint),))

    def status_text(self) -> str:
        return self.link.status.describe()

    async def _open(self, argv: Sequence[str], deadline: float) -> asyncssh.SSHClientProcess:
        """Open a channel running ``argv``, on a connection with a session to spare.

        A channel that fails to open on a connection that just died is retried once
        on a fresh connection, and one that a full connection refused is retried on
        another (the command never started either way, so this cannot run it twice).
        """
        command = remote_command(argv)
        lost_once = False
        while True:
            session = await self.link.session(deadline)
            pooled = session.pooled
            try:
                return await pooled.open(session, command)
            except (asyncssh.ChannelOpenError, asyncssh.DisconnectError, OSError) as error:
                if not pooled.alive and not lost_once:
                    lost_once = True
                    continue
                if isinstance(error, asyncssh.ChannelOpenError) and self.link.refused(
                    session, error
                ):
                    continue
                reason = getattr(error, "reason", None) or str(error)
                raise HostUnreachable(
                    f"{self.link.name}: cannot open a channel: {reason}"
                ) from None

    async def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> Completed:
        deadline = time.monotonic() + timeout
        wrapped = self.command(argv, lifeline=stdin is None)
        async with self.link.runs:
            process = await self._open(wrapped, deadline)
            try:
                if stdin is not None:
                    # A command that ended at once (a hop that failed: no such container)
                    # may have closed the channel under the write; its output and status
                    # say why, which a failed write would hide as a lost connection.
                    with contextlib.suppress(BrokenPipeError):
                        process.stdin.write(stdin)
                        process.stdin.write_eof()
                remaining = max(deadline - time.monotonic(), 0.01)
                out, err = await asyncio.wait_for(process.communicate(), remaining)
            except asyncio.TimeoutError:
                process.close()
                raise CommandTimeout(
                    f"{self.chain_text}: {argv[0]} did not finish within {timeout:g} s "
                    "and was ended"
                ) from None
            except (asyncssh.DisconnectError, asyncssh.ChannelOpenError, OSError) as error:
                process.close()
                raise HostUnreachable(
                    f"{self.link.name}: connection lost while running {argv[0]}: "
                    f"{getattr(error, 'reason', error)}"
                ) from None
            except BaseException:
                process.close()
                raise
        status, signal_name = _status_of(process, self.chain_text)
        completed = Completed(
            tuple(argv), status, bytes(out or b""), bytes(err or b""), signal=signal_name
        )
        return self.check(completed)

    @contextlib.asynccontextmanager
    async def stream(  # type: ignore[override]
        self, argv: Sequence[str], *, stdin: bool = False
    ) -> AsyncIterator[RemoteProcess]:
        wrapped = self.command(argv, lifeline=not stdin)
        process = await self._open(
            wrapped, time.monotonic() + self.link.endpoint.connect_timeout + 1
        )
        try:
            yield SshProcess(process, self.chain_text)
        finally:
            process.close()
            with contextlib.suppress(Exception):
                await asyncio.shield(asyncio.wait_for(process.wait_closed(), 5))
