"""The ssh hop: commands run on an SSH server, as channels on the pool's one link to it.

hosts.yaml: ``ssh: user@host[:port]`` and the host-level options below, which the
pct hop's node (an SSH server too) reads as well. ``None`` options are left to
``~/.ssh/config`` and OpenSSH's defaults, as for the ``ssh`` command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tui.config import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_KEEPALIVE_INTERVAL,
    HostKeyPolicy,
    SshEndpoint,
)
from tui.hops.spec import DEFAULT_PYTHON, Hop, HopInput, HopSpec
from tui.yamlnodes import shown

if TYPE_CHECKING:
    import yaml

KIND = "ssh"
#: The host-level keys that set how the SSH server is reached.
OPTIONS = (
    "port",
    "user",
    "identity_file",
    "known_hosts",
    "proxy_jump",
    "host_key_policy",
    "connect_timeout",
    "keepalive_interval",
)
_TARGET_RE = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<host>[^@:\s\[\]]+))"
    r"(?::(?P<port>\d+))?$"
)


@dataclass(frozen=True)
class SshHop(Hop):
    """An SSH server; the chain's commands travel on the pool's link to ``server``."""

    kind = KIND
    server: SshEndpoint

    @property
    def texts(self) -> tuple[str, ...]:
        jump = (f"{KIND} {self.server.proxy_jump}",) if self.server.proxy_jump else ()
        return (*jump, f"{KIND} {self.server}")

    @property
    def endpoint(self) -> SshEndpoint:
        return self.server

    def python(self, outer: str) -> str:
        return DEFAULT_PYTHON


def parse(given: HopInput) -> tuple[Hop, ...]:
    return (SshHop(parse_endpoint(given, given.node, given.key)),)


def parse_endpoint(given: HopInput, target_node: yaml.Node, target_key: str) -> SshEndpoint:
    """The SSH server ``target_node`` names (``user@host[:port]``), with the host's options."""
    reader, host_key = given.reader, given.host_key
    target = reader.string(target_node, target_key)
    match = _TARGET_RE.match(target)
    if not match:
        raise reader.fail(
            target_node, target_key, f"expected user@host[:port], not {shown(target)}"
        )
    host = match["ipv6"] or match["host"]
    user = match["user"]
    port = int(match["port"]) if match["port"] and len(match["port"]) <= 5 else None
    if match["port"] and (port is None or not 1 <= port <= 65535):
        given_port = f", not {port}" if port is not None else ""
        raise reader.fail(target_node, target_key, f"port must be between 1 and 65535{given_port}")

    if (node := given.option("port")) is not None:
        value = reader.integer(node, f"{host_key}.port", 1, 65535)
        if port is not None and value != port:
            raise reader.fail(node, f"{host_key}.port", f"is {value} but {target_key} says {port}")
        port = value
    if (node := given.option("user")) is not None:
        value_s = reader.string(node, f"{host_key}.user")
        if user is not None and value_s != user:
            raise reader.fail(
                node,
                f"{host_key}.user",
                f"is {shown(value_s)} but {target_key} says {shown(user)}",
            )
        user = value_s
    identity_file = known_hosts = proxy_jump = None
    if (node := given.option("identity_file")) is not None:
        identity_file = str(Path(reader.host_path(node, f"{host_key}.identity_file")).expanduser())
    if (node := given.option("known_hosts")) is not None:
        known_hosts = str(Path(reader.host_path(node, f"{host_key}.known_hosts")).expanduser())
    if (node := given.option("proxy_jump")) is not None:
        proxy_jump = reader.string(node, f"{host_key}.proxy_jump")
        if not _TARGET_RE.match(proxy_jump):
            raise reader.fail(node, f"{host_key}.proxy_jump", "expected user@host[:port]")
    policy = HostKeyPolicy.STRICT
    if (node := given.option("host_key_policy")) is not None:
        policy = reader.choice(node, f"{host_key}.host_key_policy", HostKeyPolicy)  # type: ignore[assignment]
    connect_timeout = DEFAULT_CONNECT_TIMEOUT
    if (node := given.option("connect_timeout")) is not None:
        connect_timeout = reader.number(node, f"{host_key}.connect_timeout", 0, 600)
    keepalive = DEFAULT_KEEPALIVE_INTERVAL
    if (node := given.option("keepalive_interval")) is not None:
        keepalive = reader.number(node, f"{host_key}.keepalive_interval", 0, 3600)
    return SshEndpoint(
        host=host,
        port=port,
        user=user,
        identity_file=identity_file,
        known_hosts=known_hosts,
        proxy_jump=proxy_jump,
        host_key_policy=policy,
        connect_timeout=connect_timeout,
        keepalive_interval=keepalive,
    )


SPEC = HopSpec(kind=KIND, written=f"{KIND}:", rank=0, base=True, parse=parse, options=OPTIONS)
