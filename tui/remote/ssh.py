"""The SSH transport: a few asyncssh connections per endpoint, shared by every channel.

:class:`SshLink` owns the connections to one SSH server. Every command is a new
channel (an SSH session) on one of them; a Proxmox node and each container
reached through it share the node's link. A server allows only so many sessions
per connection (OpenSSH's ``MaxSessions``, 10 by default), and a long-lived
stream holds its session for its whole life, so every session is counted
against its connection's budget and the link opens another connection to the
same endpoint when all of them are full. When an established connection is
lost, the link reconnects with capped, jittered backoff; it never retries a
refused host key or a failed login, because retrying those cannot help and may
lock an account.

Host keys are always checked against known_hosts, as OpenSSH checks them, for
the host, port and alias the connection's ssh config resolves the endpoint to
(:mod:`tui.remote.hostkeys`). ``host_key_policy: accept-new`` (an explicit
opt-in, as in OpenSSH) records the key the server offered in the handshake for a
host that known_hosts has never seen, and still refuses a key that changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import io
import os
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass

import asyncssh

from tui.config import HostKeyPolicy, SshEndpoint
from tui.errors import AuthError, CommandTimeout, HostKeyError, HostUnreachable, TransportError
from tui.remote.backoff import BACKOFF_CAP, backoff_delay
from tui.remote.hostkeys import HostKeyCheck, KnownHosts, Target, resolve
from tui.remote.transport import (
    Completed,
    RemoteProcess,
    Transport,
    remote_command,
    with_lifeline,
)

#: Missed keepalive answers before the link is declared lost.
KEEPALIVE_COUNT_MAX = 3
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
_CHUNK = 64 * 1024


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


class _Client(asyncssh.SSHClient):
    def __init__(self, link: SshLink, check: HostKeyCheck) -> None:
        self._link = link
        self._check = check
        self._conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        self._link._on_lost(self._conn, exc)

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        return self._check.offered(host, port, key)

    def validate_host_ca_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return self._check.offered_ca(key)


class _Session:
    """One session's claim on a connection's budget, from the channel-open request
    until the channel has closed at both ends."""

    def __init__(self, pooled: _Pooled) -> None:
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

    def __init__(self, session: _Session) -> None:
        super().__init__()
        self._session = session
        session.started = True

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._session.end(opened=True)


class _Pooled:
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

    def claim(self) -> _Session:
        self.held += 1
        return _Session(self)

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

    async def open(self, session: _Session, command: str) -> asyncssh.SSHClientProcess:
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


class SshLink:
    """The connections to one SSH endpoint: as many as its sessions need, reconnecting
    after a loss."""

    def __init__(self, endpoint: SshEndpoint) -> None:
        self.endpoint = endpoint
        #: Successful connections made so far (1 for a link that never dropped and
        #: never needed a second connection).
        self.connects = 0
        self._pool: list[_Pooled] = []
        #: Sessions each connection is asked to hold (lowered when a server refuses).
        self.budget = SESSIONS_PER_CONNECTION
        self._changed = asyncio.Event()
        self._dialing = False
        self._runs = asyncio.Semaphore(MAX_CONCURRENT_RUNS)
        self._ever_connected = False
        self._attempt = 0
        self._retry_at = 0.0
        self._last_error: str | None = None
        self._status = LinkStatus(LinkState.IDLE)
        self._closed = False
        #: Where the last dial went, as the ssh config resolved it.
        self._target: Target | None = None

    @property
    def status(self) -> LinkStatus:
        return self._status

    @property
    def name(self) -> str:
        return f"ssh {self.endpoint}"

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

    async def session(self, deadline: float) -> _Session:
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
                conn = await self._connect_once()
            except HostUnreachable as error:
                self._last_error = error.message
                self._retry_at = time.monotonic() + backoff_delay(self._attempt)
                self._attempt += 1
                return
            self._connected()
        else:
            conn = await self._connection()
        self._pool.append(_Pooled(conn, self._notify))

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
                conn = await self._connect_once()
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

    def refused(self, session: _Session, error: asyncssh.ChannelOpenError) -> bool:
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

    async def _connect_once(self) -> asyncssh.SSHClientConnection:
        ep = self.endpoint
        strict = ep.host_key_policy is HostKeyPolicy.STRICT
        # A single stat of a file named in hosts.yaml; not worth a thread.
        if strict and ep.known_hosts and not os.path.exists(ep.known_hosts):  # noqa: ASYNC240
            raise HostKeyError(
                f"{self.name}: known_hosts file {ep.known_hosts} does not exist, so no "
                "host key can be checked; create it or fix hosts.yaml"
            )
        options: dict[str, object] = {
            "connect_timeout": ep.connect_timeout,
            "keepalive_interval": ep.keepalive_interval,
            "keepalive_count_max": KEEPALIVE_COUNT_MAX,
        }
        if ep.port:
            options["port"] = ep.port
        if ep.user:
            options["username"] = ep.user
        if ep.identity_file:
            options["client_keys"] = [ep.identity_file]
        if ep.proxy_jump:
            options["tunnel"] = ep.proxy_jump
        try:
            return await asyncio.wait_for(self._dial(options), ep.connect_timeout + 1)
        except asyncssh.PermissionDenied as error:
            who = ep.user or (self._target.user if self._target else "the default user")
            keys = (
                f"identity_file {ep.identity_file}"
                if ep.identity_file
                else "ssh-agent and default keys"
            )
            raise AuthError(
                f"{self.name}: permission denied for {who}: the server accepted none of the "
                f"keys offered ({keys}); {error.reason}"
            ) from None
        except (asyncio.TimeoutError, asyncssh.misc.ConnectionLost) as error:
            if isinstance(error, asyncio.TimeoutError):
                raise HostUnreachable(
                    f"{self.name}: no answer within {ep.connect_timeout:g} s (connect timeout)"
                ) from None
            raise HostUnreachable(f"{self.name}: connection lost while connecting") from None
        except ConnectionRefusedError:
            port = self._target.port if self._target else ep.port or 22
            raise HostUnreachable(
                f"{self.name}: connection refused on port {port} (is sshd running there?)"
            ) from None
        except socket.gaierror as error:
            host = self._target.host if self._target else ep.host
            raise HostUnreachable(
                f"{self.name}: host name {host!r} not found ({error.strerror})"
            ) from None
        except asyncssh.DisconnectError as error:
            raise HostUnreachable(
                f"{self.name}: the server closed the connection: {error.reason}"
            ) from None
        except OSError as error:
            raise HostUnreachable(
                f"{self.name}: cannot connect: {error.strerror or error}"
            ) from None
        except ValueError as error:  # asyncssh's own "bad config" errors (unreadable key, …)
            raise TransportError(f"{self.name}: {error}") from None

    async def _dial(self, kwargs: dict[str, object]) -> asyncssh.SSHClientConnection:
        """One connection, its host key checked as OpenSSH would (see
        :mod:`tui.remote.hostkeys`) against the known_hosts files, host name, port and
        alias that this connection's own options resolve ``~/.ssh/config`` to."""
        ep = self.endpoint
        self._target = None
        # ``config=()`` as connect() passes it: read ~/.ssh/config (the default here is not to).
        options = await asyncssh.SSHClientConnectionOptions.construct(
            config=(), host=ep.host, **kwargs
        )
        target = self._target = resolve(options, ep.known_hosts)
        try:
            known = await asyncio.to_thread(KnownHosts.load, target.files)
        except HostKeyError as error:
            raise HostKeyError(f"{self.name}: {error.message}") from None
        check = HostKeyCheck(
            target, known, accept_new=ep.host_key_policy is HostKeyPolicy.ACCEPT_NEW
        )
        if options.config.get("HostKeyAlgorithms") is None:  # the ssh config's choice wins
            kwargs = {**kwargs, "server_host_key_algs": check.host_key_algorithms()}
        try:
            conn = await asyncssh.connect(
                ep.host,
                options=options,
                **kwargs,  # again: connect() would reset the port and tunnel otherwise
                known_hosts=check.known_hosts,
                client_factory=lambda: _Client(self, check),
            )
        except asyncssh.HostKeyNotVerifiable as error:
            raise HostKeyError(check.refusal(self.name, error.reason)) from None
        except (asyncssh.Error, OSError):
            # A login refused after the handshake: the key was accepted all the same,
            # and OpenSSH records it then too.
            with contextlib.suppress(HostKeyError):
                await asyncio.to_thread(check.record)
            raise
        try:
            await asyncio.to_thread(check.record)
        except HostKeyError as error:
            conn.close()
            raise HostKeyError(f"{self.name}: {error.message}") from None
        return conn

    async def close(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, []
        self._notify()
        for pooled in pool:
            pooled.conn.close()
        for pooled in pool:
            with contextlib.suppress(Exception):
                await pooled.conn.wait_closed()


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
        async with self.link._runs:
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


__all__ = ["BACKOFF_CAP", "LinkState", "LinkStatus", "SshLink", "SshTransport", "backoff_delay"]
