"""`babysit kill HOST/SERVICE --pid PID`: stop the verified run, and only it;
`babysit kill HOST/SERVICE --orphans [--pid PID]`: stop the orphans on its GPUs.

``--pid`` must be the pid of the run babysit sees now: you confirm what you saw. For a
container service it is the container's first process (``State.Pid``), and the kill is
``docker stop`` of that run of the container by its full id, refused when the
container was restarted since (exit 2).
Progress goes to stderr (or JSON lines with ``--json``). Exit 0 only when every
process of the run is gone, the port closed and the service's GPUs hold no memory;
1 when something is left; 2 when the kill was refused (nothing was signalled); 3 when
the connection was lost and the kill's end could not be read back (the kill still
finishes on the host, and its record there is named). Every kill that reached the
host is in the audit log, whatever its end.

With ``--orphans`` the kill is of the processes the probe shows now holding memory on the
service's GPUs outside any live run (listed first; ``--pid`` names one of them), each by
its pid and start time; exit 0 when they are gone and the memory they held is free.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone

from tui.agent.protocol import KILL_DONE, KILL_REFUSED, KILL_UNKNOWN
from tui.cli import add_config_option, add_json_option
from tui.commands import say
from tui.commands.ui import resolve_target
from tui.config import Host, Service
from tui.core.containers import ContainerState
from tui.core.gpu import ServiceGpus
from tui.core.runs import Assessment
from tui.core.units import human_age
from tui.errors import UsageError
from tui.hostsfile import load_config
from tui.ops.actions import Finished, Planned, Step
from tui.ops.kill import DEFAULT_GRACE, check_grace
from tui.ops.kill_outcome import KillEvent
from tui.ops.orphan_words import orphan_line

#: The kill's events not said as progress: the result line says how it ended.
QUIET = frozenset({KILL_DONE, KILL_REFUSED, KILL_UNKNOWN})


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="HOST/SERVICE")
    parser.add_argument(
        "--pid",
        type=int,
        default=None,
        help="the pid of the run you mean (as babysit status shows it); with --orphans, "
        "the one orphan to kill",
    )
    parser.add_argument(
        "--orphans",
        action="store_true",
        help="kill the orphans on the service's GPUs (processes of no live run holding "
        "memory there) that babysit status shows now",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=None,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL (default: the service's stop_grace, "
        f"else {DEFAULT_GRACE:g})",
    )
    add_config_option(parser)
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    if args.grace is not None:
        check_grace(args.grace)
    if args.pid is None and not args.orphans:
        raise UsageError("give --pid PID (the run babysit status shows), or --orphans")
    config = load_config(args.config)
    host, service = resolve_target(config, args.target)
    grace = args.grace if args.grace is not None else service.stop_grace
    if args.orphans:
        return asyncio.run(kill_orphans(host, service, args.pid, grace, json_out=args.json))
    return asyncio.run(_kill(host, service, args.pid, grace, json_out=args.json))


async def _kill(host: Host, service: Service, pid: int, grace: float, *, json_out: bool) -> int:
    from tui.session.sessions import Sessions

    sessions = Sessions(long_lived=False, timeout=None)
    try:
        session = sessions.session(host, service)
        assessment = await session.fresh()
        run = assessment.run
        container = None
        if service.container is not None:
            container = _check_container(service, assessment, pid)
            gpus = session.report(assessment.checked_at).gpus
            say(
                json_out,
                "confirm",
                f"{service.label}: {container_text(assessment, container, gpus)}",
                container=container.to_json(),
                pids=list(container.pids),
            )
        elif run is None or run.root.pid != pid:
            seen = f"pid {run.root.pid}" if run else "no run"
            raise UsageError(
                f"{service.label}: pid {pid} is not the run babysit sees ({seen}; "
                f"{assessment.line}); nothing was signalled"
            )
        actions = session.actions("cli")
        steps = actions.kill(run, assessment.boot_id, grace=grace, container=container)
        pids = list(container.pids if container is not None else run.pids if run else ())
        return await say_steps(service, steps, pids, json_out=json_out)
    finally:
        await sessions.close()


async def kill_orphans(
    host: Host, service: Service, pid: int | None, grace: float, *, json_out: bool
) -> int:
    """Kill the orphans the probe shows now on the service's GPUs (``pid``: only that one),
    after listing them."""
    from tui.session.sessions import Sessions

    sessions = Sessions(long_lived=False, timeout=None)
    try:
        session = sessions.session(host, service)
        assessment = await session.fresh()
        seen = session.orphans()
        orphans = [o for o in seen if pid is None or o.pid == pid]
        if not orphans:
            shown = ", ".join(str(o.pid) for o in seen) or "none"
            which = f"pid {pid} is not one of them (orphans now: {shown})" if pid else "none"
            raise UsageError(
                f"{service.label}: no orphans to kill on its GPUs: {which} "
                f"({assessment.line}); nothing was signalled"
            )
        now = assessment.checked_at
        listed = "\n".join(f"  {orphan_line(o, now)}" for o in orphans)
        say(
            json_out,
            "confirm",
            f"{service.label}: {len(orphans)} orphan(s) on its GPUs:\n{listed}",
            orphans=[o.to_json(assessment.utc_offset) for o in orphans],
        )
        steps = session.actions("cli").kill_orphans(orphans, assessment.boot_id, grace=grace)
        return await say_steps(service, steps, [o.pid for o in orphans], json_out=json_out)
    finally:
        await sessions.close()


async def say_steps(
    service: Service, steps: AsyncIterator[Step], pids: list[int], *, json_out: bool
) -> int:
    """Say a kill's steps as they come (``pids``: what it stops); its exit status."""
    status = 1
    async for step in steps:
        if isinstance(step, Planned):
            say(json_out, "plan", f"{service.label}: {step.text}", pids=pids)
        elif isinstance(step, KillEvent) and step.kind not in QUIET:
            say(
                json_out,
                "progress",
                f"{service.label}: {step.message}",
                event=step.kind,
                pid=step.pid,
            )
        elif isinstance(step, Finished):
            say(json_out, "result", f"{service.label}: {step.result}", ok=step.ok)
            status = step.exit_status
    return status


def _check_container(service: Service, assessment: Assessment, pid: int) -> ContainerState:
    """The container's run seen now, or a UsageError unless ``pid`` is its first process."""
    container = assessment.container
    if container is None or not container.found or not container.id:
        why = container.problem if container is not None else None
        raise UsageError(
            f"{service.label}: babysit cannot tell which run of container {service.container} "
            f"to stop ({why or assessment.line}); nothing was stopped"
        )
    if pid not in (container.pid, *container.pids[:1]):
        raise UsageError(
            f"{service.label}: pid {pid} is not the run of container {container.name} babysit "
            f"sees (its first process is pid {container.pid or 'none'}, status "
            f"{container.status}); nothing was stopped"
        )
    return container


def container_text(a: Assessment, container: ContainerState, gpus: ServiceGpus | None) -> str:
    """The container's run the kill stops: name, short id, image, StartedAt, its PIDs
    and their GPU memory (from the report's GPUs)."""
    started = container.started_at
    when = (
        "never started"
        if started is None
        else f"started {_host_clock(a, started)} on the host's clock "
        f"({human_age(a.checked_at - started)} ago)"
    )
    return (
        f"container {container.name} ({container.short_id}), image {container.image or '?'}, "
        f"{when}, restart count {container.restart_count}; pids "
        f"{', '.join(map(str, container.pids)) or 'none seen'}; GPU memory: {_gpu(gpus)}"
    )


def _host_clock(a: Assessment, ts: float) -> str:
    zone = timezone(timedelta(seconds=a.utc_offset))
    return datetime.fromtimestamp(ts, zone).strftime("%Y-%m-%d %H:%M:%S")


def _gpu(gpus: ServiceGpus | None) -> str:
    if gpus is None:
        return "not read"
    if gpus.memory is not None:
        return f"{gpus.memory:g} MiB held by pids {', '.join(map(str, gpus.pids))}"
    return gpus.note
