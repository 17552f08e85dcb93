"""One SSH connection dialled to an endpoint, as OpenSSH would make it.

Its options come from hosts.yaml and ``~/.ssh/config``; its host key is always
checked against known_hosts, as OpenSSH checks it, for the host, port and alias the
connection's ssh config resolves the endpoint to (:mod:`tui.remote.hostkeys`).
``host_key_policy: accept-new`` (an explicit opt-in, as in OpenSSH) records the key
the server offered in the handshake for a host that known_hosts has never seen, and
still refuses a key that changed. Every way a dial fails becomes one error in plain
words: :class:`HostUnreachable` (worth another try), :class:`HostKeyError` or
:class:`AuthError` (never retried).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable

import asyncssh

from tui.config import HostKeyPolicy, SshEndpoint
from tui.errors import AuthError, HostKeyError, HostUnreachable, TransportError
from tui.remote.hostkeys import HostKeyCheck, KnownHosts, Target, resolve

#: Missed keepalive answers before the link is declared lost.
KEEPALIVE_COUNT_MAX = 3

#: The ciphers offered, best first, unless the ssh config names its own (``Ciphers``):
#: asyncssh's defaults with AES-GCM ahead of ChaCha20-Poly1305. All are AEAD or
#: OpenSSH's own defaults; asyncssh builds two new ChaCha20 cipher contexts for every
#: packet (about 14 us each way here) where AES-GCM reuses one (about 2 us), and a
#: follow at a few lines a second sends one packet per line.
CIPHERS = tuple(
    alg
    for alg in (
        "aes128-gcm@openssh.com",
        "aes256-gcm@openssh.com",
        "chacha20-poly1305@openssh.com",
        "aes256-ctr",
        "aes192-ctr",
        "aes128-ctr",
    )
    if alg.encode() in asyncssh.encryption.get_encryption_algs()
)

#: Called with a connection and the error that ended it (None for a clean close).
Lost = Callable[[asyncssh.SSHClientConnection | None, Exception | None], None]


class _Client(asyncssh.SSHClient):
    def __init__(self, lost: Lost, check: HostKeyCheck) -> None:
        self._lost = lost
        self._check = check
        self._conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost(self._conn, exc)

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        return self._check.offered(host, port, key)

    def validate_host_ca_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return self._check.offered_ca(key)


class Dialer:
    """Dials connections to one endpoint; ``lost`` hears of each one's end."""

    def __init__(self, endpoint: SshEndpoint, name: str, lost: Lost) -> None:
        self.endpoint = endpoint
        self.name = name
        self._lost = lost
        #: Where the last dial went, as the ssh config resolved it.
        self.target: Target | None = None

    async def connect(self) -> asyncssh.SSHClientConnection:
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
            who = ep.user or (self.target.user if self.target else "the default user")
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
            port = self.target.port if self.target else ep.port or 22
            raise HostUnreachable(
                f"{self.name}: connection refused on port {port} (is sshd running there?)"
            ) from None
        except socket.gaierror as error:
            host = self.target.host if self.target else ep.host
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
        self.target = None
        # ``config=()`` as connect() passes it: read ~/.ssh/config (the default here is not to).
        options = await asyncssh.SSHClientConnectionOptions.construct(
            config=(), host=ep.host, **kwargs
        )
        target = self.target = resolve(options, ep.known_hosts)
        try:
            known = await asyncio.to_thread(KnownHosts.load, target.files)
        except HostKeyError as error:
            raise HostKeyError(f"{self.name}: {error.message}") from None
        check = HostKeyCheck(
            target, known, accept_new=ep.host_key_policy is HostKeyPolicy.ACCEPT_NEW
        )
        if options.config.get("HostKeyAlgorithms") is None:  # the ssh config's choice wins
            kwargs = {**kwargs, "server_host_key_algs": check.host_key_algorithms()}
        if options.config.get("Ciphers") is None:
            kwargs = {**kwargs, "encryption_algs": CIPHERS}
        try:
            conn = await asyncssh.connect(
                ep.host,
                options=options,
                **kwargs,  # again: connect() would reset the port and tunnel otherwise
                known_hosts=check.known_hosts,
                client_factory=lambda: _Client(self._lost, check),
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
