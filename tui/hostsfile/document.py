"""hosts.yaml's text read whole: its ``hosts:`` and its ``groups:``.

Every mistake becomes one :class:`~tui.errors.ConfigError` line naming the file,
the line and the key (``hosts.yaml:12: hosts.kpro5.servces: unknown key (did you
mean 'services'?)``), so the person who wrote the file can fix it without reading
code. The tree is composed within bounds (depth, size, aliases, control characters:
:mod:`tui.yamlnodes`) before any value is read from it.
"""

from __future__ import annotations

from types import MappingProxyType

import yaml

from tui import yamlnodes
from tui.config import Config, Host, suggest
from tui.hostsfile.hosts import parse_host
from tui.hostsfile.reader import MAX_NAME, Reader
from tui.yamlnodes import shown

#: Hosts in one group.
MAX_GROUP = 4096


def parse_config(text: str, path: str = "hosts.yaml") -> Config:
    """Parse and validate hosts.yaml text. Raises ConfigError naming ``path``, line and key."""
    document = yamlnodes.compose(text, path)
    reader = Reader(path, document.nodes)
    root = document.root
    if root is None:
        raise yamlnodes.error(path, 1, "hosts", "the file is empty; it needs a 'hosts:' mapping")
    top = reader.mapping(root, "", allowed=("hosts", "groups"))
    if "hosts" not in top:
        raise reader.fail(root, "hosts", "missing required key")
    hosts_key, hosts_node = top["hosts"]
    hosts: dict[str, Host] = {}
    if isinstance(hosts_node, yaml.ScalarNode) and hosts_node.tag.endswith(":null"):
        hosts_node = yaml.MappingNode("tag:yaml.org,2002:map", [], hosts_key.start_mark)
    for name, (key_node, value_node) in reader.mapping(hosts_node, "hosts").items():
        hosts[name] = parse_host(reader, name, key_node, value_node)
    groups: dict[str, tuple[str, ...]] = {}
    if "groups" in top:
        for group, (g_key, g_node) in reader.mapping(top["groups"][1], "groups").items():
            if len(group) > MAX_NAME:
                raise reader.fail(
                    g_key, "groups", f"a group's name may be at most {MAX_NAME} characters long"
                )
            if group in hosts:
                raise reader.fail(g_key, f"groups.{group}", "a group cannot have a host's name")
            members = []
            for index, item in enumerate(reader.sequence(g_node, f"groups.{group}", MAX_GROUP)):
                member = reader.string(item, f"groups.{group}[{index}]", limit=MAX_NAME)
                if member not in hosts:
                    raise reader.fail(
                        item,
                        f"groups.{group}[{index}]",
                        f"no host {shown(member)}{suggest(member, hosts)}",
                    )
                members.append(member)
            groups[group] = tuple(members)
    return Config(
        path=path,
        hosts=MappingProxyType(hosts),
        source=reader.source(hosts_key),
        groups=MappingProxyType(groups),
    )
