"""The SSH transport: argv lists run as channels on an endpoint's shared link.

Each command is a new channel on one of the link's connections
(:mod:`tui.remote.sshlink`); the pct transport runs its commands through the same
code behind a ``pct exec VMID --`` prefix.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator, Sequence

import asyncssh

from tui.errors import CommandTimeout, HostUnreachable
from tui.remote.sshlink import SshLink
from tui.remote.transport import (
    Completed,
    RemoteProcess,
    Transport,
    remote_command,
    with_lifeline,
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
    """Runs argv lists over an :class:`SshLink`, optionally behind a fixed prefix.

    The prefix lets the pct transport reuse everything here: its argv becomes
    ``pct exec VMID -- argv…`` on the node's link.
    """

    def __init__(self, link: SshLink, prefix: Sequence[str] = (), hops: Sequence[str] = ()) -> None:
        self.link = link
        self.prefix = tuple(prefix)
        self.chain = (link.name, *hops)

    def status_text(self) -> str:
        return self.link.status.describe()

    def _command(self, argv: Sequence[str]) -> str:
        return remote_command([*self.prefix, *argv])

    async def _open(self, argv: Sequence[str], deadline: float) -> asyncssh.SSHClientProcess:
        """Open a channel running ``argv``, on a connection with a session to spare.

        A channel that fails to open on a connection that just died is retried once
        on a fresh connection, and one that a full connection refused is retried on
        another (the command never started either way, so this cannot run it twice).
        """
        command = self._command(argv)
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
        wrapped = list(argv) if stdin is not None else with_lifeline(argv)
        async with self.link.runs:
            process = await self._open(wrapped, deadline)
            try:
                if stdin is not None:
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
        return Completed(
            tuple(argv), status, bytes(out or b""), bytes(err or b""), signal=signal_name
        )

    @contextlib.asynccontextmanager
    async def stream(  # type: ignore[override]
        self, argv: Sequence[str], *, stdin: bool = False
    ) -> AsyncIterator[RemoteProcess]:
        wrapped = list(argv) if stdin else with_lifeline(argv)
        process = await self._open(
            wrapped, time.monotonic() + self.link.endpoint.connect_timeout + 1
        )
        try:
            yield SshProcess(process, self.chain_text)
        finally:
            process.close()
            with contextlib.suppress(Exception):
                await asyncio.shield(asyncio.wait_for(process.wait_closed(), 5))
