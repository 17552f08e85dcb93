"""One entry of hosts.yaml's ``hosts:``: the chain of hops that reaches the host, and its
services. Each hop's keys are its own module's (tui/hops/); this reads which are given."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import yaml

from tui import hops
from tui.config import Host, Service
from tui.hops.spec import Hop, HopInput, HopSpec
from tui.hostsfile.instances import expand_instances
from tui.hostsfile.reader import NAME_RE, Reader
from tui.hostsfile.services import parse_service

Entries = dict[str, tuple[yaml.Node, yaml.Node]]


def parse_host(reader: Reader, name: str, key_node: yaml.Node, node: yaml.Node) -> Host:
    key = f"hosts.{name}"
    reader.name(key_node, name, key, "host names use letters, digits, '.', '_' and '-'", NAME_RE)
    kinds = hops.specs()
    options = tuple(dict.fromkeys(option for spec in kinds.values() for option in spec.options))
    entries = reader.mapping(node, key, allowed=(*kinds, "services", *options))
    chain = _chain(reader, key, node, entries, kinds)
    source = reader.source(key_node)

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
    return Host(name=name, source=source, services=MappingProxyType(services), hops=chain)


def _chain(
    reader: Reader, key: str, node: yaml.Node, entries: Entries, kinds: Mapping[str, HopSpec]
) -> tuple[Hop, ...]:
    """The host's hops: the one kind that is a base, then the others in rank order."""
    given = [kinds[name] for name in entries if name in kinds]
    bases = [spec for spec in given if spec.base]
    ways = [spec.written for spec in kinds.values() if spec.base]
    either = f"{', '.join(ways[:-1])} or {ways[-1]}"
    if not bases:
        if given:
            first = given[0].kind
            raise reader.fail(
                entries[first][0],
                f"{key}.{first}",
                f"goes on from a machine babysit must reach first: say which with {either}",
            )
        neither = f"{', '.join(ways[:-1])} nor {ways[-1]}"
        raise reader.fail(node, key, f"says neither {neither} (how to reach it?)")
    if len(bases) > 1:
        second = bases[1].kind
        raise reader.fail(
            entries[second][0],
            f"{key}.{second}",
            f"a host has one transport, but this one has {' and '.join(b.kind for b in bases)}",
        )
    for option, (option_key, _) in entries.items():
        owners = [spec.kind for spec in kinds.values() if option in spec.options]
        if owners and not any(option in spec.options for spec in given):
            raise reader.fail(
                option_key, f"{key}.{option}", f"applies to {' and '.join(owners)} hosts only"
            )
    ordered = [bases[0], *sorted((s for s in given if not s.base), key=lambda s: s.rank)]
    chain: list[Hop] = []
    for spec in ordered:
        chain.extend(
            spec.parse(HopInput(reader, f"{key}.{spec.kind}", key, entries[spec.kind][1], entries))
        )
    return tuple(chain)
