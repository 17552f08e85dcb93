"""`babysit hosts`: list hosts, their services and how each host is reached (its chain
of hops: ``ssh root@gpu1 → docker exec sglang-0``)."""

from __future__ import annotations

import argparse
import json

from tui.cli import add_config_option, add_json_option
from tui.config import Config, Service
from tui.core.secrets import redact_argv, redact_env
from tui.hostsfile import load_config


def configure(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if args.json:
        print(json.dumps(to_json(config), indent=2))
    else:
        print(render(config), end="")
    return 0


def to_json(config: Config) -> dict[str, object]:
    return {
        "schema": 1,
        "config": config.path,
        "hosts": [
            {
                "name": host.name,
                "transport": host.transport,
                "chain": list(host.chain()),
                "hops": [{"kind": hop.kind, "texts": list(hop.texts)} for hop in host.hops],
                "services": [
                    {
                        "name": service.name,
                        "engine": service.engine.value,
                        "log": service.log or None,
                        "container": str(service.container) if service.container else None,
                        "port": service.port,
                        "gpus": list(service.gpus),
                        "launch": None
                        if service.launch is None
                        else {
                            "command": list(redact_argv(service.launch.command)),
                            "cwd": service.launch.cwd,
                            "env": redact_env(service.launch.env),
                        },
                    }
                    for service in host.services.values()
                ],
            }
            for host in config.hosts.values()
        ],
    }


def render(config: Config) -> str:
    lines = [f"{config.path}: {len(config.hosts)} host(s)"]
    if not config.hosts:
        lines.append("  (no hosts yet: add one under 'hosts:')")
    width = max((len(name) for name in config.hosts), default=0)
    for host in config.hosts.values():
        lines.append(f"  {host.name:<{width}}  {host.chain_text()}")
        if not host.services:
            lines.append(f"  {'':<{width}}    no services")
        for service in host.services.values():
            details = [service.engine.value]
            if service.port:
                details.append(f"port {service.port}")
            if service.gpus:
                details.append("gpus " + ",".join(str(g) for g in service.gpus))
            lines.append(
                f"  {'':<{width}}    {service.name}: {_where(service)} ({', '.join(details)})"
            )
    return "\n".join(lines) + "\n"


def _where(service: Service) -> str:
    """Where the service is found: its log file, and its container when it names one."""
    if service.container is None:
        return service.log
    return f"container {service.container}" + (f", log {service.log}" if service.log else "")
