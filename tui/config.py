"""The hosts babysit watches, how it reaches them, and what runs on them.

Frozen values, built by the hosts.yaml reader (:mod:`tui.hostsfile`) and read by
every other part of babysit. Nothing here reads a file or the environment.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from tui.engines import Engine
from tui.errors import UsageError

if TYPE_CHECKING:
    from tui.hops.spec import Hop

__all__ = ["Engine"]

DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_KEEPALIVE_INTERVAL = 15.0


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


#: The container runtimes a service's ``container:`` may name (``runtime:``).
CONTAINER_RUNTIMES = ("docker", "podman")


@dataclass(frozen=True)
class ContainerRef:
    """A container a service runs in, by the name or id hosts.yaml gives, and the
    runtime whose CLI runs on the host (through the host's chain) to ask about it."""

    name: str
    runtime: str = "docker"

    def __str__(self) -> str:
        return self.name if self.runtime == "docker" else f"{self.runtime}:{self.name}"


#: What a canary asks when hosts.yaml does not say.
DEFAULT_CANARY_PROMPT = "The capital of France is"
#: How long babysit waits for work pending to progress before it calls a run WEDGED.
DEFAULT_WEDGED_AFTER = 120.0


@dataclass(frozen=True)
class CanaryConfig:
    """A service's ``canary:``: one small completion babysit sends to the server, on demand
    (``babysit canary``, the ``c`` key) and every ``every`` seconds while it is watched
    (None: on demand only). ``sampling``: (key, value) pairs used when the model's
    ``generation_config.json`` is not on the host."""

    every: float | None = None
    prompt: str = DEFAULT_CANARY_PROMPT
    max_tokens: int = 64
    sampling: tuple[tuple[str, float], ...] = ()
    timeout: float = 30.0


@dataclass(frozen=True)
class Service:
    """One inference server on one host.

    ``log`` is an absolute path on that host, or ``""`` for a service whose
    ``container:`` is given without ``log:``: its log is then the container's own
    (the runtime's json-file, found at each probe)."""

    name: str
    host: str
    engine: Engine
    log: str
    source: Source
    port: int | None = None
    gpus: tuple[int, ...] = ()
    launch: LaunchSpec | None = None
    #: A regular expression matched against a process's command line, to recognise
    #: runs started by hand. Never a bare name (see :func:`tui.hostsfile.match.too_broad`).
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
    #: The container the server runs in (its run is the container's: id, StartedAt,
    #: RestartCount), or None for a server babysit finds by its processes.
    container: ContainerRef | None = None
    #: Seconds of pending work without progress after which a ready run is WEDGED.
    wedged_after: float = DEFAULT_WEDGED_AFTER
    #: The canary request's settings (always present: ``every`` None asks only on demand).
    canary: CanaryConfig = field(default_factory=CanaryConfig)

    @property
    def label(self) -> str:
        return f"{self.host}/{self.name}"

    @property
    def log_text(self) -> str:
        """The log in a few words for messages: its path, or the container's log."""
        if self.log:
            return self.log
        return f"the log of container {self.container}" if self.container else "(no log)"


@dataclass(frozen=True)
class Host:
    """A machine babysit can run commands on, and the chain of hops that reaches it.

    Invariant: ``hops`` holds at least one hop. The first is the chain's base: its
    ``endpoint`` is where commands start (an SSH server, or None for this machine);
    the others are prefix hops (tui/hops/), in the order commands pass through them.
    """

    name: str
    source: Source
    services: Mapping[str, Service]
    hops: tuple[Hop, ...]

    @property
    def transport(self) -> str:
        """The kind of the hop that runs the host's commands (the chain's last)."""
        return self.hops[-1].kind

    @property
    def ssh(self) -> SshEndpoint | None:
        """The SSH server the chain starts from, or None when it starts on this machine."""
        return self.hops[0].endpoint

    def chain(self) -> tuple[str, ...]:
        """Each hop on the way to the host, e.g. ``("ssh root@pve1", "pct exec 105")``."""
        return tuple(text for hop in self.hops for text in hop.texts)

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
                f"{self.source}: hosts: no host {name!r}{suggest(name, self.hosts)}; "
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
                f"{suggest(service_name, host.services)}; services on {host.name}: {known}"
            ) from None


def suggest(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or nothing when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
