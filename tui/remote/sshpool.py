"""One SSH connection of a link and the sessions (channels) it holds.

A server allows only so many sessions per connection (OpenSSH's ``MaxSessions``),
and a long-lived stream holds its session for its whole life, so every session is
counted against its connection's budget from its channel-open request until its
channel has closed at both ends.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable

import asyncssh


class Session:
    """One session's claim on a connection's budget, from the channel-open request
    until the channel has closed at both ends."""

    def __init__(self, pooled: Pooled) -> None:
        self.pooled = pooled
        #: Whether the channel opened (its close then ends the claim).
        self.started = False
        self._done = False

    def end(self, *, opened: bool) -> None:
        if not self._done:
            self._done = True
            self.pooled.session_ended(opened=opened)


class _CountedProcess(asyncssh.SSHClientProcess):  # type: ignore[type-arg]
    """An SSH process that ends its session's claim when its channel has closed."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self._session = session
        session.started = True

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._session.end(opened=True)


class Pooled:
    """One connection of a link and the sessions it holds.

    A session is held from its channel-open request until its channel has closed at
    both ends. sshd frees it only once it has read our half of the close, so a
    session closed here is *settling* until a request sent after it has been
    answered: sshd answers a request only after it has finished with every message
    that came before it.
    """

    def __init__(self, conn: asyncssh.SSHClientConnection, changed: Callable[[], None]) -> None:
        self.conn = conn
        self.held = 0
        self._closes = 0
        self._settled = 0
        self._changed = changed

    @property
    def alive(self) -> bool:
        return not self.conn.is_closed()

    @property
    def settling(self) -> int:
        return self._closes - self._settled

    def room(self, budget: int) -> int:
        return budget - self.held - self.settling if self.alive else 0

    def claim(self) -> Session:
        self.held += 1
        return Session(self)

    def session_ended(self, *, opened: bool) -> None:
        self.held -= 1
        if opened:
            self._closes += 1
        self._changed()

    async def settle(self, timeout: float) -> None:
        """One round trip: afterwards every session closed before it is free on the server."""
        closes = self._closes
        request = getattr(self.conn, "_make_global_request", None)
        if request is not None:
            # The request OpenSSH's own keepalive sends; any answer (even "failure") will do.
            try:
                await asyncio.wait_for(request(b"keepalive@openssh.com"), timeout)
            except (asyncio.TimeoutError, asyncssh.Error, OSError):
                return
        self._settled = max(self._settled, closes)
        self._changed()

    async def open(self, session: Session, command: str) -> asyncssh.SSHClientProcess:
        """A process running ``command`` on a new channel, counted by ``session``."""
        try:
            _, process = await self.conn.create_session(
                lambda: _CountedProcess(session), command, encoding=None
            )
        except BaseException:
            if not session.started:
                session.end(opened=False)
            raise
        await process.redirect(
            asyncssh.PIPE, asyncssh.PIPE, asyncssh.PIPE, io.DEFAULT_BUFFER_SIZE, True, True
        )
        return process
