"""One async interface for running commands on a host, however it is reached.

A :class:`Transport` runs an argv list — never a shell string built by
concatenation — and either waits for it (:meth:`Transport.run`) or streams its
output (:meth:`Transport.stream`). The three kinds (local, ssh, pct) differ only
in how the argv travels; callers never care which one they hold.

Remote arguments travel through the remote user's login shell, so every one is
quoted with :func:`shlex.quote`; the login shell must be POSIX-like (sh, bash,
dash, zsh). What arrives is byte-for-byte the argv that was given.
"""

from __future__ import annotations

import abc
import shlex
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from tui.core.sanitize import printable

#: Exit status shells use for "command not found"; every transport reports it the same way.
EXIT_NOT_FOUND = 127

# A POSIX sh wrapper that ends the command when our end of the channel goes away.
#
# sshd does not signal a command when its channel closes (there is no pty), and
# `pct exec` forwards stdin but not signals, so a remote `tail -F` would outlive
# us. The wrapper keeps the channel's stdin as a lifeline: the command itself
# reads /dev/null, a watcher subshell waits for EOF on the lifeline and then
# sends SIGTERM to the command. When the command ends first, the shell kills the
# watcher subshell before it can signal anything, so no recycled pid is ever hit.
LIFELINE_SCRIPT = (
    "exec 3<&0 </dev/null; "
    '"$@" & child=$!; '
    '( cat <&3 >/dev/null 2>&1; kill -TERM "$child" 2>/dev/null ) & watcher=$!; '
    "exec 3<&-; "
    'wait "$child"; status=$?; '
    'kill "$watcher" 2>/dev/null; '
    'exit "$status"'
)


def with_lifeline(argv: Sequence[str]) -> list[str]:
    """Wrap ``argv`` so it is ended (SIGTERM) when the caller's side of stdin closes."""
    return ["sh", "-c", LIFELINE_SCRIPT, "babysit-lifeline", *argv]


def remote_command(argv: Sequence[str]) -> str:
    """The string an SSH exec request carries: each argument quoted for a POSIX shell."""
    if not argv:
        raise ValueError("empty argv")
    return shlex.join(argv)


@dataclass(frozen=True)
class Completed:
    """A finished command. ``exit_status`` is None when it was ended by a signal."""

    argv: tuple[str, ...]
    exit_status: int | None
    stdout: bytes
    stderr: bytes
    signal: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def stderr_line(self) -> str:
        """The last non-empty line of stderr, for one-line error messages."""
        return last_line(self.stderr)


def last_line(data: bytes) -> str:
    """The last non-empty line of a host's output, made printable (for error messages)."""
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return printable(lines[-1].strip()) if lines else ""


class RemoteProcess(abc.ABC):
    """A running command whose output is being streamed.

    Leaving the ``async with`` block that produced it (normally, by an error, or
    by cancellation) ends the command on the host.
    """

    @abc.abstractmethod
    def chunks(self) -> AsyncIterator[bytes]:
        """Stdout as it arrives, in chunks of any size; ends at EOF."""

    @abc.abstractmethod
    async def read_stderr(self) -> bytes:
        """Whatever the command wrote to stderr (call after stdout ends)."""

    @abc.abstractmethod
    async def write(self, data: bytes) -> None:
        """Send bytes to the command's stdin (only for ``stream(..., stdin=True)``)."""

    @abc.abstractmethod
    async def close_stdin(self) -> None:
        """Send EOF on the command's stdin."""

    @abc.abstractmethod
    async def wait(self) -> int | None:
        """Wait for the command to end; its exit status, or None if a signal ended it."""


class Transport(abc.ABC):
    """Runs argv lists on one host."""

    #: Each hop on the way, e.g. ("ssh root@pve1", "pct exec 105").
    chain: tuple[str, ...]

    @property
    def chain_text(self) -> str:
        return " → ".join(self.chain)

    @abc.abstractmethod
    async def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> Completed:
        """Run ``argv`` to completion and collect its output.

        Raises :class:`~tui.errors.CommandTimeout` (after ending the command) when it
        takes longer than ``timeout`` seconds, and a
        :class:`~tui.errors.TransportError` subclass when the host cannot be reached.
        A command that does not exist comes back as exit status 127, not an error.
        """

    @abc.abstractmethod
    def stream(
        self, argv: Sequence[str], *, stdin: bool = False
    ) -> AbstractAsyncContextManager[RemoteProcess]:
        """Start ``argv`` and stream its output; leaving the context ends it.

        With ``stdin=False`` the transport keeps the command's stdin as a lifeline
        and ends the command when the channel closes. With ``stdin=True`` the
        caller owns stdin, and the command must exit on EOF by itself (the agent
        does).
        """

    def check(self, completed: Completed) -> Completed:
        """``completed``, or the :class:`~tui.errors.TransportError` it really is when the
        way to the host failed rather than the command (pct: a stopped container)."""
        return completed

    def status_text(self) -> str:
        """The connection's state in a few words (``connected``, ``reconnecting in 4 s``)."""
        return "local"

    async def close(self) -> None:  # noqa: B027 - optional hook, nothing to do by default
        """Release what this transport holds (connections are owned by the pool)."""
