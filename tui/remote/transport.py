"""One async interface for running commands on a host, however it is reached.

A :class:`Transport` runs an argv list — never a shell string built by
concatenation — and either waits for it (:meth:`Transport.run`) or streams its
output (:meth:`Transport.stream`). It runs what a host's chain of hops says
(tui/hops/): its base starts the command (a local subprocess, or a channel on an
SSH link), and every prefix hop puts its words before the argv. Callers never care
which hops they go through.

Remote arguments travel through the remote user's login shell, so every one is
quoted with :func:`shlex.quote`; the login shell must be POSIX-like (sh, bash,
dash, zsh). What arrives is byte-for-byte the argv that was given.
"""

from __future__ import annotations

import abc
import dataclasses
import shlex
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from tui.errors import HopFailed
from tui.hops import chain_of, python_of
from tui.hops.spec import EXIT_NOT_FOUND, Answer, Hop, last_line

__all__ = ["EXIT_NOT_FOUND", "Completed", "RemoteProcess", "Transport", "last_line"]

# A POSIX sh wrapper that ends the command when our end of the channel goes away.
#
# sshd does not signal a command when its channel closes (there is no pty), and
# `pct exec` and `docker exec -i` forward stdin but not signals (nor the end of
# their own client), so a remote `tail -F` would outlive us. The wrapper keeps
# the channel's stdin as a lifeline: the command itself reads /dev/null, a
# watcher subshell waits for EOF on the lifeline and then sends SIGTERM to the
# command. When the command ends first, the shell kills the watcher subshell
# before it can signal anything, so no recycled pid is ever hit.
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
    """Runs argv lists on one host, through its chain of hops."""

    #: The hops on the way, base first.
    hops: tuple[Hop, ...] = ()
    #: Each hop's words, e.g. ("ssh root@pve1", "pct exec 105").
    chain: tuple[str, ...] = ()

    def take(self, hops: Sequence[Hop]) -> None:
        """Go through ``hops`` (the first is this transport's own base)."""
        self.hops = tuple(hops)
        self.chain = chain_of(self.hops)

    @property
    def chain_text(self) -> str:
        return " → ".join(self.chain)

    @property
    def prefix(self) -> tuple[str, ...]:
        """The words the prefix hops put before every argv."""
        return tuple(word for hop in self.hops for word in hop.prefix())

    @property
    def python(self) -> str:
        """The python the agent runs with on the host (the last hop that chose one)."""
        return python_of(self.hops)

    def command(self, argv: Sequence[str], *, lifeline: bool) -> list[str]:
        """What runs: the hops' prefix, then ``argv`` (in the lifeline when asked)."""
        return [*self.prefix, *(with_lifeline(argv) if lifeline else argv)]

    @abc.abstractmethod
    async def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> Completed:
        """Run ``argv`` to completion and collect its output.

        Raises :class:`~tui.errors.CommandTimeout` (after ending the command) when it
        takes longer than ``timeout`` seconds, and a
        :class:`~tui.errors.TransportError` subclass when the host cannot be reached
        or a hop fails (see :meth:`check`). A command that does not exist comes back
        as exit status 127, not an error.
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
        """``completed`` as the hops pass it back (each from the command outwards), or
        the :class:`~tui.errors.HopFailed` it really is when a hop failed rather
        than the command (pct: a stopped container; docker: no such container). The
        hop nearest this machine speaks first: what failed there stopped the rest."""
        answer = Answer(completed.exit_status, completed.stdout, completed.stderr)
        for hop in reversed(self.hops):
            answer = hop.settle(answer)
        for hop in self.hops:
            words = hop.failure(answer)
            if words:
                raise HopFailed(
                    f"{self.chain_text}: {words}", hop=" → ".join(hop.texts), words=words
                )
        if answer == Answer(completed.exit_status, completed.stdout, completed.stderr):
            return completed
        return dataclasses.replace(
            completed, exit_status=answer.exit_status, stdout=answer.stdout, stderr=answer.stderr
        )

    def status_text(self) -> str:
        """The connection's state in a few words (``connected``, ``reconnecting in 4 s``);
        a chain with no link says its base's words."""
        return self.chain[0] if self.chain else ""

    async def close(self) -> None:  # noqa: B027 - optional hook, nothing to do by default
        """Release what this transport holds (connections are owned by the pool)."""
