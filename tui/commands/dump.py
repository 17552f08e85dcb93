"""`babysit dump HOST/SERVICE [--out DIR] [--json]`: capture what may explain a hang.

For the run babysit sees now (a verified run, asked afresh), the host's agent takes
every process's stacks (py-spy, else the kernel's view), nvidia-smi's answers, the
run's last log lines, its run record and its startups, signalling and changing
nothing (:func:`tui.session.dump.run_dump`). They are written into one file on this
machine, whose path is the last line printed, after one line per fact gathered; with
``--json``, one versioned document with ``path``, ``processes`` and ``ptrace``.

Exit status: 0 when the bundle was written (even without stacks); 3 when nothing
could be written: no verified run, the host unreachable, or the run changed.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from tui.cli import add_config_option, add_json_option
from tui.commands import say
from tui.commands.ui import resolve_target
from tui.config import Host, Service
from tui.core.dump_text import fact_lines
from tui.hostsfile import load_config
from tui.session.dump import DumpWritten

#: The version of ``babysit dump --json``'s document.
DUMP_SCHEMA = 1


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="HOST/SERVICE",
        help="a service from hosts.yaml (HOST alone: its first service)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="the folder to write the bundle in (default: ~/.local/state/babysit/dumps)",
    )
    add_config_option(parser)
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    host, service = resolve_target(config, args.target)
    written = asyncio.run(take(host, service, out=args.out, quiet=args.json))
    if args.json:
        print(json.dumps(document(written), indent=2))
    else:
        print("\n".join([*fact_lines(written.dump), written.path]))
    return 0


def document(written: DumpWritten) -> dict[str, object]:
    dump = written.dump
    ptrace = dump.ptrace
    return {
        "schema": DUMP_SCHEMA,
        "ok": True,
        "host": dump.host,
        "service": dump.service,
        "path": written.path,
        "run": {"pid": dump.pid, "start_ticks": dump.start_ticks, "boot_id": dump.boot_id},
        "processes": [{"pid": p.pid, "how": p.how, "problem": p.problem} for p in dump.processes],
        "ptrace": {
            "allowed": ptrace.allowed,
            "why": ptrace.why,
            "yama_scope": ptrace.yama_scope,
            "cap_sys_ptrace": ptrace.cap_sys_ptrace,
        },
    }


async def take(host: Host, service: Service, *, out: str | None, quiet: bool) -> DumpWritten:
    """One dump of ``service``'s run, from a session of its own; unless ``quiet``, stderr
    says what it is doing."""
    from tui.session.dump import run_dump
    from tui.session.sessions import Sessions

    def progress(words: str) -> None:
        if not quiet:
            say(False, "progress", f"{service.label}: {words} …")

    sessions = Sessions(long_lived=False, timeout=None)
    try:
        return await run_dump(sessions.session(host, service), out=out, progress=progress)
    finally:
        await sessions.close()
