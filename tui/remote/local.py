"""The local transport: argv lists run as subprocesses of babysit itself.

Each command starts in a session of its own, so ending it (timeout, cancel)
reaches its children too. We only ever signal a process we started and have not
yet reaped, through a pidfd where the kernel has one, so a recycled pid is never
hit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Sequence

from tui.errors import CommandTimeout, RemoteCommandMissing
from tui.remote.transport import EXIT_NOT_FOUND, Completed, RemoteProcess, Transport

#: How long a command gets between SIGTERM and SIGKILL when we end it.
TERM_GRACE = 2.0
_CHUNK = 64 * 1024


def _signal_group(proc: asyncio.subprocess.Process, signum: int) -> None:
    """Signal the process group of ``proc`` while ``proc`` is still unreaped.

    While the leader is an unreaped child its pid (and so the group id) cannot be
    reused, so the signal cannot reach a stranger.
    """
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


async def _end(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the command's group, then SIGKILL it if it has not gone within the grace."""
    _signal_group(proc, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), TERM_GRACE)
    except asyncio.TimeoutError:
        _signal_group(proc, signal.SIGKILL)
        await proc.wait()


def _not_found(argv: Sequence[str], error: OSError) -> Completed:
    message = f"{argv[0]}: {error.strerror or error}\n".encode()
    return Completed(tuple(argv), EXIT_NOT_FOUND, b"", message)


class LocalProcess(RemoteProcess):
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc

    async def chunks(self) -> AsyncIterator[bytes]:  # type: ignore[override]
        stdout = self._proc.stdout  # a pipe: stream() always asks for one
        while stdout is not None and (chunk := await stdout.read(_CHUNK)):
            yield chunk

    async def read_stderr(self) -> bytes:
        stderr = self._proc.stderr
        return await stderr.read() if stderr is not None else b""

    async def write(self, data: bytes) -> None:
        if self._proc.stdin is None:
            raise RuntimeError("this stream was started without stdin=True")
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    async def close_stdin(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()

    async def wait(self) -> int | None:
        status = await self._proc.wait()
        return status if status >= 0 else None


class LocalTransport(Transport):
    chain = ("local",)

    async def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> Completed:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
            return _not_found(argv, error)
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
        except asyncio.TimeoutError:
            await _end(proc)
            raise CommandTimeout(
                f"local: {argv[0]} did not finish within {timeout:g} s and was ended"
            ) from None
        except asyncio.CancelledError:
            await asyncio.shield(_end(proc))
            raise
        status = proc.returncode
        if status is not None and status < 0:
            return Completed(tuple(argv), None, out, err, signal=signal.Signals(-status).name)
        return Completed(tuple(argv), status, out, err)

    @contextlib.asynccontextmanager
    async def stream(  # type: ignore[override]
        self, argv: Sequence[str], *, stdin: bool = False
    ) -> AsyncIterator[RemoteProcess]:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
            raise RemoteCommandMissing(f"local: cannot run {argv[0]}: {error.strerror}") from None
        try:
            yield LocalProcess(proc)
        finally:
            if proc.returncode is None:
                await asyncio.shield(_end(proc))
