"""The words of the progress line, from the events of a kill and of a readiness wait.

Pure: each class takes the events as they come and, given the seconds elapsed,
says where the action is (``stopping pid 67115: SIGTERM sent to 2, 1 exited ·
3 s of 30 …``; ``relaunched pid 70001 · 12 s · loading weights — <line>``).
"""

from __future__ import annotations

from tui.agent.protocol import (
    KILL_CHANGED,
    KILL_DONE,
    KILL_EXITED,
    KILL_GONE,
    KILL_GPU_WAIT,
    KILL_LOST,
    KILL_REFUSED,
    KILL_SIGNALLED,
    KILL_UNKNOWN,
)
from tui.core.sanitize import printable
from tui.ops.kill import KillTarget
from tui.ops.kill_outcome import KillEvent
from tui.ops.relaunch import Launched, WaitProgress

#: Longest "last fresh line" shown on the progress line.
MAX_LINE = 160


def clip(text: str, width: int = MAX_LINE) -> str:
    text = printable(text)
    return text if len(text) <= width else text[: width - 1] + "…"


class KillWords:
    """Tracks a kill's events and says where it is."""

    def __init__(self, target: KillTarget, grace: float) -> None:
        self.target = target
        self.grace = grace
        self.total = len(target.processes)
        self.termed: set[int] = set()
        self.killed: set[int] = set()
        self.ended: set[int] = set()
        self.changed: set[int] = set()
        self.lost = False
        self.done = False
        #: What the wait for GPU memory last said (None: not waiting).
        self.gpu_wait: str | None = None

    def add(self, event: KillEvent) -> None:
        pid = event.pid
        if event.kind == KILL_SIGNALLED and pid is not None:
            signal = event.data.get("signal")
            (self.killed if signal == "SIGKILL" else self.termed).add(pid)
        elif event.kind in (KILL_EXITED, KILL_GONE) and pid is not None:
            self.ended.add(pid)
        elif event.kind == KILL_CHANGED and pid is not None:
            self.changed.add(pid)
        elif event.kind == KILL_LOST:
            self.lost = True
        elif event.kind == KILL_GPU_WAIT:
            self.gpu_wait = event.message
        elif event.kind in (KILL_DONE, KILL_REFUSED, KILL_UNKNOWN):
            self.done = True

    def text(self, elapsed: float) -> str:
        orphans = isinstance(self.target, KillTarget) and self.target.orphans
        what = self.target.text if orphans else f"pid {self.target.root_pid}"
        head = f"stopping {what}: "
        seconds = f"{elapsed:.0f} s"
        if not self.termed and not self.ended and not self.changed:
            return head + f"checking each pid's identity … {seconds}"
        parts = []
        if self.lost:
            parts.append("connection lost, the kill goes on on the host: reading its record")
        if self.termed:
            of = f" to {len(self.termed)}" if self.total > 1 else ""
            parts.append(f"SIGTERM sent{of}")
        if self.killed:
            parts.append(f"SIGKILL sent to {len(self.killed)}")
        if self.ended:
            parts.append(f"{len(self.ended)} of {self.total} gone")
        if self.changed:
            parts.append(f"{len(self.changed)} left alone (now another process)")
        if len(self.ended) + len(self.changed) >= self.total:
            check = self.gpu_wait or "checking the port and GPU memory"
            return head + ", ".join(parts) + f"; {check} … {seconds}"
        if self.killed:
            return head + ", ".join(parts) + f" · {seconds} …"
        return head + ", ".join(parts) + f" · {seconds} of {self.grace:g} …"


class WaitWords:
    """Tracks a readiness wait and says where start-up is."""

    def __init__(self, launched: Launched) -> None:
        self.launched = launched
        self.step: WaitProgress | None = None
        self._at = 0.0

    def add(self, step: WaitProgress, elapsed: float) -> None:
        self.step = step
        self._at = elapsed

    def text(self, elapsed: float) -> str:
        head = f"relaunched pid {self.launched.pid}"
        step = self.step
        if step is None:
            return f"{head} · {elapsed:.0f} s · starting"
        # The host's own count, moved on by the time since it said so.
        seconds = step.elapsed + max(0.0, elapsed - self._at)
        line = f" — {clip(step.last_line)}" if step.last_line else ""
        return f"{head} · {seconds:.0f} s · {step.phase}{line}"
