"""The connections to one SSH endpoint, shared by every channel to it.

:class:`SshLink` owns the connections to one SSH server. Every command is a new
channel (an SSH session) on one of them; a Proxmox node and each container
reached through it share the node's link. Every session is counted against its
connection's budget (:mod:`tui.remote.sshpool`), and the link opens another
connection to the same endpoint when all of them are full. When an established
connection is lost, the link reconnects with capped, jittered backoff; it never
retries a refused host key or a failed login (:mod:`tui.remote.sshdial`), because
retrying those cannot help and may lock an account.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from dataclasses import dataclass

import asyncssh

from tui.config import SshEndpoint
from tui.errors import AuthError, HostKeyError, HostUnreachable, TransportError
from tui.hops.ssh import SshHop
from tui.remote.backoff import backoff_delay
from tui.remote.sshdial import Dialer
from tui.remote.sshpool import Pooled, Session

#: Sessions (channels) one connection is asked to hold at once: OpenSSH's default
#: MaxSessions. A server set lower refuses a channel, and the link then asks no
#: connection to that endpoint for more than that server held.
SESSIONS_PER_CONNECTION = 10
#: Connections one endpoint may have at once (each one is a login on the server).
MAX_CONNECTIONS = 8
#: One-shot runs one link has in flight at once; more wait their turn, so that a
#: burst of commands does not open more connections than the streams need.
MAX_CONCURRENT_RUNS = 6
#: Channel-open refusals that a full connection gives (OpenSSH says "open failed").
_REFUSED_CODES = frozenset(
    {
        asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED,
        asyncssh.OPEN_CONNECT_FAILED,
        asyncssh.OPEN_RESOURCE_SHORTAGE,
    }
)


class LinkState(enum.Enum):
    IDLE = "idle"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"


@dataclass(frozen=True)
class LinkStatus:
    """What the link is doing now, for headers and ``babysit check``."""

    state: LinkState
    #: Monotonic time of the next reconnect attempt (RECONNECTING only).
    retry_at: float | None = None
    error: str | None = None

    def describe(self, now: float | None = None) -> str:
        if self.state is LinkState.RECONNECTING and self.retry_at is not None:
            wait = max(0.0, self.retry_at - (now if now is not None else time.monotonic()))
            return f"reconnecting in {wait:.0f} s"
        if self.state is LinkState.FAILED and self.error:
            return f"failed: {self.error}"
        return self.state.value


class SshLink:
    """The connections to one SSH endpoint: as many as its sessions need, reconnecting
    after a loss."""

    def __init__(self, endpoint: SshEndpoint) -> None:
        self.endpoint = endpoint
        #: Successful connections made so far (1 for a link that never dropped and
        #: never needed a second connection).
        self.connects = 0
        self._pool: list[Pooled] = []
        #: Sessions each connection is asked to hold (lowered when a server refuses).
        self.budget = SESSIONS_PER_CONNECTION
        self._changed = asyncio.Event()
        self._dialing = False
        self.runs = asyncio.Semaphore(MAX_CONCURRENT_RUNS)
        self._ever_connected = False
        self._attempt = 0
        self._retry_at = 0.0
        self._last_error: str | None = None
        self._status = LinkStatus(LinkState.IDLE)
        self._closed = False
        self._dialer = Dialer(endpoint, self.name, self._on_lost)

    @property
    def status(self) -> LinkStatus:
        return self._status

    @property
    def name(self) -> str:
        return SshHop(self.endpoint).texts[-1]

    @property
    def connections(self) -> int:
        """Connections open now."""
        return sum(1 for pooled in self._pool if pooled.alive)

    @property
    def sessions(self) -> int:
        """Sessions held now, on every connection."""
        return sum(pooled.held for pooled in self._pool if pooled.alive)

    def _notify(self) -> None:
        """Wake every caller waiting for room, a connection or a failed dial."""
        self._changed.set()
        self._changed = asyncio.Event()

    def _on_lost(self, conn: asyncssh.SSHClientConnection | None, exc: Exception | None) -> None:
        self._pool = [p for p in self._pool if p.conn is not conn and p.alive]
        self._notify()
        if self._closed or self._pool:
            return
        self._last_error = f"connection lost ({exc})" if exc else "connection closed by the server"
        self._status = LinkStatus(LinkState.RECONNECTING, retry_at=time.monotonic())

    async def session(self, deadline: float) -> Session:
        """A claim on a session of a connection with room, connecting (or opening one
        more connection) as needed; waits while every allowed connection is full, up
        to ``deadline`` (monotonic), then raises :class:`HostUnreachable`.

        A first connection that fails raises at once (the caller decides when to
        try again). Once a connection existed and every one was lost, this waits
        through backoff and keeps trying until it succeeds or the deadline passes.
        """
        began = time.monotonic()
        while True:
            if self._closed:
                raise TransportError(f"{self.name}: link closed")
            changed = self._changed
            self._pool = [p for p in self._pool if p.alive]
            # The oldest connection with room first, so that later ones stay spare.
            roomy = next((p for p in self._pool if p.room(self.budget) > 0), None)
            if roomy is not None:
                return roomy.claim()
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise asyncio.TimeoutError
                settling = [p for p in self._pool if p.settling]
                if settling:
                    await settling[0].settle(min(self.endpoint.connect_timeout, remaining))
                elif len(self._pool) < MAX_CONNECTIONS and not self._dialing:
                    # One dial at a time (set before the dial's task starts). Only the
                    # wait is bounded here: claims are made by this loop alone, so a
                    # timeout can never drop one on the floor.
                    self._dialing = True
                    try:
                        await asyncio.wait_for(self._grow(changed), remaining)
                    finally:
                        self._dialing = False
                        self._notify()
                else:
                    await asyncio.wait_for(changed.wait(), remaining)
            except asyncio.TimeoutError:
                raise HostUnreachable(
                    f"{self.name}: {self.waiting_reason()}; "
                    f"gave up after the command's {deadline - began:.0f} s"
                ) from None

    async def _grow(self, changed: asyncio.Event) -> None:
        """Dial one more connection into the pool; a spare one (others are open) that
        cannot be made now is not an error: the others keep serving, and the next try
        waits out the backoff."""
        spare = bool(self._pool)
        if spare and self._retry_at > time.monotonic():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(changed.wait(), self._retry_at - time.monotonic())
            return
        if spare:
            try:
                conn = await self._dialer.connect()
            except HostUnreachable as error:
                self._last_error = error.message
                self._retry_at = time.monotonic() + backoff_delay(self._attempt)
                self._attempt += 1
                return
            self._connected()
        else:
            conn = await self._connection()
        self._pool.append(Pooled(conn, self._notify))

    def _connected(self) -> None:
        self._ever_connected = True
        self._attempt = 0
        self._retry_at = 0.0
        self.connects += 1
        self._status = LinkStatus(LinkState.CONNECTED)

    async def _connection(self) -> asyncssh.SSHClientConnection:
        """A new connection when there is none, through backoff after a loss."""
        while True:
            wait = self._retry_at - time.monotonic()
            if wait > 0:
                self._status = LinkStatus(LinkState.RECONNECTING, retry_at=self._retry_at)
                await asyncio.sleep(wait)
            self._status = LinkStatus(
                LinkState.RECONNECTING if self._ever_connected else LinkState.CONNECTING
            )
            try:
                conn = await self._dialer.connect()
            except (HostKeyError, AuthError) as error:
                self._status = LinkStatus(LinkState.FAILED, error=error.message)
                raise
            except HostUnreachable as error:
                self._last_error = error.message
                self._retry_at = time.monotonic() + backoff_delay(self._attempt)
                self._attempt += 1
                if not self._ever_connected:
                    self._status = LinkStatus(LinkState.FAILED, error=error.message)
                    raise
                self._status = LinkStatus(LinkState.RECONNECTING, retry_at=self._retry_at)
                continue
            self._connected()
            return conn

    def refused(self, session: Session, error: asyncssh.ChannelOpenError) -> bool:
        """Whether a refused channel open was the connection's session limit; if so, no
        connection to this endpoint is asked for more sessions than it held then."""
        pooled = session.pooled
        if error.code not in _REFUSED_CODES or not pooled.alive:
            return False
        others = pooled.held + pooled.settling
        if others == 0:
            return False  # nothing else open there: not a limit on sessions
        self.budget = min(self.budget, others)
        self._notify()
        return True

    def waiting_reason(self) -> str:
        """Why no session could be had in time, in plain words."""
        if self.connections >= MAX_CONNECTIONS:
            return (
                f"every session is in use (the server allows {self.budget} per connection, "
                f"and {MAX_CONNECTIONS} connections are open)"
            )
        return f"not connected ({self._last_error or 'reconnecting'})"

    async def close(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, []
        self._notify()
        for pooled in pool:
            pooled.conn.close()
        for pooled in pool:
            with contextlib.suppress(Exception):
                await pooled.conn.wait_closed()
