"""`babysit export [HOST[/SERVICE]|GROUP …]`: babysit's verdicts as Prometheus series.

One long-running process keeps probe-only sessions for the targets (one probe loop per
host, as the fleet view has) and exposes what they know (:mod:`tui.export.series`):

- over HTTP at ``/metrics`` (``--listen``, 127.0.0.1:9753 unless told otherwise),
  rendered by prometheus_client at each scrape;
- and/or as ``DIR/babysit.prom`` for node_exporter's textfile collector
  (``--textfile DIR``), rewritten after every ``--every`` seconds, whole each time.

It never pushes to a Pushgateway: a pushed value stays there after babysit is gone,
the stale fact this tool exists to prevent. ``--once`` asks every host once, prints the
exposition (and writes the textfile when asked) and exits with ``babysit status``'s
exit status: for a cron job, or to see what a scrape would get. SIGTERM or Ctrl-C ends
the process; its textfile goes with it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import signal
import sys
from collections.abc import Awaitable
from pathlib import Path

from tui.cli import add_config_option, add_targets_option
from tui.commands import say
from tui.commands.status import gather_reports, select
from tui.config import Host, Service
from tui.core.verdicts import worst_exit_status
from tui.errors import BabysitError, UsageError
from tui.export.names import TEXTFILE
from tui.gcpolicy import for_long_run
from tui.hostsfile import load_config

#: Where ``/metrics`` is served when neither ``--listen`` nor ``--textfile`` is given.
DEFAULT_LISTEN = "127.0.0.1:9753"
#: Seconds between two round trips to a host, by default.
DEFAULT_EVERY = 5.0
#: The shortest ``--every``: a host is asked at most this often.
MIN_EVERY = 0.1
#: The longest ``--every``: an hour-old answer is no verdict to alert on.
MAX_EVERY = 3600.0

Selection = list[tuple[Host, list[Service]]]


def configure(parser: argparse.ArgumentParser) -> None:
    add_targets_option(parser, "export")
    parser.add_argument(
        "--listen",
        metavar="ADDRESS:PORT",
        help=f"serve /metrics here (default {DEFAULT_LISTEN} unless only --textfile is "
        "given; port 0 picks a free one; an address other than loopback serves your fleet's "
        "verdicts to whoever reaches it)",
    )
    parser.add_argument(
        "--textfile",
        metavar="DIR",
        type=Path,
        help="also write DIR/babysit.prom for node_exporter's textfile collector",
    )
    parser.add_argument(
        "--every",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_EVERY,
        help=f"seconds between two round trips to a host (default {DEFAULT_EVERY:g})",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="ask every host once, print the exposition and exit with status's exit status",
    )
    add_config_option(parser)


def parse_listen(text: str) -> tuple[str, int]:
    """``127.0.0.1:9753``, ``[::1]:9753``, ``localhost:0`` → (address, port)."""
    host, sep, port_text = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise UsageError(
            f"--listen {text}: give ADDRESS:PORT, such as 127.0.0.1:9753 or [::1]:9753"
        )
    return host, int(port_text)


def loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    if not MIN_EVERY <= args.every <= MAX_EVERY:
        raise UsageError(f"--every {args.every:g}: give {MIN_EVERY:g} to {MAX_EVERY:g} seconds")
    listen = args.listen
    if listen is None and args.textfile is None and not args.once:
        listen = DEFAULT_LISTEN
    where = parse_listen(listen) if listen is not None else None
    folder = args.textfile
    if folder is not None and not folder.is_dir():
        raise UsageError(f"--textfile {folder}: no such folder (make it, or name another)")
    config = load_config(args.config)
    selection = select(config, args.targets)
    if not selection:
        raise UsageError("nothing to export: hosts.yaml names no services")
    if args.once:
        return asyncio.run(_once(selection, folder))
    for_long_run()
    return asyncio.run(_serve(selection, where, folder, args.every))


async def _once(selection: Selection, folder: Path | None) -> int:
    from prometheus_client import generate_latest

    from tui.export.exporter import Exporter, Frozen, refresh_textfile
    from tui.session.sessions import Sessions

    sessions = Sessions(long_lived=False, timeout=None)
    try:
        reports = await gather_reports(selection, sessions)
        made = Exporter(selection, sessions).families()
    finally:
        await sessions.close()
    sys.stdout.write(generate_latest(Frozen(made)).decode())
    if folder is not None:
        problem = await refresh_textfile(folder, made)
        if problem is not None:
            raise BabysitError(problem, title="textfile")
    return worst_exit_status(r.verdict for r in reports)


async def _serve(
    selection: Selection, where: tuple[str, int] | None, folder: Path | None, every: float
) -> int:
    from prometheus_client import start_http_server

    from tui.export.exporter import Exporter, http_registry, refresh_textfile, remove_textfile
    from tui.session.sessions import Sessions

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    sessions = Sessions(interval=every)
    exporter = Exporter(selection, sessions)
    hosts = len(selection)
    count = exporter.services
    asked = f"{count} service{'s' if count != 1 else ''} on {hosts} host{'s' if hosts != 1 else ''}"
    server = None
    try:
        if where is not None:
            address, port = where
            try:
                server, _thread = start_http_server(port, address, http_registry(exporter, loop))
            except OSError as error:
                raise UsageError(
                    f"cannot listen on {address}:{port}: {error.strerror or error}"
                ) from None
            bound = server.server_address[1]
            shown = f"[{address}]" if ":" in address else address
            _say(
                f"serving http://{shown}:{bound}/metrics: {asked}, each host asked every "
                f"{every:g} s"
            )
            if not loopback(address):
                _say(f"{address} is not a loopback address: whoever reaches it reads these")
        exporter.start()
        if folder is not None:
            _say(f"writing {folder / TEXTFILE} every {every:g} s: {asked}")
        await _until(exporter.first_answers.wait(), stop)
        while not stop.is_set():
            if folder is not None:
                problem = await refresh_textfile(folder, exporter.families())
                if problem is not None:
                    _say(problem)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), every)
    finally:
        if server is not None:
            await asyncio.to_thread(server.shutdown)
            server.server_close()
        if folder is not None:
            remove_textfile(folder)
        await sessions.close()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
    return 0


async def _until(waited: Awaitable[object], stop: asyncio.Event) -> None:
    """Wait for ``waited`` or ``stop``, whichever comes first."""
    tasks = [asyncio.ensure_future(waited), asyncio.ensure_future(stop.wait())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def _say(message: str) -> None:
    say(False, "export", message)
