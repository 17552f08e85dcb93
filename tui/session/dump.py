"""One hang capture of a watched service: probe, request, ask, read, and write the bundle.

:func:`run_dump` is the one way babysit takes a dump (``babysit dump`` and the host
screen's ``d`` key alike): it asks the host afresh, so the run dumped is the one the
user sees (a verified run, :func:`tui.core.dump.dump_target`); builds the request
(:func:`tui.core.dump.dump_request`), has the host's agent gather it
(:func:`tui.remote.dump.ask_dump`), reads the answer
(:func:`tui.core.dump.read_dump`) and writes the bundle's text
(:func:`tui.core.dump_text.bundle_text`) into one file on this machine, mode 0600,
in a folder made 0700: ``--out DIR``, else ``$BABYSIT_STATE/dumps``, else
``$XDG_STATE_HOME/babysit/dumps`` (``~/.local/state/babysit/dumps``). The file is
named ``HOST-SERVICE-YYYYmmdd-HHMMSS.txt`` (babysit's clock).

It raises :class:`~tui.core.dump.DumpRefused` when there is no verified run or the run
changed, and :class:`~tui.errors.TransportError` when the host could not be asked:
then nothing is written.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tui import __version__
from tui.core.dump import Dump, DumpRefused, dump_request, dump_target, no_target_why, read_dump
from tui.core.dump_text import DumpHeader, bundle_text
from tui.errors import HostUnreachable
from tui.ops.audit import private_folder
from tui.remote.dump import ask_dump, dump_deadline
from tui.remote.probe import host_state_dir

if TYPE_CHECKING:
    from tui.session.service import ServiceSession

#: The bundles' folder below babysit's state folder.
DUMPS = "dumps"
#: babysit's state folder when neither $BABYSIT_STATE nor $XDG_STATE_HOME is set.
DEFAULT_STATE = "~/.local/state"
#: How a bundle's time is written in its name.
NAME_STAMP = "%Y%m%d-%H%M%S"
#: Characters a host or service name keeps in a file name (others become ``_``).
UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
#: Bundles tried with the same name (``-2``, ``-3``, …) before giving up.
SAME_NAME_TRIES = 100

#: Told what the dump is doing, in a few words.
Progress = Callable[[str], None]


@dataclass(frozen=True)
class DumpWritten:
    """A bundle written: where, and what it holds."""

    path: str
    dump: Dump


def dumps_folder(out: str | None = None) -> str:
    """Where bundles go: ``out``, else the state folder's ``dumps``."""
    if out:
        return os.path.expanduser(out)
    state = os.environ.get("BABYSIT_STATE")
    if not state:
        xdg = os.environ.get("XDG_STATE_HOME") or DEFAULT_STATE
        state = os.path.join(xdg, "babysit")
    return os.path.join(os.path.expanduser(state), DUMPS)


def write_bundle(folder: str, host: str, service: str, text: str, at: float) -> str:
    """Write ``text`` to a new file in ``folder`` (made 0700), mode 0600; its path."""
    private_folder(folder)
    stem = "-".join(UNSAFE_NAME.sub("_", part) for part in (host, service))
    stem = f"{stem}-{time.strftime(NAME_STAMP, time.localtime(at))}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
    for attempt in range(1, SAME_NAME_TRIES + 1):
        name = f"{stem}.txt" if attempt == 1 else f"{stem}-{attempt}.txt"
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        return path
    raise FileExistsError(f"{folder} holds {SAME_NAME_TRIES} bundles named {stem}")


async def run_dump(
    session: ServiceSession, *, out: str | None = None, progress: Progress | None = None
) -> DumpWritten:
    """Take ``session``'s service's run's dump and write its bundle (see the module)."""

    def said(words: str) -> None:
        if progress is not None:
            progress(words)

    said(f"asking {session.host.name} which run this is")
    a = await session.fresh()
    if session.state.failure is not None:
        raise HostUnreachable(f"{session.label}: {session.state.failure}; nothing was written")
    process = dump_target(a)
    if process is None or a.run is None:
        raise DumpRefused(f"{session.label}: {no_target_why(a)}")
    record_dir = f"{host_state_dir()}/{session.service.name}"
    request = dump_request(a, record_dir=record_dir)
    transport = session.transport
    if transport is None:
        raise RuntimeError(f"{session.label}: no transport to ask the host through")
    count = len(a.run.processes)
    said(f"gathering the stacks of pid {process.pid} and {count - 1} below it")
    answer = await ask_dump(transport, request, timeout=dump_deadline(request, count))
    try:
        dump = read_dump(session.host.name, session.service.name, answer)
    except DumpRefused as error:
        raise DumpRefused(f"{session.label}: {error.message}") from None
    header = DumpHeader(
        chain=session.host.chain_text(),
        engine=session.service.engine.value,
        started_at=process.start_time,
        utc_offset=a.utc_offset,
        version=__version__,
    )
    folder = dumps_folder(out)
    said(f"writing the bundle in {folder}")

    def render_and_write() -> str:
        text = bundle_text(dump, header)
        return write_bundle(folder, session.host.name, session.service.name, text, time.time())

    try:
        path = await asyncio.to_thread(render_and_write)
    except OSError as error:
        why = error.strerror or str(error)
        raise DumpRefused(f"{session.label}: cannot write the bundle in {folder}: {why}") from None
    return DumpWritten(path, dump)


__all__ = ["DumpWritten", "dumps_folder", "run_dump", "write_bundle"]
