"""How a kill went, from its events: who was signalled, left alone or left over.

:class:`KillEvent` is one step the host reports (or babysit adds: the channel lost,
the end unknown, an event unreadable); :func:`outcome_of` reads the steps of one
kill into a :class:`KillOutcome`, which says the end in words and as an exit status.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui.agent.protocol import (
    KILL_CHANGED,
    KILL_DONE,
    KILL_ERROR,
    KILL_LOST,
    KILL_REFUSED,
    KILL_SIGNALLED,
    KILL_STOPPED,
    KILL_UNKNOWN,
)

if TYPE_CHECKING:
    from tui.ops.container_kill import ContainerTarget
    from tui.ops.kill import KillTarget


@dataclass(frozen=True)
class KillEvent:
    """One step on the host: started, signalled, exited, changed (left alone), gone,
    refused, done; and on the way: lost (the channel; its record is read back), unknown
    (its end could not be read back)."""

    kind: str
    pid: int | None
    message: str
    data: dict[str, object] = field(default_factory=dict)


@dataclass
class KillOutcome:
    signalled: list[int] = field(default_factory=list)
    changed: list[int] = field(default_factory=list)
    remaining: list[int] = field(default_factory=list)
    port_owners: list[object] = field(default_factory=list)
    #: The agent's GPU check (see agent.gpu_held): None when there was nothing to check.
    gpu: dict[str, object] | None = None
    refused: str | None = None
    #: The channel was lost during the kill (its end came from the host's record).
    interrupted: str | None = None
    #: The end of the kill could not be read back: what babysit knows, and where it is.
    unknown: str | None = None
    #: A container's stop: how the container ended (its ``stopped`` event's fields).
    stopped: dict[str, object] | None = None
    #: A kill of orphans: only what the killed processes held counts as left (a live
    #: run beside them keeps its memory).
    orphans: bool = False

    @property
    def gpu_held(self) -> list[dict[str, object]]:
        held = (self.gpu or {}).get("held")
        found = list(held) if isinstance(held, list) else []
        return [a for a in found if a.get("signalled")] if self.orphans else found

    @property
    def ok(self) -> bool:
        return (
            self.refused is None
            and self.unknown is None
            and not self.changed
            and not self.remaining
            and not self.gpu_held
            and not (self.stopped or {}).get("running")
        )

    @property
    def exit_status(self) -> int:
        """``babysit kill``'s exit status (README): 0 all gone and released; 1 something
        left; 2 refused, nothing signalled; 3 the end could not be read back."""
        if self.unknown is not None:
            return 3
        if self.refused is not None:
            return 2
        return 0 if self.ok else 1

    def summary(self, target: KillTarget | ContainerTarget, port: int | None) -> str:
        if self.refused:
            return self.refused
        if self.unknown:
            sent = (
                f"signalled before the loss: {', '.join(map(str, self.signalled))}"
                if self.signalled
                else "nothing was signalled before the loss"
            )
            return f"{self.unknown}; {sent}"
        parts = []
        if self.changed:
            parts.append(
                ", ".join(
                    f"pid {p} is now another process: nothing was signalled" for p in self.changed
                )
            )
        if self.remaining:
            parts.append(f"still running after SIGKILL: {', '.join(map(str, self.remaining))}")
        if self.stopped is not None:
            parts.insert(0, f"{target.text}: {stopped_words(self.stopped)}")
        elif not parts:
            one = self.orphans and len(target.processes) == 1
            parts.append(f"{target.text} {'is' if one else 'are'} gone")
        if port:
            parts.append(
                f"port {port} is closed"
                if not self.port_owners
                else f"port {port} is still held by {self.port_owners}"
            )
        gpu_words = _gpu_words(self.gpu)
        if gpu_words:
            parts.append(gpu_words)
        if self.interrupted:
            parts.append(
                "the connection was lost during the kill; its end was read back from the "
                "host's record"
            )
        return "; ".join(parts)


def stopped_words(stopped: dict[str, object]) -> str:
    """How a container ended, from its kill's ``stopped`` event: its state, exit code,
    FinishedAt (UTC) and whether the kernel's OOM killer ended it."""
    if not stopped.get("found"):
        return "the container is gone (removed at its exit: --rm)"
    if stopped.get("running"):
        return f"the container is still running (status {stopped.get('status')})"
    finished = stopped.get("finished_at")
    at = (
        f" at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(finished))}"
        if isinstance(finished, int | float)
        else ""
    )
    how = "had already stopped" if stopped.get("already") else "stopped"
    oom = "OOM-killed" if stopped.get("oom_killed") else "not OOM-killed"
    error = f", error: {stopped['error']}" if stopped.get("error") else ""
    return (
        f"the container {how} ({stopped.get('status')}): exit code "
        f"{stopped.get('exit_code')}{at}, {oom}{error}"
    )


#: MiB from which memory is said in GiB.
GIB = 1024


def mib_text(mib: float) -> str:
    """``38.2 GiB``, ``512 MiB``."""
    return f"{mib / GIB:.1f} GiB" if mib >= GIB else f"{mib:.0f} MiB"


def freed_words(gpu: dict[str, object]) -> str | None:
    """What the kill's wait for GPU memory saw (None: there was nothing to wait for):
    ``GPU memory freed: 38.2 GiB on GPU 0, 1 (after 1.4 s)``, or what the killed
    processes still held when the wait gave up."""
    waited = gpu.get("waited_s")
    if not isinstance(waited, int | float):
        return None
    freed = int(gpu.get("freed_mib") or 0)  # type: ignore[call-overload]
    indexes = [int(i) for i in gpu.get("freed_gpus") or []]  # type: ignore[union-attr]
    on = f" on GPU {', '.join(map(str, indexes))}" if indexes else ""
    held_mib = int(gpu.get("held_mib") or 0)  # type: ignore[call-overload]
    if not held_mib:
        return f"GPU memory freed: {mib_text(freed)}{on} (after {waited:.1f} s)"
    mine = [a for a in gpu.get("held") or [] if a.get("signalled")]  # type: ignore[union-attr]
    each = ", ".join(
        f"pid {a['pid']} ({a.get('command') or 'unknown'}) {mib_text(a['used_mib'])} "
        f"on GPU {a['gpu']}"
        for a in mine
    )
    still = each or f"{mib_text(held_mib)} not given back by the driver{on}"
    gave = f"; {mib_text(freed)} freed" if freed else ""
    return f"GPU memory still held after {waited:.0f} s: {still}{gave}"


def _gpu_words(gpu: dict[str, object] | None) -> str | None:
    if not gpu:
        return None
    freed = freed_words(gpu)
    rest = _held_words(gpu)
    return "; ".join(w for w in (freed, rest) if w) or None


def _held_words(gpu: dict[str, object]) -> str | None:
    if not gpu.get("checked"):
        return f"GPU memory not checked: {gpu.get('reason')}"
    indexes = [int(i) for i in gpu.get("gpus") or []]  # type: ignore[union-attr]
    named = f"GPU{'s' if len(indexes) != 1 else ''} {', '.join(map(str, indexes))}"
    scope = (
        f"the service's {named}"
        if gpu.get("source") == "gpus"
        else f"{named} (the GPUs the run held memory on; the service names no gpus:)"
    )
    held = gpu.get("held") or []
    if not held:
        return f"no process holds memory on {scope}"
    each = ", ".join(
        f"pid {a['pid']} (user {a.get('user') or 'unknown: not visible here'}, "
        f"{'signalled' if a.get('signalled') else 'not signalled'}) holds {a['used_mib']} MiB "
        f"on GPU {a['gpu']}"
        for a in held  # type: ignore[union-attr]
    )
    return f"GPU memory is still held on {scope}: {each}"


def outcome_of(events: list[KillEvent]) -> KillOutcome:
    outcome = KillOutcome()
    for event in events:
        if event.kind == KILL_SIGNALLED and event.pid is not None:
            if event.pid not in outcome.signalled:
                outcome.signalled.append(event.pid)
        elif event.kind == KILL_CHANGED and event.pid is not None:
            outcome.changed.append(event.pid)
        elif event.kind == KILL_REFUSED:
            outcome.refused = event.message
        elif event.kind == KILL_LOST:
            outcome.interrupted = str(event.data.get("reason") or event.message)
        elif event.kind in (KILL_UNKNOWN, KILL_ERROR):
            outcome.unknown = event.message
        elif event.kind == KILL_STOPPED:
            outcome.stopped = dict(event.data)
        elif event.kind == KILL_DONE:
            outcome.remaining = list(event.data.get("remaining") or [])  # type: ignore[arg-type]
            outcome.port_owners = list(event.data.get("port_owners") or [])  # type: ignore[arg-type]
            gpu = event.data.get("gpu")
            outcome.gpu = gpu if isinstance(gpu, dict) else None
    return outcome
