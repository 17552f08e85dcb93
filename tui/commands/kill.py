"""`babysit kill HOST/SERVICE --pid PID`: stop the verified run, and only it.

``--pid`` must be the pid of the run babysit sees now: you confirm what you saw.
Progress goes to stderr (or JSON lines with ``--json``). Exit 0 only when every
process of the run is gone, the port closed and the service's GPUs hold no memory;
1 when something is left; 2 when the kill was refused (nothing was signalled); 3 when
the connection was lost and the kill's end could not be read back (the kill still
finishes on the host, and its record there is named). Every kill that reached the
host is in the audit log, whatever its end.
"""

from __future__ import annotations

import argparse
import asyncio

from tui.cli import add_config_option, add_json_option
from tui.commands import say
from tui.commands.ui import resolve
from tui.config import Host, Service, load_config
from tui.errors import BabysitError, UsageError
from tui.ops.kill import DEFAULT_GRACE, KillTarget, check_grace, kill_run, outcome_of


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="HOST/SERVICE")
    parser.add_argument(
        "--pid",
        type=int,
        required=True,
        help="the pid of the run you mean (as babysit status shows it)",
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
    config = load_config(args.config)
    host_name, _, service_name = args.target.partition("/")
    host, service = resolve(config, host_name, service_name or None)
    grace = args.grace if args.grace is not None else service.stop_grace
    return asyncio.run(_kill(host, service, args.pid, grace, json_out=args.json))


async def _kill(host: Host, service: Service, pid: int, grace: float, *, json_out: bool) -> int:
    from tui.ops.relaunch import audit
    from tui.remote import SshLinks, open_transport
    from tui.remote.probe import probe_host

    links = SshLinks()
    try:
        transport = open_transport(host, links)
        (assessment,) = await probe_host(transport, host, [service])
        run = assessment.run
        if run is None or run.root.pid != pid:
            seen = f"pid {run.root.pid}" if run else "no run"
            raise UsageError(
                f"{service.label}: pid {pid} is not the run babysit sees ({seen}; "
                f"{assessment.line}); nothing was signalled"
            )
        target = KillTarget.of(run, assessment.boot_id or "", service)
        say(
            json_out,
            "plan",
            f"{service.label}: stopping pid {pid} and "
            f"{len(run.pids) - 1} child process(es): SIGTERM, {grace:g} s, then SIGKILL",
            pids=list(run.pids),
        )
        identity = {"boot_id": target.boot_id, "pid": pid, "start_ticks": run.root.start_ticks}
        events = []
        try:
            async for event in kill_run(transport, target, grace=grace):
                events.append(event)
                if event.kind not in ("done", "refused", "unknown"):
                    say(
                        json_out,
                        "progress",
                        f"{service.label}: {event.message}",
                        event=event.kind,
                        pid=event.pid,
                    )
        except BabysitError as error:
            audit(
                host,
                service,
                "kill",
                identity=identity,
                command=list(run.root.cmdline),
                result=f"failed: {error.message}",
                ok=False,
            )
            raise
        outcome = outcome_of(events)
        summary = outcome.summary(target, service.port)
        audit(
            host,
            service,
            "kill",
            identity=identity,
            command=list(run.root.cmdline),
            result=summary,
            ok=outcome.ok,
        )
        say(json_out, "result", f"{service.label}: {summary}", ok=outcome.ok)
        return outcome.exit_status
    finally:
        await links.close()
