"""A worker of the ``orphan-workers`` scenario: it outlives its parent, holding its GPU memory.

Started in a session of its own (``setsid``), it keeps a registry record of its own,
``sim-<pid>.json`` (its pid, start time, GPU index, memory), so the nvidia-smi stand-in
lists it while it lives and frees its memory the moment it dies (the registry's liveness
rule, :func:`tui.sim.gpus.alive`). The parent tells it its phase and memory as JSON lines
on its stdin (``{"phase": "loading", "memory_mib": 12345}``); end-of-file there (the
parent died or let go) leaves the last memory held and the phase ``orphaned``. It never
exits because its parent did; SIGTERM ends it at once, removing its record. It inherits
the server's stdout and stderr, so it keeps the service's log open as real workers do.
"""

from __future__ import annotations

import json
import os
import select
import signal
from dataclasses import dataclass, replace
from pathlib import Path

from tui.sim import gpus as registry
from tui.sim.gpus import ProcUse, SimRecord

#: the phase an orphan's record says once its parent is gone
ORPHANED = "orphaned"
#: bytes of an unfinished update line kept at most (a longer one is dropped)
MAX_PENDING = 4096


@dataclass(frozen=True)
class Holder:
    """Who the orphan is in the registry: the service's engine and port, its GPU."""

    engine: str
    port: int
    gpu: int


class Orphan:
    """One worker's record and its life. Not reusable: call :meth:`run` once."""

    def __init__(self, holder: Holder) -> None:
        pid = os.getpid()
        ticks = registry.proc_start_ticks(pid)
        self.directory = registry.state_dir()
        self.path: Path = self.directory / f"sim-{pid}.json"
        self.record = SimRecord(
            pid=pid,
            start_ticks=ticks,
            engine=holder.engine,
            port=holder.port,
            phase="starting",
            spec=False,
            running=0,
            queued=0,
            procs=(ProcUse(pid, ticks, holder.gpu, 0),),
        )

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_term)
        self._write()
        stdin = 0
        pending = b""
        while True:
            select.select([stdin], [], [])
            chunk = os.read(stdin, MAX_PENDING)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if len(pending) > MAX_PENDING:
                pending = b""
            if lines:
                self._update(lines[-1])
        os.close(stdin)
        self.record = replace(self.record, phase=ORPHANED)
        self._write()
        while True:
            signal.pause()

    def _update(self, line: bytes) -> None:
        try:
            state = json.loads(line)
            phase = str(state["phase"])
            memory = int(state["memory_mib"])
        except (ValueError, TypeError, KeyError):
            return  # a garbled line changes nothing the stand-in shows
        proc = replace(self.record.procs[0], memory_mib=memory)
        record = replace(self.record, phase=phase, procs=(proc,))
        if record != self.record:
            self.record = record
            self._write()

    def _write(self) -> None:
        try:
            registry.write_record(self.record, self.directory)
        except OSError:
            return  # the parent already says when the registry cannot be written

    def _on_term(self, signum: int, frame: object) -> None:
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os._exit(0)
