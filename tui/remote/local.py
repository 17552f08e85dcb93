"""The local transport: argv lists run as subprocesses of babysit itself.

Each command starts in a session of its own, so ending it (timeout, cancel)
reaches its children too. We only ever signal a process we started and have not
yet reaped, through a pidfd where the kernel has one, so a recycled pid is never
hit. Behind a prefix hop (``docker exec -i``) the command runs elsewhere, where
ending our subprocess does not reach it: there it runs in the lifeline, whose
stdin we hold until it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence

from tui.errors import CommandTimeout, RemoteCommandMissing
from tui.hops.local import LocalHop
from tui.hops.spec import Hop
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
    """Close its stdin (a lifeline's end) and our ends of its output, SIGTERM the command's
    group, then SIGKILL it if it has not gone within the grace.

    We are leaving, so what it still writes is not ours to read; and asyncio's ``wait()``
    returns only once every pipe has reached EOF (unless it saw the exit before the call):
    a reader paused on a full buffer, or a grandchild that left the group holding stdout,
    would hold that off past the grace, and past the SIGKILL for ever.
    """
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()
    _close_output(proc)
    _signal_group(proc, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), TERM_GRACE)
    except asyncio.TimeoutError:
        _signal_group(proc, signal.SIGKILL)
        await proc.wait()


def _close_output(proc: asyncio.subprocess.Process) -> None:
    """Close our ends of the command's stdout and stderr pipes (the transport's, reached
    as :func:`_release` says)."""
    transport = getattr(proc, "_transport", None)
    for fd in (1, 2):
        pipe = transport.get_pipe_transport(fd) if transport is not None else None
        if pipe is not None:
            pipe.close()


def _release(proc: asyncio.subprocess.Process) -> None:
    """Close the pipes of ``proc`` once we are done with it.

    asyncio closes a subprocess transport only when the process has exited *and* every
    pipe has reached EOF; a stream left before EOF, or a grandchild still holding stdout,
    would keep the pipes (and their fds) open until the transport is collected, perhaps
    after its loop has closed. ``Process`` offers no public close, so its transport's
    (a public method) is reached through the attribute asyncio sets.
    """
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


def _not_found(argv: Sequence[str], error: OSError) -> Completed:
    message = f"{argv[0]}: {error.strerror or error}\n".encode()
    return Completed(tuple(argv), EXIT_NOT_FOUND, b"", message)


class LocalProcess(RemoteProcess):
    def __init__(self, proc: asyncio.subprocess.Process, *, lifeline: bool = False) -> None:
        self._proc = proc
        #: Whether stdin is the lifeline (ours to hold, not the caller's to write).
        self._lifeline = lifeline

    async def chunks(self) -> AsyncIterator[bytes]:  # type: ignore[override]
        stdout = self._proc.stdout  # a pipe: stream() always asks for one
        while stdout is not None and (chunk := await stdout.read(_CHUNK)):
            yield chunk

    async def read_stderr(self) -> bytes:
        stderr = self._proc.stderr
        return await stderr.read() if stderr is not None else b""

    async def write(self, data: bytes) -> None:
        if self._proc.stdin is None or self._lifeline:
            raise RuntimeError("this stream was started without stdin=True")
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    async def close_stdin(self) -> None:
        if self._lifeline:
            raise RuntimeError("this stream was started without stdin=True")
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()

    async def wait(self) -> int | None:
        status = await self._proc.wait()
        return status if status >= 0 else None


async def _collect(proc: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    """Stdout and stderr of ``proc`` until it ends, its stdin held open (the lifeline)
    and closed once it has."""
    stdout, stderr = proc.stdout, proc.stderr
    if stdout is None or stderr is None:  # run() pipes both, always
        raise RuntimeError("the command was started without pipes for its output")
    out, err, _ = await asyncio.gather(stdout.read(), stderr.read(), proc.wait())
    if proc.stdin is not None:
        proc.stdin.close()
    return out, err


class LocalTransport(Transport):
    """Runs argv lists here, or behind the prefix hops of ``hops`` (the first is the
    local base)."""

    def __init__(self, hops: Sequence[Hop] = (LocalHop(),)) -> None:
        self.take(hops)

    @property
    def python(self) -> str:
        """babysit's own python on this machine; behind a prefix hop, the hops' choice."""
        return super().python if self.prefix else sys.executable

    async def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> Completed:
        lifeline = bool(self.prefix) and stdin is None
        command = self.command(argv, lifeline=lifeline)
        try:
            proc = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE
                if stdin is not None or lifeline
                else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
            return self.check(_not_found(command, error))
        try:
            collect = _collect(proc) if lifeline else proc.communicate(stdin)
            out, err = await asyncio.wait_for(collect, timeout)
        except asyncio.TimeoutError:
            await _end(proc)
            raise CommandTimeout(
                f"{self.chain_text}: {argv[0]} did not finish within {timeout:g} s and was ended"
            ) from None
        except asyncio.CancelledError:
            await asyncio.shield(_end(proc))
            raise
        finally:
            _release(proc)
        status = proc.returncode
        if status is not None and status < 0:
            return Completed(tuple(argv), None, out, err, signal=signal.Signals(-status).name)
        return self.check(Completed(tuple(argv), status, out, err))

    @contextlib.asynccontextmanager
    async def stream(  # type: ignore[override]
        self, argv: Sequence[str], *, stdin: bool = False
    ) -> AsyncIterator[RemoteProcess]:
        lifeline = bool(self.prefix) and not stdin
        command = self.command(argv, lifeline=lifeline)
        try:
            proc = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE if stdin or lifeline else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
            self.check(_not_found(command, error))
            raise RemoteCommandMissing(
                f"{self.chain_text}: cannot run {command[0]}: {error.strerror}"
            ) from None
        try:
            yield LocalProcess(proc, lifeline=lifeline)
        finally:
            try:
                if proc.returncode is None:
                    await asyncio.shield(_end(proc))
            finally:
                _release(proc)
