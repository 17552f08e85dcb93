"""Guarded kill: signal exactly the verified run, never a name or a pattern.

The target is the run the user confirmed: (boot id, pid, start time) of the
root and of each descendant seen at that moment. On the host, the agent opens
a pidfd for each pid, re-checks its start time, and only then signals through
that pidfd, so a pid that now belongs to another process is left alone (and
the user told). SIGTERM to the tree, ``grace`` seconds, then SIGKILL for what is
left. Afterwards: is the port closed, and is the GPU memory released?
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from tui.core.runs import Run
from tui.errors import BabysitError
from tui.remote.agentcall import stream_agent
from tui.remote.transport import Transport

DEFAULT_GRACE = 30.0


class IdentityChanged(BabysitError):
    title = "identity-changed"
    exit_status = 2


@dataclass(frozen=True)
class KillTarget:
    """What the user confirmed: these exact processes, on this boot."""

    boot_id: str
    processes: tuple[tuple[int, int], ...]  # (pid, start ticks), root first
    port: int | None = None

    @classmethod
    def of(cls, run: Run, boot_id: str, port: int | None) -> KillTarget:
        return cls(boot_id, tuple((p.pid, p.start_ticks) for p in run.processes), port)

    @property
    def root_pid(self) -> int:
        return self.processes[0][0]


@dataclass(frozen=True)
class KillEvent:
    """One step on the host: signalled, exited, changed (left alone), gone, refused, done."""

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
    gpu_held_by_target: list[dict[str, object]] = field(default_factory=list)
    gpu_checked: bool = False
    refused: str | None = None

    @property
    def ok(self) -> bool:
        return self.refused is None and not self.changed and not self.remaining

    def summary(self, target: KillTarget, port: int | None) -> str:
        if self.refused:
            return self.refused
        parts = []
        if self.changed:
            parts.append(
                ", ".join(
                    f"pid {p} is now another process: nothing was signalled" for p in self.changed
                )
            )
        if self.remaining:
            parts.append(f"still running after SIGKILL: {', '.join(map(str, self.remaining))}")
        if not parts:
            parts.append(
                f"pid {target.root_pid} and {len(target.processes) - 1} child process(es) are gone"
            )
        if port:
            parts.append(
                f"port {port} is closed"
                if not self.port_owners
                else f"port {port} is still held by {self.port_owners}"
            )
        if self.gpu_checked:
            parts.append(
                "GPU memory released"
                if not self.gpu_held_by_target
                else "GPU memory still held by "
                + ", ".join(
                    f"pid {a['pid']} ({a['used_mib']} MiB)" for a in self.gpu_held_by_target
                )
            )
        return "; ".join(parts)


async def kill_run(
    transport: Transport, target: KillTarget, *, grace: float = DEFAULT_GRACE
) -> AsyncIterator[KillEvent]:
    """Kill ``target`` on the host, yielding each step; the last event is ``done``."""
    args = {
        "mode": "kill",
        "boot_id": target.boot_id,
        "grace": grace,
        "port": target.port,
        "targets": [{"pid": pid, "start_ticks": ticks} for pid, ticks in target.processes],
    }
    pids = {pid for pid, _ in target.processes}
    saw_done = False
    async with stream_agent(transport, args) as process:
        buffer = b""
        async for chunk in process.chunks():
            buffer += chunk
            while b"\n" in buffer:
                raw, buffer = buffer.split(b"\n", 1)
                if raw.strip():
                    event = _event(json.loads(raw), pids)
                    saw_done = saw_done or event.kind in ("done", "refused")
                    yield event
        stderr = await process.read_stderr()
        status = await process.wait()
    if not saw_done:
        detail = stderr.decode("utf-8", "replace").strip().splitlines()
        raise BabysitError(
            f"{transport.chain_text}: the kill did not finish (exit {status}): "
            f"{detail[-1] if detail else 'no message'}; check the processes by hand",
            title="kill-failed",
        )


def _event(data: dict[str, object], pids: set[int]) -> KillEvent:
    kind = str(data.pop("t"))
    pid = data.get("pid")
    pid = pid if isinstance(pid, int) else None
    if kind == "signalled":
        message = f"sent {data['signal']} to pid {pid} ({data['method']})"
    elif kind == "exited":
        message = f"pid {pid} exited"
    elif kind == "gone":
        message = f"pid {pid} was already gone"
    elif kind == "changed":
        message = f"pid {pid} is now another process: nothing was signalled"
    elif kind == "refused":
        message = str(data.get("reason"))
    elif kind == "done":
        apps = data.get("gpu_apps")
        held = [a for a in apps or [] if isinstance(a, dict) and a.get("pid") in pids]
        data["gpu_held_by_target"] = held
        message = "done"
    else:
        message = kind
    return KillEvent(kind, pid, message, data)


def outcome_of(events: list[KillEvent]) -> KillOutcome:
    outcome = KillOutcome()
    for event in events:
        if event.kind == "signalled" and event.pid is not None:
            outcome.signalled.append(event.pid)
        elif event.kind == "changed" and event.pid is not None:
            outcome.changed.append(event.pid)
        elif event.kind == "refused":
            outcome.refused = event.message
        elif event.kind == "done":
            outcome.remaining = list(event.data.get("remaining") or [])  # type: ignore[arg-type]
            outcome.port_owners = list(event.data.get("port_owners") or [])  # type: ignore[arg-type]
            outcome.gpu_checked = event.data.get("gpu_apps") is not None
            outcome.gpu_held_by_target = list(event.data["gpu_held_by_target"])  # type: ignore[arg-type]
    return outcome
