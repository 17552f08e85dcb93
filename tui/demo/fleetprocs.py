"""The demo's own processes: each recorded by pid and start time, and stopped only as such.

A process is signalled only if it is the very one recorded (same pid *and* start
time, read again just before) — never by name or pattern. Its descendants
(children it forked) go with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psutil

from tui.procfs import start_ticks

#: Seconds between SIGTERM and SIGKILL when the fleet stops (sims stop in well under one).
STOP_GRACE = 3.0
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Recorded:
    """A process the demo started (or a relaunch of one of its services started)."""

    name: str
    pid: int
    start_ticks: int
    role: str = "service"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "role": self.role,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Recorded:
        return cls(
            name=str(data["name"]),
            pid=int(data["pid"]),  # type: ignore[call-overload]
            start_ticks=int(data["start_ticks"]),  # type: ignore[call-overload]
            role=str(data.get("role", "service")),
        )

    def verified(self) -> psutil.Process | None:
        """The very process recorded, if it still runs (same pid *and* start time)."""
        try:
            process = psutil.Process(self.pid)
        except psutil.Error:
            return None
        if start_ticks(self.pid) != self.start_ticks:
            return None
        return process


def _gone(process: psutil.Process) -> bool:
    """Exited (a zombie counts: it runs nothing and holds no port or file)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def terminate(processes: Iterable[psutil.Process], grace: float = STOP_GRACE) -> int:
    """SIGTERM each process, wait up to ``grace`` s, SIGKILL what is left. Returns how many
    were signalled. psutil refuses to signal a pid that now belongs to another process."""
    targets = [p for p in processes if not _gone(p)]
    for process in targets:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and not all(_gone(p) for p in targets):
        time.sleep(0.02)
    left = [p for p in targets if not _gone(p)]
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and not all(_gone(p) for p in left):
        time.sleep(0.02)
    return len(targets)


def with_descendants(roots: Iterable[psutil.Process]) -> list[psutil.Process]:
    found: dict[int, psutil.Process] = {}
    for root in roots:
        found[root.pid] = root
        with contextlib.suppress(psutil.Error):
            for child in root.children(recursive=True):
                found.setdefault(child.pid, child)
    return list(found.values())


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on loopback right now."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def dies_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGTERM when the demo dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the demo died before prctl took hold
            os._exit(1)

    return preexec
