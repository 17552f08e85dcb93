"""This machine's /proc, read the way the agent reads a host's: the boot id, and a
process's state, parent and start time in clock ticks (with the pid, the start names one
process for good). For babysit's own side; the agent, which runs on the host with the
standard library alone, has its own."""

from __future__ import annotations

from pathlib import Path


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def stat_of(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start ticks) of ``pid``, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[0], int(fields[1]), int(fields[19])


def start_ticks(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot; None if gone or a zombie."""
    stat = stat_of(pid)
    return None if stat is None or stat[0] in ("Z", "X") else stat[2]
