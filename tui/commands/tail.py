"""`babysit tail HOST[/SERVICE]`: print (and follow) a service's log, like tail -F but exact.

Lines go to stdout; what happens to the file (truncated, replaced, deleted,
reconnected) goes to stderr as ``babysit: HOST/SERVICE: …``. With ``--json``
everything is one JSON object per line on stdout, each line carrying the
(dev, inode, offset) it was read from. Starting reads only what the last N
lines need, never the whole file.

A container service without ``log:`` shows the container's own log: its json-file,
each record's ``log`` as a line (``--json`` adds its ``stamp`` and ``stream``), or,
where that file cannot be read here, ``docker logs`` of this run; stderr says which.

The file at the path is followed as asked; alongside, one probe asks which run
this is, and when the run writes another file (STALE: the log was deleted or
renamed and made again; NO-LOG) that is said, with the ``--pid`` that follows
what the run writes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from typing import TYPE_CHECKING, TextIO

from tui.cli import add_config_option, add_json_option
from tui.commands.ui import resolve_target
from tui.config import Host, Service
from tui.core.follow import Start
from tui.core.logcursor import EventKind, EventRow, LogEvent, LogLine, Row
from tui.core.runs import Assessment
from tui.core.sanitize import printable
from tui.core.verdicts import Verdict
from tui.errors import BabysitError
from tui.hostsfile import load_config
from tui.invocation import command

if TYPE_CHECKING:
    from tui.session.service import ServiceSession


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="HOST[/SERVICE]",
        help="a host from hosts.yaml, optionally /SERVICE (default: its first)",
    )
    parser.add_argument(
        "-n",
        "--lines",
        type=int,
        default=10,
        metavar="N",
        help="start with the last N lines (default 10)",
    )
    parser.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep following: through truncation, rotation, deletion, reconnects",
    )
    parser.add_argument("--from-start", action="store_true", help="start at the first byte")
    parser.add_argument(
        "--pid",
        type=int,
        metavar="PID",
        help="follow the file PID has open for the log (even if deleted)",
    )
    add_config_option(parser)
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    host, service = resolve_target(config, args.target)
    start = Start(from_start=True) if args.from_start else Start(tail=max(0, args.lines))
    printer = Printer(service.label, json_out=args.json, out=sys.stdout, err=sys.stderr)
    try:
        shown = asyncio.run(_tail(host, service, start, args, printer))
    except BrokenPipeError:
        # The reader went away (`| head`): that is the end, not an error.
        sys.stderr.close()
        return 0
    return 0 if shown else 1


async def _tail(
    host: Host, service: Service, start: Start, args: argparse.Namespace, printer: Printer
) -> bool:
    """Print rows until the end (or forever with -f); whether a file was ever shown."""
    from tui.session.sessions import Sessions, service_follower

    sessions = Sessions(long_lived=False, timeout=None)
    transport = sessions.transport(host)
    session = sessions.session(host, service)
    # Not with --pid: the user follows a writer already.
    said = (
        None
        if args.pid is not None
        else asyncio.create_task(_say_writer(session, service, printer))
    )
    try:
        follower = service_follower(
            transport, service, start=start, pid=args.pid, follow=args.follow
        )
        async for batch in follower.rows():
            printer.rows(batch)
        if said is not None:
            await said
        return follower.file is not None
    finally:
        if said is not None and not said.done():
            said.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await said
        await sessions.close()


async def _say_writer(session: ServiceSession, service: Service, printer: Printer) -> None:
    """Probe once; if the run writes another file than the one at the path, say so."""
    try:
        assessment = await session.fresh()
    except BabysitError:
        return  # the follower says what is wrong with the host
    row = writer_note(assessment, service)
    if row is not None:
        printer.rows([row])


def writer_note(a: Assessment, service: Service) -> EventRow | None:
    """The words for a run that writes another file than the one at the path."""
    if a.verdict not in (Verdict.STALE, Verdict.NO_LOG):
        return None
    pid = a.writer_pid or (a.run.root.pid if a.run else None)
    message = f"{a.line}; shown here: the file now at the path"
    if pid is not None:
        follow = command("tail", service.label, "--pid", str(pid))
        message += f"; to follow what pid {pid} writes: {follow}"
    data: dict[str, object] = {"verdict": a.verdict.word, "pid": pid}
    if a.writer_file is not None:
        data["writer_inode"] = a.writer_file.inode
        data["writer_deleted"] = a.writer_file.deleted
    return EventRow(LogEvent(EventKind.VERDICT, message, time.time(), data))


class Printer:
    """Writes rows as text (lines on stdout, events on stderr) or as JSON lines."""

    def __init__(self, label: str, *, json_out: bool, out: TextIO, err: TextIO) -> None:
        self.label = label
        self.json_out = json_out
        self.out = out
        self.err = err
        self._opened_once = False

    def rows(self, rows: list[Row]) -> None:
        for row in rows:
            if isinstance(row, LogLine):
                self._line(row)
            else:
                self._event(row)
        self.out.flush()

    def _line(self, line: LogLine) -> None:
        if self.json_out:
            record: dict[str, object] = {
                "type": "line",
                "dev": line.dev,
                "inode": line.inode,
                "offset": line.offset,
                "text": line.text,
            }
            if line.stamp is not None:
                record["stamp"] = line.stamp
            if line.stream is not None:
                record["stream"] = line.stream
            if line.cut:
                record["cut"] = True
            if not line.complete:
                record["complete"] = False
            self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            self.out.write(line.text + "\n")

    def _event(self, row: EventRow) -> None:
        event = row.event
        if self.json_out:
            record = {
                "type": "event",
                "event": event.kind.value,
                "message": event.message,
                **event.data,
            }
            self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
            return
        if event.kind is EventKind.OPENED and not self._opened_once:
            self._opened_once = True
            return
        self.out.flush()
        # Events carry host text (paths, the agent's errors): shown, never obeyed.
        self.err.write(f"babysit: {printable(self.label)}: {printable(event.message)}\n")
        self.err.flush()
