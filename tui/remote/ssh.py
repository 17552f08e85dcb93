"""The SSH transport: one asyncssh connection per endpoint, shared by every channel.

:class:`SshLink` owns the connection to one SSH server. Every command is a new
channel on it; a Proxmox node and each container reached through it share the
node's link. When an established connection is lost, the link reconnects with
capped, jittered backoff; it never retries a refused host key or a failed login,
because retrying those cannot help and may lock an account.

Host keys are always checked against known_hosts. ``host_key_policy:
accept-new`` (an explicit opt-in, as in OpenSSH) records a key for a host that
known_hosts has never seen, and still refuses a key that changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import socket
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from tui.config import HostKeyPolicy, SshEndpoint
from tui.errors import AuthError, CommandTimeout, HostKeyError, HostUnreachable, TransportError
from tui.remote.backoff import BACKOFF_CAP, backoff_delay
from tui.remote.transport import (
    Completed,
    RemoteProcess,
    Transport,
    remote_command,
    with_lifeline,
)

#: Missed keepalive answers before the link is declared lost.
KEEPALIVE_COUNT_MAX = 3
#: Channels one link runs at once for run(); OpenSSH allows 10 sessions per
#: connection by default (MaxSessions), and streams need the rest.
MAX_CONCURRENT_RUNS = 6
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
    def __init__(self, link: SshLink) -> None:
        self._link = link

    def connection_lost(self, exc: Exception | None) -> None:
        self._link._on_lost(exc)


class SshLink:
    """The one connection to one SSH endpoint, reconnecting after a loss."""

    def __init__(self, endpoint: SshEndpoint) -> None:
        self.endpoint = endpoint
        #: Successful connections made so far (1 for a link that never dropped).
        self.connects = 0
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()
        self._runs = asyncio.Semaphore(MAX_CONCURRENT_RUNS)
        self._ever_connected = False
        self._attempt = 0
        self._retry_at = 0.0
        self._last_error: str | None = None
        self._status = LinkStatus(LinkState.IDLE)
        self._closed = False

    @property
    def status(self) -> LinkStatus:
        return self._status

    @property
    def name(self) -> str:
        return f"ssh {self.endpoint}"

    def _on_lost(self, exc: Exception | None) -> None:
        if self._closed:
            return
        self._last_error = f"connection lost ({exc})" if exc else "connection closed by the server"
        self._status = LinkStatus(LinkState.RECONNECTING, retry_at=time.monotonic())

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The live connection, connecting or reconnecting as needed.

        A first connection that fails raises at once (the caller decides when to
        try again). Once a connection existed and was lost, this waits through
        backoff and keeps trying until it succeeds or the caller cancels it.
        """
        if self._closed:
            raise TransportError(f"{self.name}: link closed")
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        async with self._lock:
            conn = self._conn
            if conn is not None and not conn.is_closed():
                return conn
            self._conn = None
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
                self._conn = conn
                self._ever_connected = True
                self._attempt = 0
                self._retry_at = 0.0
                self.connects += 1
                self._status = LinkStatus(LinkState.CONNECTED)
                return conn

    async def _connect_once(self) -> asyncssh.SSHClientConnection:
        ep = self.endpoint
        try:
            return await self._dial()
        except asyncssh.HostKeyNotVerifiable:
            if ep.host_key_policy is HostKeyPolicy.ACCEPT_NEW and not self._host_listed():
                await self._record_host_key()
                try:
                    return await self._dial()
                except asyncssh.HostKeyNotVerifiable:
                    pass
            raise await self._host_key_error() from None

    async def _dial(self) -> asyncssh.SSHClientConnection:
        ep = self.endpoint
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
        if ep.known_hosts:
            if not os.path.exists(ep.known_hosts):  # noqa: ASYNC240 - one stat, as asyncssh's own read
                if ep.host_key_policy is HostKeyPolicy.ACCEPT_NEW:
                    raise asyncssh.HostKeyNotVerifiable("known_hosts file does not exist yet")
                raise HostKeyError(
                    f"{self.name}: known_hosts file {ep.known_hosts} does not exist, so no "
                    "host key can be checked; create it or fix hosts.yaml"
                )
            options["known_hosts"] = ep.known_hosts
        if ep.proxy_jump:
            options["tunnel"] = ep.proxy_jump
        try:
            return await asyncio.wait_for(
                asyncssh.connect(ep.host, client_factory=lambda: _Client(self), **options),
                ep.connect_timeout + 1,
            )
        except asyncssh.HostKeyNotVerifiable:
            raise
        except asyncssh.PermissionDenied as error:
            who = ep.user or "the default user"
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
            port = ep.port or 22
            raise HostUnreachable(
                f"{self.name}: connection refused on port {port} (is sshd running there?)"
            ) from None
        except socket.gaierror as error:
            raise HostUnreachable(
                f"{self.name}: host name {ep.host!r} not found ({error.strerror})"
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

    def _known_hosts_path(self) -> Path:
        return Path(self.endpoint.known_hosts or "~/.ssh/known_hosts").expanduser()

    def _known_hosts_name(self) -> str:
        """The host as known_hosts writes it: ``host``, or ``[host]:port`` off port 22."""
        ep = self.endpoint
        port = ep.port or 22
        return ep.host if port == 22 else f"[{ep.host}]:{port}"

    def _host_listed(self) -> bool:
        """Whether known_hosts lists any key for this host (then a mismatch is a change)."""
        path = self._known_hosts_path()
        if not path.exists():
            return False
        try:
            keys = asyncssh.match_known_hosts(
                str(path), self.endpoint.host, self.endpoint.host, self.endpoint.port or 22
            )
        except (OSError, ValueError):
            return False
        return any(keys[:3])

    async def _server_key(self) -> asyncssh.SSHKey | None:
        ep = self.endpoint
        try:
            return await asyncio.wait_for(
                asyncssh.get_server_host_key(ep.host, ep.port or 22, tunnel=ep.proxy_jump or ()),
                ep.connect_timeout + 1,
            )
        except (OSError, asyncssh.Error, asyncio.TimeoutError):
            return None

    async def _record_host_key(self) -> None:
        key = await self._server_key()
        if key is None:
            raise HostUnreachable(f"{self.name}: could not read the server's host key")
        path = self._known_hosts_path()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = self._known_hosts_name()
        public = key.export_public_key("openssh").decode().split()
        with path.open("a", encoding="utf-8") as out:
            out.write(f"{name} {public[0]} {public[1]}\n")

    async def _host_key_error(self) -> HostKeyError:
        path = self._known_hosts_path()
        name = self._known_hosts_name()
        key = await self._server_key()
        offered = f"{key.get_algorithm()} {key.get_fingerprint()}" if key else "a key"
        port = self.endpoint.port or 22
        if self._host_listed():
            return HostKeyError(
                f"{self.name}: HOST KEY CHANGED — {path} lists another key for {name}, but the "
                f"server offers {offered}. This may be an attack or a reinstalled host; only if "
                f"you know why, remove the old key with: ssh-keygen -R '{name}' -f {path}"
            )
        keyscan = (
            f"ssh-keyscan -p {port} {self.endpoint.host}"
            if port != 22
            else (f"ssh-keyscan {self.endpoint.host}")
        )
        return HostKeyError(
            f"{self.name}: host key not known ({offered} is not in {path}). Check the "
            f"fingerprint with the host's owner, then add it: {keyscan} >> {path} "
            "(or set host_key_policy: accept-new for this host in hosts.yaml)"
        )

    async def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                await conn.wait_closed()


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
        """Open a channel running ``argv``; a channel that fails to open on a
        connection that just died is retried once on a fresh connection (the
        command never started, so this cannot run it twice)."""
        command = self._command(argv)
        for attempt in (0, 1):
            remaining = deadline - time.monotonic()
            try:
                conn = await asyncio.wait_for(self.link.connection(), max(remaining, 0.01))
            except asyncio.TimeoutError:
                raise HostUnreachable(
                    f"{self.link.name}: not connected ({self.link._last_error or 'reconnecting'}); "
                    f"gave up after the command's {remaining:.0f} s"
                ) from None
            try:
                return await conn.create_process(command, encoding=None)
            except (asyncssh.ChannelOpenError, asyncssh.DisconnectError, OSError) as error:
                if attempt == 0 and conn.is_closed():
                    continue
                reason = getattr(error, "reason", None) or str(error)
                raise HostUnreachable(
                    f"{self.link.name}: cannot open a channel: {reason}"
                ) from None
        raise AssertionError("unreachable")

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
