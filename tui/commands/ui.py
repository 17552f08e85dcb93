"""`babysit HOST [SERVICE]`: open the host screen (the TUI) on one service."""

from __future__ import annotations

import argparse
import difflib

from tui.cli import VERBS, add_config_option
from tui.config import Config, Host, Service, load_config
from tui.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", metavar="HOST", help="a host name from hosts.yaml")
    parser.add_argument(
        "service",
        metavar="SERVICE",
        nargs="?",
        help="one of the host's services (default: the first)",
    )
    parser.add_argument(
        "--read-only", action="store_true", help="watch only: no kill, relaunch or any other action"
    )
    add_config_option(parser)


def resolve(config: Config, host_name: str, service_name: str | None) -> tuple[Host, Service]:
    """The host and service to show; mistakes suggest the closest name (or verb)."""
    if host_name not in config.hosts:
        verb = difflib.get_close_matches(host_name, list(VERBS), n=1, cutoff=0.75)
        if verb:
            raise UsageError(
                f"no host {host_name!r} in {config.path}, and no verb {host_name!r} "
                f"(did you mean the verb {verb[0]!r}?)"
            )
    host, service = config.service(f"{host_name}/{service_name}" if service_name else host_name)
    if service is None:
        if not host.services:
            raise UsageError(
                f"{host.source}: hosts.{host.name}: no services to watch; add one under "
                f"'services:' (see the example hosts.yaml)"
            )
        service = next(iter(host.services.values()))
    return host, service


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    host, service = resolve(config, args.host, args.service)
    from tui.app.app import BabysitApp

    app = BabysitApp(host, service, read_only=args.read_only)
    app.run()
    return app.return_code or 0
