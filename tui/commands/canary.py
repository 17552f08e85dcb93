"""`babysit canary HOST/SERVICE [--json]`: send the service's run one small completion.

The host's agent sends it on the host's loopback to the engine's own endpoint, with the
model's recommended sampling (its ``generation_config.json`` when the model's folder is
on the host, else ``canary.sampling``), and only to the run babysit sees now
(:func:`tui.session.canary.run_canary`). Prints what came back, one fact per line, or
with ``--json`` one versioned document (:meth:`tui.core.canary.CanaryResult.to_json`),
for a host that cannot be asked too.

Exit status: 0 completed without repetition; 1 completed with repetition, or an error
answer; 2 timed out, or no run to ask; 3 the host could not be asked.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from tui.cli import add_config_option, add_json_option
from tui.commands import say
from tui.commands.ui import resolve_target
from tui.config import Host, Service
from tui.core.canary import CanaryResult
from tui.hostsfile import load_config


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="HOST/SERVICE",
        help="a service from hosts.yaml (HOST alone: its first service)",
    )
    add_config_option(parser)
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    host, service = resolve_target(config, args.target)
    result = asyncio.run(ask(host, service, quiet=args.json))
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print("\n".join(result.lines()))
    return result.exit_status


async def ask(host: Host, service: Service, *, quiet: bool = False) -> CanaryResult:
    """One canary to ``service``'s run, from a session of its own; unless ``quiet``,
    stderr says when it is sent."""
    from tui.session.canary import run_canary
    from tui.session.sessions import Sessions

    def sent(pid: int) -> None:
        if not quiet:
            say(False, "sent", f"{service.label}: canary sent to pid {pid} …")

    sessions = Sessions(long_lived=False, timeout=None)
    try:
        return await run_canary(sessions.session(host, service), sent=sent)
    finally:
        await sessions.close()
