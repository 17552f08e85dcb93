"""One entry of a host's ``services:``: its log, engine, port, launch and the rest."""

from __future__ import annotations

import re
from types import MappingProxyType

import yaml

from tui.config import (
    MAX_GRACE,
    ContainerRef,
    Engine,
    LaunchSpec,
    MetricsSource,
    Service,
)
from tui.engines import spec
from tui.hostsfile.canary import parse_canary, parse_wedged_after
from tui.hostsfile.match import too_broad
from tui.hostsfile.reader import NAME_RE, Reader, value_node
from tui.yamlnodes import shown

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
    "container",
    "runtime",
    "wedged_after",
    "canary",
)
#: Items in launch.command; bytes of the command line and environment it runs with
#: (one argument may hold at most MAX_ARG_STRLEN, 128 KiB, on Linux; all of them,
#: with the host's own environment, at most ARG_MAX, 2 MiB by default).
MAX_COMMAND_ITEMS = 4096
MAX_LAUNCH_BYTES = 256 * 1024
#: Items in gpus: (the indexes 0 to 1023) and in ready:.
MAX_GPUS = 1024
MAX_READY = 64
_LAUNCH_KEYS = ("command", "cwd", "env")
#: A variable name in launch.env.
_ENVNAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_service(
    reader: Reader, host: str, name: str, key_node: yaml.Node, node: yaml.Node
) -> Service:
    key = f"hosts.{host}.services.{name}"
    reader.name(key_node, name, key, "service names use letters, digits, '.', '_' and '-'", NAME_RE)
    entries = reader.mapping(node, key, allowed=_SERVICE_KEYS)
    container = _parse_container(reader, key, entries)
    log = ""
    if "log" in entries:
        log_node = entries["log"][1]
        log = reader.host_path(log_node, f"{key}.log")
        if not log.startswith("/"):
            raise reader.fail(
                log_node, f"{key}.log", f"must be an absolute path on the host, not {shown(log)}"
            )
    elif container is None:
        raise reader.fail(
            node,
            f"{key}.log",
            "missing required key (the server's log file); a server in a container may "
            "give container: instead",
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
        if container is not None:
            raise reader.fail(
                match_node,
                f"{key}.match",
                f"the run of a service in container {container.name} is the container's "
                "processes; match: finds processes by their command line, so it has nothing "
                "to do here (remove it)",
            )
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
    # the engine's own source when hosts.yaml names none (and the page can be read)
    metrics = MetricsSource(spec(engine).metrics_from) if port is not None else MetricsSource.LOG
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
        container=container,
        wedged_after=parse_wedged_after(reader, key, value_node(entries, "wedged_after")),
        canary=parse_canary(reader, key, value_node(entries, "canary")),
    )


def _parse_container(
    reader: Reader, key: str, entries: dict[str, tuple[yaml.Node, yaml.Node]]
) -> ContainerRef | None:
    """``container:`` (a name or id) and its ``runtime:``, or None without ``container:``."""
    if "container" not in entries:
        if "runtime" in entries:
            raise reader.fail(
                entries["runtime"][0],
                f"{key}.runtime",
                "names the CLI that runs a container; give container: too",
            )
        return None
    runtime = entries.get("runtime")
    return reader.container(
        (entries["container"][1], f"{key}.container"),
        (runtime[1], f"{key}.runtime") if runtime is not None else None,
    )


def _parse_launch(reader: Reader, key: str, node: yaml.Node) -> LaunchSpec:
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
                e_key, env_name, f"{key}.env.{env_name}", "not a valid variable name", _ENVNAME_RE
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
