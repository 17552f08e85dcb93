"""`babysit relaunch HOST/SERVICE [--replace] [--wait]`: start the service again, safely.

Refuses (exit 2) when a run is there (unless ``--replace``, which kills it
first), when the port is taken, or when its GPUs hold other processes' memory.
The old log is renamed, never deleted. With ``--wait`` it follows this run's
own bytes until the ready line (exit 0), a failure line or the process's death
(exit 1), or the timeout (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import math

from tui.cli import add_config_option, add_json_option
from tui.commands import say
from tui.commands.ui import resolve
from tui.config import Host, Service, load_config
from tui.core.secrets import command_text
from tui.errors import UsageError
from tui.ops.kill import KillTarget, check_grace, kill_run, outcome_of
from tui.ops.relaunch import DEFAULT_TIMEOUT, WaitProgress, WaitResult


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="HOST/SERVICE")
    parser.add_argument(
        "--replace", action="store_true", help="stop the current run first (guarded kill)"
    )
    parser.add_argument("--wait", action="store_true", help="wait until this run is ready")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"how long --wait waits (default {DEFAULT_TIMEOUT:g} s)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=None,
        metavar="S",
        help="with --replace: seconds between SIGTERM and SIGKILL (default: the service's "
        "stop_grace)",
    )
    add_config_option(parser)
    add_json_option(parser)


#: The longest --wait babysit accepts: a day, far past any model's load.
MAX_TIMEOUT = 24 * 3600.0


def run(args: argparse.Namespace) -> int:
    if args.grace is not None:
        check_grace(args.grace)
    if not (math.isfinite(args.timeout) and 0 < args.timeout <= MAX_TIMEOUT):
        raise UsageError(
            f"--timeout must be a number of seconds, more than 0 and at most {MAX_TIMEOUT:g} "
            f"(not {args.timeout!r}); nothing was started"
        )
    config = load_config(args.config)
    host_name, _, service_name = args.target.partition("/")
    host, service = resolve(config, host_name, service_name or None)
    return asyncio.run(_relaunch(host, service, args))


async def _relaunch(host: Host, service: Service, args: argparse.Namespace) -> int:
    from tui.ops.relaunch import (
        LaunchRefused,
        audit,
        check_preconditions,
        launch,
        preflight,
        wait_ready,
    )
    from tui.remote import SshLinks, open_transport
    from tui.remote.probe import probe_host

    label = service.label
    links = SshLinks()
    try:
        transport = open_transport(host, links)
        (assessment,) = await probe_host(transport, host, [service])
        if args.replace and assessment.run is not None:
            target = KillTarget.of(assessment.run, assessment.boot_id or "", service)
            say(args.json, "progress", f"{label}: stopping pid {target.root_pid} first")
            events = [
                e
                async for e in kill_run(
                    transport,
                    target,
                    grace=args.grace if args.grace is not None else service.stop_grace,
                )
            ]
            outcome = outcome_of(events)
            summary = outcome.summary(target, service.port)
            audit(
                host,
                service,
                "kill",
                identity={"pid": target.root_pid},
                command=None,
                result=summary,
                ok=outcome.ok,
            )
            say(args.json, "progress", f"{label}: {summary}")
            if not outcome.ok:
                return 1
            (assessment,) = await probe_host(transport, host, [service])
        try:
            check_preconditions(
                service, assessment, await preflight(transport, service), replacing=False
            )
            launched = await launch(transport, service)
        except LaunchRefused as error:
            audit(
                host,
                service,
                "relaunch",
                identity=None,
                command=None,
                result=error.message,
                ok=False,
            )
            raise
        command = command_text(launched.argv)
        moved = f"; old log renamed to {launched.rotated_to}" if launched.rotated_to else ""
        say(
            args.json,
            "launched",
            f"{label}: started pid {launched.pid}: {command}{moved}",
            pid=launched.pid,
            run_id=launched.run_id,
            inode=launched.inode,
            offset=launched.launch_offset,
            rotated_to=launched.rotated_to,
        )
        identity = {
            "boot_id": launched.boot_id,
            "pid": launched.pid,
            "start_ticks": launched.start_ticks,
            "run_id": launched.run_id,
        }
        audit(
            host,
            service,
            "relaunch",
            identity=identity,
            command=list(launched.argv),
            result=f"started pid {launched.pid}",
            ok=True,
        )
        if not args.wait:
            return 0
        async for step in wait_ready(transport, service, launched, timeout=args.timeout):
            if isinstance(step, WaitProgress):
                last = f" — {step.last_line}" if step.last_line else ""
                say(
                    args.json,
                    "waiting",
                    f"{label}: {step.elapsed:.0f} s, {step.phase}{last}",
                    elapsed=round(step.elapsed, 1),
                    phase=step.phase,
                )
            elif isinstance(step, WaitResult):
                if step.ready:
                    say(
                        args.json,
                        "ready",
                        f"{label}: {step.reason} ({step.elapsed:.1f} s)",
                        ok=True,
                    )
                    return 0
                tail = "\n".join(step.last_lines)
                say(
                    args.json,
                    "failed",
                    f"{label}: {step.reason}\n{tail}",
                    ok=False,
                    last_lines=step.last_lines,
                )
                audit(
                    host,
                    service,
                    "wait",
                    identity=identity,
                    command=None,
                    result=step.reason,
                    ok=False,
                )
                return 1
        return 1
    finally:
        await links.close()
