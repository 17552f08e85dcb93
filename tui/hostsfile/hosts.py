"""One entry of hosts.yaml's ``hosts:``: how babysit reaches the host, and its services."""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType

import yaml

from tui.config import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_KEEPALIVE_INTERVAL,
    Host,
    HostKeyPolicy,
    Service,
    SshEndpoint,
    TransportKind,
)
from tui.hostsfile.instances import expand_instances
from tui.hostsfile.reader import NAME_RE, Reader
from tui.hostsfile.services import parse_service
from tui.yamlnodes import shown

_HOST_KEYS = (
    "ssh",
    "pct",
    "local",
    "services",
    "port",
    "user",
    "identity_file",
    "known_hosts",
    "proxy_jump",
    "host_key_policy",
    "connect_timeout",
    "keepalive_interval",
)
_SSH_OPTION_KEYS = _HOST_KEYS[4:]
_PCT_KEYS = ("node", "vmid")
_TARGET_RE = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<host>[^@:\s\[\]]+))"
    r"(?::(?P<port>\d+))?$"
)


def parse_host(reader: Reader, name: str, key_node: yaml.Node, node: yaml.Node) -> Host:
    key = f"hosts.{name}"
    reader.name(key_node, name, key, "host names use letters, digits, '.', '_' and '-'", NAME_RE)
    entries = reader.mapping(node, key, allowed=_HOST_KEYS)
    given = [kind for kind in ("ssh", "pct", "local") if kind in entries]
    if not given:
        raise reader.fail(node, key, "says neither ssh:, pct: nor local: true (how to reach it?)")
    if len(given) > 1:
        second = entries[given[1]][0]
        raise reader.fail(
            second,
            f"{key}.{given[1]}",
            f"a host has one transport, but this one has {' and '.join(given)}",
        )
    kind = given[0]
    source = reader.source(key_node)
    ssh: SshEndpoint | None = None
    vmid: int | None = None
    if kind == "local":
        v_node = entries["local"][1]
        if not reader.boolean(v_node, f"{key}.local"):
            raise reader.fail(v_node, f"{key}.local", "must be true (or remove the key)")
        for option in _SSH_OPTION_KEYS:
            if option in entries:
                raise reader.fail(
                    entries[option][0], f"{key}.{option}", "applies to ssh and pct hosts only"
                )
        transport = TransportKind.LOCAL
    elif kind == "ssh":
        ssh = _parse_endpoint(reader, entries, key, entries["ssh"][1], f"{key}.ssh")
        transport = TransportKind.SSH
    else:
        pct = reader.mapping(entries["pct"][1], f"{key}.pct", allowed=_PCT_KEYS)
        for required in _PCT_KEYS:
            if required not in pct:
                raise reader.fail(
                    entries["pct"][1], f"{key}.pct.{required}", "missing required key"
                )
        ssh = _parse_endpoint(reader, entries, key, pct["node"][1], f"{key}.pct.node")
        vmid = reader.integer(pct["vmid"][1], f"{key}.pct.vmid", 100, 999_999_999)
        transport = TransportKind.PCT

    services: dict[str, Service] = {}
    if "services" in entries:
        services_node = entries["services"][1]
        if not (isinstance(services_node, yaml.ScalarNode) and services_node.tag.endswith(":null")):
            for service_name, (s_key, s_node) in reader.mapping(
                services_node, f"{key}.services"
            ).items():
                for one_name, one_node in expand_instances(
                    reader, f"{key}.services.{service_name}", service_name, s_node
                ):
                    if one_name in services:
                        raise reader.fail(
                            s_key, f"{key}.services.{one_name}", "two services get this name"
                        )
                    services[one_name] = parse_service(reader, name, one_name, s_key, one_node)
    return Host(
        name=name,
        transport=transport,
        source=source,
        services=MappingProxyType(services),
        ssh=ssh,
        vmid=vmid,
    )


def _parse_endpoint(
    reader: Reader,
    entries: dict[str, tuple[yaml.Node, yaml.Node]],
    host_key: str,
    target_node: yaml.Node,
    target_key: str,
) -> SshEndpoint:
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
        given = f", not {port}" if port is not None else ""
        raise reader.fail(target_node, target_key, f"port must be between 1 and 65535{given}")

    def option(name: str) -> yaml.Node | None:
        return entries[name][1] if name in entries else None

    if (node := option("port")) is not None:
        value = reader.integer(node, f"{host_key}.port", 1, 65535)
        if port is not None and value != port:
            raise reader.fail(node, f"{host_key}.port", f"is {value} but {target_key} says {port}")
        port = value
    if (node := option("user")) is not None:
        value_s = reader.string(node, f"{host_key}.user")
        if user is not None and value_s != user:
            raise reader.fail(
                node,
                f"{host_key}.user",
                f"is {shown(value_s)} but {target_key} says {shown(user)}",
            )
        user = value_s
    identity_file = known_hosts = proxy_jump = None
    if (node := option("identity_file")) is not None:
        identity_file = str(Path(reader.host_path(node, f"{host_key}.identity_file")).expanduser())
    if (node := option("known_hosts")) is not None:
        known_hosts = str(Path(reader.host_path(node, f"{host_key}.known_hosts")).expanduser())
    if (node := option("proxy_jump")) is not None:
        proxy_jump = reader.string(node, f"{host_key}.proxy_jump")
        if not _TARGET_RE.match(proxy_jump):
            raise reader.fail(node, f"{host_key}.proxy_jump", "expected user@host[:port]")
    policy = HostKeyPolicy.STRICT
    if (node := option("host_key_policy")) is not None:
        policy = reader.choice(node, f"{host_key}.host_key_policy", HostKeyPolicy)  # type: ignore[assignment]
    connect_timeout = DEFAULT_CONNECT_TIMEOUT
    if (node := option("connect_timeout")) is not None:
        connect_timeout = reader.number(node, f"{host_key}.connect_timeout", 0, 600)
    keepalive = DEFAULT_KEEPALIVE_INTERVAL
    if (node := option("keepalive_interval")) is not None:
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
