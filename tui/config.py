"""hosts.yaml: where the hosts are, how to reach them, and what runs on them.

The file is read once into frozen dataclasses. Every mistake becomes one
:class:`~tui.errors.ConfigError` line naming the file, the line and the key
(``hosts.yaml:12: hosts.kpro5.servces: unknown key (did you mean 'services'?)``),
so the person who wrote the file can fix it without reading code.

The validator walks PyYAML's node tree rather than the loaded Python objects,
because only nodes remember their line numbers, and because duplicate keys —
which ``yaml.safe_load`` silently resolves to the last one — must be an error.
The tree is composed within bounds (depth, size, aliases, control characters:
:mod:`tui.yamlnodes`); each key's reader bounds what it takes (a path's length, a
list's items, the digits of a number).
"""

from __future__ import annotations

import difflib
import enum
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml

try:  # the regex parser of the standard library, to read a match: pattern's literal text
    from re import _parser as _sre_parser  # type: ignore[attr-defined]  # Python >= 3.11
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parser  # type: ignore[no-redef]

from tui import yamlnodes
from tui.core.sanitize import printable
from tui.errors import ConfigError, UsageError
from tui.yamlnodes import MAX_NODES, shown, unsafe_reason

CONFIG_ENV = "BABYSIT_CONFIG"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_KEEPALIVE_INTERVAL = 15.0


class Engine(enum.Enum):
    SGLANG = "sglang"
    VLLM = "vllm"
    GENERIC = "generic"


class HostKeyPolicy(enum.Enum):
    """What to do with a host key that known_hosts does not list. Mirrors OpenSSH."""

    #: Refuse, and tell the user how to add the key (OpenSSH ``StrictHostKeyChecking yes``).
    STRICT = "strict"
    #: Record a key for a host known_hosts has never seen; still refuse a changed key.
    ACCEPT_NEW = "accept-new"


class MetricsSource(enum.Enum):
    """Where a service's metrics come from: its own log lines, or its /metrics page."""

    LOG = "log"
    PROMETHEUS = "prometheus"


class TransportKind(enum.Enum):
    LOCAL = "local"
    SSH = "ssh"
    PCT = "pct"


#: The longest grace between SIGTERM and SIGKILL babysit waits (``stop_grace``, ``--grace``).
MAX_GRACE = 3600.0


@dataclass(frozen=True)
class Source:
    """Where in which file a value was written."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class SshEndpoint:
    """One SSH server to connect to, with everything needed to connect.

    ``None`` fields are left to ``~/.ssh/config`` and OpenSSH's defaults, as they
    would be for the ``ssh`` command. Two hosts with equal endpoints share one
    connection (e.g. a Proxmox node and the containers reached through it).
    """

    host: str
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    proxy_jump: str | None = None
    host_key_policy: HostKeyPolicy = HostKeyPolicy.STRICT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    keepalive_interval: float = DEFAULT_KEEPALIVE_INTERVAL

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port else ""
        return f"{user}{host}{port}"


@dataclass(frozen=True)
class LaunchSpec:
    """How babysit starts a service: an argv list (never a shell string), cwd and env."""

    command: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Service:
    """One inference server on one host. ``log`` is an absolute path on that host."""

    name: str
    host: str
    engine: Engine
    log: str
    source: Source
    port: int | None = None
    gpus: tuple[int, ...] = ()
    launch: LaunchSpec | None = None
    #: A regular expression matched against a process's command line, to recognise
    #: runs started by hand. Never a bare name (see :func:`too_broad`).
    match: str | None = None
    #: Text whose appearance in this run's log means the server is ready (replaces
    #: the engine's own ready line).
    ready: tuple[str, ...] = ()
    #: Seconds between SIGTERM and SIGKILL when babysit stops this service.
    stop_grace: float = 30.0
    #: How many renamed old logs (``<log>.<YYYYmmdd-HHMMSS>``) a relaunch keeps.
    keep_logs: int = 5
    #: ``prometheus``: read ``http://127.0.0.1:PORT/metrics`` on the host each refresh.
    metrics: MetricsSource = MetricsSource.LOG

    @property
    def label(self) -> str:
        return f"{self.host}/{self.name}"


@dataclass(frozen=True)
class Host:
    """A machine babysit can run commands on, and how it gets there.

    Invariant: ``ssh`` is set exactly when ``transport`` is SSH or PCT (for PCT it
    is the Proxmox node); ``vmid`` is set exactly when ``transport`` is PCT.
    """

    name: str
    transport: TransportKind
    source: Source
    services: Mapping[str, Service]
    ssh: SshEndpoint | None = None
    vmid: int | None = None

    def chain(self) -> tuple[str, ...]:
        """Each hop on the way to the host, e.g. ``("ssh root@pve1", "pct exec 105")``."""
        if self.transport is TransportKind.LOCAL:
            return ("local",)
        hops = []
        if self.ssh and self.ssh.proxy_jump:
            hops.append(f"ssh {self.ssh.proxy_jump}")
        hops.append(f"ssh {self.ssh}")
        if self.transport is TransportKind.PCT:
            hops.append(f"pct exec {self.vmid}")
        return tuple(hops)

    def chain_text(self) -> str:
        return " → ".join(self.chain())


@dataclass(frozen=True)
class Config:
    path: str
    hosts: Mapping[str, Host]
    source: Source
    #: Named lists of hosts (``babysit GROUP`` opens the fleet view on them).
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def host(self, name: str) -> Host:
        """The host called ``name``, or a UsageError that suggests the closest name."""
        try:
            return self.hosts[name]
        except KeyError:
            known = ", ".join(self.hosts) or "none"
            raise UsageError(
                f"{self.source}: hosts: no host {name!r}{_suggest(name, self.hosts)}; "
                f"hosts in this file: {known}"
            ) from None

    def service(self, spec: str) -> tuple[Host, Service | None]:
        """Resolve ``HOST`` or ``HOST/SERVICE``."""
        host_name, _, service_name = spec.partition("/")
        host = self.host(host_name)
        if not service_name:
            return host, None
        try:
            return host, host.services[service_name]
        except KeyError:
            known = ", ".join(host.services) or "none"
            raise UsageError(
                f"{host.source}: hosts.{host.name}.services: no service {service_name!r}"
                f"{_suggest(service_name, host.services)}; services on {host.name}: {known}"
            ) from None


# --------------------------------------------------------------------------- finding


#: The commented example beside the package in a clone of the repository. It is named
#: so that the search below never finds it: its hosts are made up, and babysit never
#: contacts a host the user did not name.
EXAMPLE_CONFIG = Path(__file__).resolve().parent.parent / "hosts.example.yaml"
USER_CONFIG = "~/.config/babysit/hosts.yaml"


def find_config(explicit: str | None = None, *, cwd: Path | None = None) -> Path:
    """The hosts.yaml to use: ``--config``, then $BABYSIT_CONFIG, ./hosts.yaml, ~/.config."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(printable(f"{explicit}: no such file (given with --config)"))
        return path
    env = os.environ.get(CONFIG_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ConfigError(printable(f"{env}: no such file (named by ${CONFIG_ENV})"))
        return path
    candidates = [
        (cwd or Path.cwd()) / "hosts.yaml",
        Path(USER_CONFIG).expanduser(),
    ]
    for path in candidates:
        if path.is_file():
            return path
    looked = ", ".join(str(p) for p in candidates)
    if EXAMPLE_CONFIG.is_file():
        make = (
            f"to make one, copy the example and name your own hosts in it: "
            f"mkdir -p ~/.config/babysit && cp {EXAMPLE_CONFIG} {USER_CONFIG}"
        )
    else:
        make = (
            f"to make one, write {USER_CONFIG} with a hosts: entry per host "
            "(the README's hosts.yaml section shows every key)"
        )
    raise ConfigError(
        f"no hosts.yaml found (looked in {looked}); pass --config FILE or set "
        f"${CONFIG_ENV}; {make}"
    )


def load_config(explicit: str | None = None) -> Config:
    return parse_config_file(find_config(explicit))


def parse_config_file(path: Path) -> Config:
    return parse_config(yamlnodes.read_config_text(str(path)), str(path))


# --------------------------------------------------------------------------- parsing

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
_SERVICE_KEYS = (
    "engine",
    "log",
    "port",
    "gpus",
    "launch",
    "match",
    "ready",
    "stop_grace",
    "keep_logs",
    "instances",
    "metrics",
)
#: ``{i}``, ``{i + 30000}``, ``{30000 + i}``, ``{2 * i}``: all an instance template may say.
_TEMPLATE_RE = re.compile(r"\{([^{}]*)\}")
_EXPR_RE = re.compile(r"^\s*(?:(\d+)\s*([-+*])\s*)?i(?:\s*([-+*])\s*(\d+))?\s*$")
MAX_INSTANCES = 1024
#: Digits a number in an instance template may have (``{30000 + i}``).
_MAX_TEMPLATE_DIGITS = 9
#: Characters in the text of a number (``port: 30000``, ``stop_grace: 2.5``).
_MAX_NUMBER_TEXT = 64
#: Characters in a host, service, group or variable name.
MAX_NAME = 128
#: Characters in any single-line string (a match: pattern, a ready: text, an ssh target).
MAX_TEXT = 4096
#: Bytes of a path on a host (PATH_MAX, 4096, counts the terminating NUL).
MAX_PATH_BYTES = 4095
#: Items in launch.command; bytes of the command line and environment it runs with
#: (one argument may hold at most MAX_ARG_STRLEN, 128 KiB, on Linux; all of them,
#: with the host's own environment, at most ARG_MAX, 2 MiB by default).
MAX_COMMAND_ITEMS = 4096
MAX_LAUNCH_BYTES = 256 * 1024
#: Items in gpus: (the indexes 0 to 1023), in ready: and in one group.
MAX_GPUS = 1024
MAX_READY = 64
MAX_GROUP = 4096
_LAUNCH_KEYS = ("command", "cwd", "env")
_PCT_KEYS = ("node", "vmid")
_TARGET_RE = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<host>[^@:\s\[\]]+))"
    r"(?::(?P<port>\d+))?$"
)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_CONSTRUCTOR = yaml.constructor.SafeConstructor()
#: The scalar tags whose values the reader builds (anything else is the wrong type).
_BUILT = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null", "str", "timestamp")
)
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


class _Reader:
    """Reads typed values out of YAML nodes, raising ConfigError with file:line:key."""

    def __init__(self, path: str, nodes: int = 0) -> None:
        self.path = path
        #: Values still to be built from this file (see MAX_NODES): the document's own
        #: are spent already; each copy ``instances:`` makes spends more.
        self.budget = MAX_NODES - nodes

    def source(self, node: yaml.Node) -> Source:
        return Source(self.path, node.start_mark.line + 1)

    def fail(self, node: yaml.Node, key: str, message: str) -> ConfigError:
        return yamlnodes.error(self.path, node.start_mark.line + 1, key, message)

    def mapping(
        self, node: yaml.Node, key: str, allowed: tuple[str, ...] | None = None
    ) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """A mapping's entries as {name: (key node, value node)}; unknown or repeated keys fail."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key, f"must be a mapping, not {_describe(node)}")
        entries: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, key, "keys must be plain names")
            name = str(key_node.value)
            if (reason := unsafe_reason(name, key=True)) is not None:
                raise self.fail(key_node, key, reason)
            where = f"{key}.{name}" if key else name
            if name in entries:
                first = self.source(entries[name][0]).line
                raise self.fail(key_node, where, f"repeated key (first given on line {first})")
            if allowed is not None and name not in allowed:
                raise self.fail(key_node, where, f"unknown key{_suggest(name, allowed)}")
            entries[name] = (key_node, value_node)
        return entries

    def string(self, node: yaml.Node, key: str, limit: int = MAX_TEXT) -> str:
        """A one-line string of at most ``limit`` characters."""
        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
            raise self.fail(node, key, f"must be a string, not {_describe(node)}")
        text = str(node.value)
        if not text:
            raise self.fail(node, key, "must not be empty")
        if (reason := unsafe_reason(text, line_breaks=False)) is not None:
            raise self.fail(node, key, reason)
        if len(text) > limit:
            raise self.fail(
                node, key, f"is {len(text)} characters long; it may hold at most {limit}"
            )
        return text

    def host_path(self, node: yaml.Node, key: str) -> str:
        """A path on a host: a string of at most MAX_PATH_BYTES bytes."""
        text = self.string(node, key, limit=MAX_PATH_BYTES)
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_PATH_BYTES:
            raise self.fail(
                node, key, f"is {size} bytes long; a path may be at most {MAX_PATH_BYTES}"
            )
        return text

    def name(
        self, node: yaml.Node, text: str, key: str, what: str, pattern: re.Pattern[str]
    ) -> str:
        """``text``, the name ``node`` gives: ``what`` says which characters it may use."""
        if len(text) > MAX_NAME:
            raise self.fail(
                node, key, f"is {len(text)} characters long; a name may be at most {MAX_NAME}"
            )
        if not pattern.fullmatch(text):
            raise self.fail(node, key, what)
        return text

    def scalar_text(self, node: yaml.Node, key: str) -> str:
        """A scalar's text as written (``8`` stays ``"8"``): for argv and env values,
        which may span lines."""
        if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
            raise self.fail(node, key, f"must be a string, not {_describe(node)}")
        text = str(node.value)
        if (reason := unsafe_reason(text)) is not None:
            raise self.fail(node, key, reason)
        return text

    def integer(self, node: yaml.Node, key: str, low: int, high: int) -> int:
        value = self._construct(node, key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, key, f"must be a whole number, not {_describe(node)}")
        if not low <= value <= high:
            raise self.fail(node, key, f"must be between {low} and {high}, not {value}")
        return value

    def number(self, node: yaml.Node, key: str, low: float, high: float) -> float:
        value = self._construct(node, key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(node, key, f"must be a number of seconds, not {_describe(node)}")
        if not low < value <= high:
            raise self.fail(node, key, f"must be more than {low:g} and at most {high:g}")
        return float(value)

    def boolean(self, node: yaml.Node, key: str) -> bool:
        value = self._construct(node, key)
        if not isinstance(value, bool):
            raise self.fail(node, key, f"must be true or false, not {_describe(node)}")
        return value

    def sequence(self, node: yaml.Node, key: str, limit: int) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, key, f"must be a list, not {_describe(node)}")
        if len(node.value) > limit:
            raise self.fail(node, key, f"has {len(node.value)} items; it may have at most {limit}")
        return list(node.value)

    def choice(self, node: yaml.Node, key: str, enum_type: type[enum.Enum]) -> enum.Enum:
        text = self.string(node, key)
        names = [member.value for member in enum_type]
        for member in enum_type:
            if member.value == text:
                return member
        raise self.fail(
            node,
            key,
            f"must be one of {', '.join(names)}, not {shown(text)}{_suggest(text, names)}",
        )

    def _construct(self, node: yaml.Node, key: str) -> object:
        """A scalar's value (a number, a bool…); a node of any other kind stays a node."""
        if not isinstance(node, yaml.ScalarNode) or node.tag not in _BUILT:
            return node
        if node.tag in _NUMBER_TAGS and len(node.value) > _MAX_NUMBER_TEXT:
            raise self.fail(
                node,
                key,
                f"is a number of {len(node.value)} characters; none here needs more than "
                f"{_MAX_NUMBER_TEXT}",
            )
        try:
            return _CONSTRUCTOR.construct_object(node)
        except (ValueError, yaml.YAMLError):
            tag = node.tag.rsplit(":", 1)[-1]
            raise self.fail(node, key, f"{shown(node.value)} is not a valid {tag}") from None


def parse_config(text: str, path: str = "hosts.yaml") -> Config:
    """Parse and validate hosts.yaml text. Raises ConfigError naming ``path``, line and key."""
    document = yamlnodes.compose(text, path)
    reader = _Reader(path, document.nodes)
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
        hosts[name] = _parse_host(reader, name, key_node, value_node)
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
                        f"no host {shown(member)}{_suggest(member, hosts)}",
                    )
                members.append(member)
            groups[group] = tuple(members)
    return Config(
        path=path,
        hosts=MappingProxyType(hosts),
        source=reader.source(hosts_key),
        groups=MappingProxyType(groups),
    )


def _parse_host(reader: _Reader, name: str, key_node: yaml.Node, node: yaml.Node) -> Host:
    key = f"hosts.{name}"
    reader.name(key_node, name, key, "host names use letters, digits, '.', '_' and '-'", _NAME_RE)
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
                for one_name, one_node in _expand_instances(
                    reader, f"{key}.services.{service_name}", service_name, s_node
                ):
                    if one_name in services:
                        raise reader.fail(
                            s_key, f"{key}.services.{one_name}", "two services get this name"
                        )
                    services[one_name] = _parse_service(reader, name, one_name, s_key, one_node)
    return Host(
        name=name,
        transport=transport,
        source=source,
        services=MappingProxyType(services),
        ssh=ssh,
        vmid=vmid,
    )


def _parse_endpoint(
    reader: _Reader,
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


def _parse_service(
    reader: _Reader, host: str, name: str, key_node: yaml.Node, node: yaml.Node
) -> Service:
    key = f"hosts.{host}.services.{name}"
    reader.name(
        key_node, name, key, "service names use letters, digits, '.', '_' and '-'", _NAME_RE
    )
    entries = reader.mapping(node, key, allowed=_SERVICE_KEYS)
    if "log" not in entries:
        raise reader.fail(node, f"{key}.log", "missing required key (the server's log file)")
    log_node = entries["log"][1]
    log = reader.host_path(log_node, f"{key}.log")
    if not log.startswith("/"):
        raise reader.fail(
            log_node, f"{key}.log", f"must be an absolute path on the host, not {shown(log)}"
        )
    engine = Engine.GENERIC
    if "engine" in entries:
        engine = reader.choice(entries["engine"][1], f"{key}.engine", Engine)  # type: ignore[assignment]
    port = None
    if "port" in entries:
        port = reader.integer(entries["port"][1], f"{key}.port", 1, 65535)
    gpus: tuple[int, ...] = ()
    if "gpus" in entries:
        gpus = tuple(
            reader.integer(item, f"{key}.gpus[{i}]", 0, MAX_GPUS - 1)
            for i, item in enumerate(reader.sequence(entries["gpus"][1], f"{key}.gpus", MAX_GPUS))
        )
    match = None
    if "match" in entries:
        match_node = entries["match"][1]
        match = reader.string(match_node, f"{key}.match")
        try:
            re.compile(match)
        except re.error as error:
            raise reader.fail(
                match_node, f"{key}.match", f"not a valid regular expression: {error}"
            ) from None
        if (broad := too_broad(match, port)) is not None:
            raise reader.fail(match_node, f"{key}.match", broad)
    launch = None
    if "launch" in entries:
        launch = _parse_launch(reader, f"{key}.launch", entries["launch"][1])
    ready: tuple[str, ...] = ()
    #: Seconds between SIGTERM and SIGKILL when babysit stops this service.
    stop_grace: float = 30.0
    #: How many renamed old logs (``<log>.<YYYYmmdd-HHMMSS>``) a relaunch keeps.
    keep_logs: int = 5
    #: ``prometheus``: read ``http://127.0.0.1:PORT/metrics`` on the host each refresh.
    metrics: MetricsSource = MetricsSource.LOG
    if "ready" in entries:
        ready_node = entries["ready"][1]
        if isinstance(ready_node, yaml.ScalarNode):
            ready = (reader.string(ready_node, f"{key}.ready"),)
        else:
            ready = tuple(
                reader.string(item, f"{key}.ready[{i}]")
                for i, item in enumerate(reader.sequence(ready_node, f"{key}.ready", MAX_READY))
            )
    stop_grace = 30.0
    if "stop_grace" in entries:
        stop_grace = reader.number(entries["stop_grace"][1], f"{key}.stop_grace", 0, MAX_GRACE)
    metrics = MetricsSource.LOG
    if "metrics" in entries:
        metrics = reader.choice(entries["metrics"][1], f"{key}.metrics", MetricsSource)  # type: ignore[assignment]
        if metrics is MetricsSource.PROMETHEUS and port is None:
            raise reader.fail(
                entries["metrics"][1],
                f"{key}.metrics",
                "prometheus needs the service's port: (babysit reads /metrics on it)",
            )
    keep_logs = 5
    if "keep_logs" in entries:
        keep_logs = reader.integer(entries["keep_logs"][1], f"{key}.keep_logs", 0, 1000)
    return Service(
        name=name,
        host=host,
        engine=engine,
        log=log,
        source=reader.source(key_node),
        port=port,
        gpus=gpus,
        launch=launch,
        match=match,
        ready=ready,
        stop_grace=stop_grace,
        keep_logs=keep_logs,
        metrics=metrics,
    )


def _expand_instances(
    reader: _Reader, key: str, name: str, node: yaml.Node
) -> list[tuple[str, yaml.Node]]:
    """A service with ``instances: N`` becomes N services ``name-0`` … ``name-(N-1)``,
    each with ``{i}``-style templates in its values filled in for its index."""
    if not isinstance(node, yaml.MappingNode):
        return [(name, node)]
    count_node = next((v for k, v in node.value if getattr(k, "value", None) == "instances"), None)
    if count_node is None:
        return [(name, node)]
    count = reader.integer(count_node, f"{key}.instances", 1, MAX_INSTANCES)
    body = [(k, v) for k, v in node.value if getattr(k, "value", None) != "instances"]
    try:
        return [
            (
                f"{name}-{i}",
                yaml.MappingNode(
                    node.tag, [(k, _fill(reader, key, k, v, i)) for k, v in body], node.start_mark
                ),
            )
            for i in range(count)
        ]
    except _OverBudget:
        raise reader.fail(
            count_node,
            f"{key}.instances",
            f"{count} copies of this service would make the file hold more than {MAX_NODES} "
            "values and templates; babysit refuses it (fewer instances, or a smaller service)",
        ) from None


class _OverBudget(Exception):
    """Copying instances would build more than MAX_NODES values from one file."""


def _fill(reader: _Reader, key: str, key_node: yaml.Node, node: yaml.Node, i: int) -> yaml.Node:
    """``node`` with every ``{…}`` template filled in for instance ``i``. A value that is
    one template alone (``"{30000 + i}"``) becomes a number. Each value copied, and
    each template filled, is spent from the reader's budget: an alias copied for every
    instance is counted for every instance."""
    reader.budget -= 1
    if reader.budget < 0:
        raise _OverBudget
    where = f"{key}.{getattr(key_node, 'value', '?')}"
    if isinstance(node, yaml.MappingNode):
        return yaml.MappingNode(
            node.tag, [(k, _fill(reader, where, k, v, i)) for k, v in node.value], node.start_mark
        )
    if isinstance(node, yaml.SequenceNode):
        return yaml.SequenceNode(
            node.tag, [_fill(reader, key, key_node, v, i) for v in node.value], node.start_mark
        )
    if not isinstance(node, yaml.ScalarNode) or "{" not in str(node.value):
        return node

    def value(match: re.Match[str]) -> str:
        reader.budget -= 1
        if reader.budget < 0:
            raise _OverBudget
        expr = _EXPR_RE.match(match.group(1))
        if not expr:
            raise reader.fail(
                node,
                where,
                f"cannot read template {shown(match.group(0))}: write {{i}}, {{i + N}}, {{N + i}} "
                "or {N * i}",
            )
        if any(len(n or "") > _MAX_TEMPLATE_DIGITS for n in (expr.group(1), expr.group(4))):
            raise reader.fail(
                node,
                where,
                f"cannot read template {shown(match.group(0))}: its numbers may have at most "
                f"{_MAX_TEMPLATE_DIGITS} digits",
            )
        result = i
        if expr.group(1):
            result = _apply(int(expr.group(1)), expr.group(2), result)
        if expr.group(3):
            result = _apply(result, expr.group(3), int(expr.group(4)))
        return str(result)

    text = _TEMPLATE_RE.sub(value, str(node.value))
    whole = _TEMPLATE_RE.fullmatch(str(node.value)) is not None
    tag = "tag:yaml.org,2002:int" if whole else node.tag
    return yaml.ScalarNode(tag, text, node.start_mark, node.end_mark, node.style)


def _apply(left: int, op: str, right: int) -> int:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    return left * right


def _parse_launch(reader: _Reader, key: str, node: yaml.Node) -> LaunchSpec:
    entries = reader.mapping(node, key, allowed=_LAUNCH_KEYS)
    if "command" not in entries:
        raise reader.fail(node, f"{key}.command", "missing required key (the argv to run)")
    command_node = entries["command"][1]
    if isinstance(command_node, yaml.ScalarNode):
        raise reader.fail(
            command_node,
            f"{key}.command",
            "must be a list (argv), e.g. [python3, -m, sglang.launch_server, ...]; "
            "a shell string is never split",
        )
    command = tuple(
        reader.scalar_text(item, f"{key}.command[{i}]")
        for i, item in enumerate(reader.sequence(command_node, f"{key}.command", MAX_COMMAND_ITEMS))
    )
    if not command:
        raise reader.fail(command_node, f"{key}.command", "must not be empty")
    cwd = None
    if "cwd" in entries:
        cwd = reader.host_path(entries["cwd"][1], f"{key}.cwd")
        if not cwd.startswith("/"):
            raise reader.fail(
                entries["cwd"][1], f"{key}.cwd", "must be an absolute path on the host"
            )
    env: dict[str, str] = {}
    if "env" in entries:
        for env_name, (e_key, e_node) in reader.mapping(entries["env"][1], f"{key}.env").items():
            reader.name(
                e_key, env_name, f"{key}.env.{env_name}", "not a valid variable name", _ENV_NAME_RE
            )
            env[env_name] = reader.scalar_text(e_node, f"{key}.env.{env_name}")
    size = sum(len(arg.encode("utf-8", "surrogatepass")) + 1 for arg in command) + sum(
        len(f"{name}={value}".encode("utf-8", "surrogatepass")) + 1 for name, value in env.items()
    )
    if size > MAX_LAUNCH_BYTES:
        raise reader.fail(
            node,
            key,
            f"its command and environment are {size} bytes; a command line may be at most "
            f"{MAX_LAUNCH_BYTES}",
        )
    return LaunchSpec(command=command, cwd=cwd, env=MappingProxyType(env))


# --------------------------------------------------------------------------- match:

#: A literal path: a ``/`` with a name beside it (``/models/qwen``, ``Qwen/Qwen3-8B``).
_PATH_RE = re.compile(r"[\w.~-]/|/[\w.~-]")
#: A literal flag with its value (``--port 30000``, ``--served-model-name=qwen``).
_FLAG_RE = re.compile(r"--[A-Za-z][\w-]*[ =][^\s]")
#: More ways to match than this and the pattern is refused as too intricate to check.
_MAX_MATCH_PATHS = 256

MATCH_RULE = (
    "every way it can match must contain, as literal text, the service's port, "
    "a path (a '/' next to a name: /models/qwen, Qwen/Qwen3-8B, ./serve.sh) "
    "or a flag with its value (--port 30000, --served-model-name qwen)"
)


def too_broad(pattern: str, port: int | None) -> str | None:
    """Why ``pattern`` (a valid ``match:`` regex) could claim another service's process,
    or None when every way it matches names something of this service's own.

    A bare name (``sglang``, ``vllm serve``, ``python3 -m sglang.launch_server``) matches
    any server of that engine, another user's included. The literal text of each
    alternative is read from the regex's parse tree, so ``.``, classes and optional
    parts never count as text that must appear.
    """
    try:
        paths = _literal_paths(_sre_parser.parse(pattern).data)
    except _TooIntricate:
        return (
            f"has more than {_MAX_MATCH_PATHS} alternatives; babysit cannot check that "
            f"{MATCH_RULE}; write one plain pattern per service"
        )
    port_re = re.compile(rf"(?<!\d){port}(?!\d)") if port is not None else None
    for path in paths:
        runs = _runs(path)
        if any(
            _PATH_RE.search(run) or _FLAG_RE.search(run) or (port_re and port_re.search(run))
            for run in runs
        ):
            continue
        text = " … ".join(runs)
        if len(paths) > 1:
            which = f"its alternative {text!r}" if text else "one of its alternatives"
        else:
            which = f"its literal text {text!r}" if text else "it has no literal text and"
        example = f"--port {port}( |$)" if port is not None else "--model-path /models/qwen"
        return (
            f"{pattern!r} is too broad: {which} names nothing of this service's own, so it "
            f"would claim any such process, another user's included; {MATCH_RULE} "
            f"(e.g. {example!r})"
        )
    return None


def _runs(path: _Path) -> list[str]:
    """The stretches of literal text on one path through a regex."""
    runs: list[str] = []
    current: list[str] = []
    for token in [*path, None]:
        if token is not None:
            current.append(token)
        elif current:
            runs.append("".join(current))
            current = []
    return runs


class _TooIntricate(Exception):
    pass


# A path is one way through the regex: a list of literal characters, with None where
# anything (a class, ``.``, an optional part) may stand between them.
_Path = list[str | None]
_REPEATS = tuple(
    op
    for op in (
        _sre_parser.MAX_REPEAT,
        _sre_parser.MIN_REPEAT,
        getattr(_sre_parser, "POSSESSIVE_REPEAT", None),
    )
    if op is not None
)


def _literal_paths(items: Iterable[tuple[object, object]]) -> list[_Path]:
    paths: list[_Path] = [[]]
    for op, av in items:
        choices = _item_paths(op, av)
        if len(paths) * len(choices) > _MAX_MATCH_PATHS:
            raise _TooIntricate
        paths = [path + choice for path in paths for choice in choices]
    return paths


def _item_paths(op: object, av: object) -> list[_Path]:
    """The ways through one item of a parsed regex."""
    sre = _sre_parser
    if op is sre.LITERAL:
        paths: list[_Path] = [[chr(av)]]  # type: ignore[arg-type]
    elif op is sre.SUBPATTERN or op is getattr(sre, "ATOMIC_GROUP", None):
        paths = _literal_paths(av[-1] if op is sre.SUBPATTERN else av)  # type: ignore[index,arg-type]
    elif op is sre.BRANCH:
        paths = [p for branch in av[1] for p in _literal_paths(branch)]  # type: ignore[index]
        if len(paths) > _MAX_MATCH_PATHS:
            raise _TooIntricate
    elif op in _REPEATS:
        low, high, body = av  # type: ignore[misc]
        if low == 0:
            paths = [[None]]
        else:
            inner = _literal_paths(body)
            paths = inner if low == high == 1 else [[None, *p, None] for p in inner]
    elif op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        paths = [[]]  # zero-width: neither text nor a gap
    else:
        paths = [[None]]  # ., a class, a back-reference: something, but no set text
    return paths


# --------------------------------------------------------------------------- helpers


def _suggest(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or nothing when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _describe(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    tag = node.tag.rsplit(":", 1)[-1]
    if tag == "null":
        return "nothing"
    return f"{tag} {shown(node.value)}" if tag != "str" else shown(node.value)
