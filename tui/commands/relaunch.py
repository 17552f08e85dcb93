"""`babysit relaunch HOST/SERVICE [--replace] [--wait]`: start the service again, safely.

Refuses (exit 2) when a run is there (unless ``--replace``, which kills it
first), when the port is taken, when orphans (processes of no live run) hold memory on
its GPUs (named, with how to free them: ``babysit kill HOST/SERVICE --orphans``; a
replace checks again after its kill), or when its GPUs hold other processes' memory.
A container service without ``launch:`` is started again with ``docker start`` of its
stopped container (``--replace``: ``docker restart`` of the running one), each after
the container's StartedAt is checked again; what ran is said.
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
from tui.commands.ui import resolve_target
from tui.config import Host, Service
from tui.core.secrets import command_text
from tui.errors import UsageError
from tui.hostsfile import load_config
from tui.ops.actions import NOT_DONE, Finished, Planned
from tui.ops.kill import check_grace
from tui.ops.relaunch import DEFAULT_TIMEOUT, Launched, WaitProgress, started_words


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
    host, service = resolve_target(config, args.target)
    return asyncio.run(_relaunch(host, service, args))


async def _relaunch(host: Host, service: Service, args: argparse.Namespace) -> int:
    from tui.session.sessions import Sessions

    sessions = Sessions(long_lived=False, timeout=None, wait_timeout=args.timeout)
    try:
        session = sessions.session(host, service)
        fresh = session.fresh
        actions = session.actions("cli")
        if args.replace:
            seen = await fresh()
            grace = args.grace if args.grace is not None else service.stop_grace
            steps = actions.replace(
                seen.run, seen.boot_id, fresh, grace=grace, wait=args.wait, container=seen.container
            )
        else:
            steps = actions.relaunch(fresh, wait=args.wait)
        status = NOT_DONE
        async for step in steps:
            if isinstance(step, Planned):
                say(args.json, "progress", f"{service.label}: first, {step.text}")
            elif isinstance(step, Launched):
                _say_launched(args.json, service, step)
            elif isinstance(step, WaitProgress):
                last = f" — {step.last_line}" if step.last_line else ""
                say(
                    args.json,
                    "waiting",
                    f"{service.label}: {step.elapsed:.0f} s, {step.phase}{last}",
                    elapsed=round(step.elapsed, 1),
                    phase=step.phase,
                )
            elif isinstance(step, Finished):
                status = _say_finished(args.json, service, step)
        return status
    finally:
        await sessions.close()


def _say_launched(json_out: bool, service: Service, launched: Launched) -> None:
    """What the relaunch ran, and the run it started."""
    moved = f"; old log renamed to {launched.rotated_to}" if launched.rotated_to else ""
    said = (
        started_words(launched)
        if launched.container is not None
        else f"started pid {launched.pid}: {command_text(launched.argv)}{moved}"
    )
    container = launched.container
    say(
        json_out,
        "launched",
        f"{service.label}: {said}",
        command=list(launched.argv),
        container=container.to_json() if container is not None else None,
        pid=launched.pid,
        run_id=launched.run_id,
        inode=launched.inode,
        offset=launched.launch_offset,
        rotated_to=launched.rotated_to,
    )


def _say_finished(json_out: bool, service: Service, finished: Finished) -> int:
    """Say how a step of the relaunch ended; the verb's exit status if it is the last."""
    label = service.label
    if finished.action == "kill":  # the replace's kill: the relaunch follows when it is ok
        say(json_out, "progress", f"{label}: {finished.result}")
        return finished.exit_status
    result = finished.wait
    if result is None or finished.action == "replace":
        return finished.exit_status
    if result.ready:
        say(json_out, "ready", f"{label}: {result.reason} ({result.elapsed:.1f} s)", ok=True)
    else:
        tail = "\n".join(result.last_lines)
        say(
            json_out,
            "failed",
            f"{label}: {result.reason}\n{tail}",
            ok=False,
            last_lines=result.last_lines,
        )
    return finished.exit_status
