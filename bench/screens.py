"""Helpers for timing terminal programs: a private tmux server, its screen, and CPU of a tree.

Every program under test runs in its own tmux server (its own socket in a
scratch folder), so its tmux server's CPU can be measured apart and nothing
touches the user's tmux sessions.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import psutil


class Tmux:
    """One private tmux server with one session, ``bench``, running one command."""

    def __init__(self, socket: Path, env: dict[str, str] | None = None) -> None:
        self.socket = str(socket)
        self.env = dict(os.environ if env is None else env)
        self.env.setdefault("TERM", "xterm-256color")
        self.env.pop("TMUX", None)
        self.pane_pid: int | None = None
        self.server_pid: int | None = None

    def run(self, *args: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", self.socket, "-f", os.devnull, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(
        self, argv: list[str], width: int = 160, height: int = 40, env: dict[str, str] | None = None
    ) -> None:
        command = shlex.join(argv)
        if env:
            command = (
                "exec env "
                + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
                + " "
                + command
            )
        else:
            command = "exec " + command
        result = self.run(
            "new-session",
            "-d",
            "-s",
            "bench",
            "-x",
            str(width),
            "-y",
            str(height),
            command,
            ";",
            "set-option",
            "-t",
            "bench",
            "remain-on-exit",
            "on",
        )
        if result.returncode != 0:
            raise RuntimeError(f"tmux new-session failed: {result.stderr.strip()}")
        self.pane_pid = int(
            self.run("display-message", "-p", "-t", "bench", "#{pane_pid}").stdout.strip()
        )
        self.server_pid = int(
            self.run("display-message", "-p", "-t", "bench", "#{pid}").stdout.strip()
        )

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "bench").stdout

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "bench", *keys)

    def wait_for(self, predicate, timeout: float, interval: float = 0.05) -> str | None:
        """Poll the screen until ``predicate(screen)``; the screen, or None on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(interval)
        return None

    def stop(self) -> None:
        """End the program (its whole process tree, by pid) and then this tmux server."""
        if self.pane_pid is not None:
            kill_tree(self.pane_pid, grace=1.5)
        self.run("kill-server")
        if self.server_pid is not None:
            with contextlib.suppress(psutil.Error):
                psutil.Process(self.server_pid).wait(5)


def kill_tree(pid: int, grace: float = 3.0) -> None:
    """TERM ``pid`` and its descendants, then KILL what is left after ``grace`` seconds."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=grace)


def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds of ``pid``'s live threads in nanoseconds' resolution (Linux schedstat).

    psutil's figures come in clock ticks (10 ms), too coarse for a follower at 10
    lines/s; None where schedstat is missing.
    """
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return sum(int((t / "schedstat").read_text().split()[0]) for t in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def cpu_of(procs: list[psutil.Process]) -> float:
    """CPU seconds of ``procs`` (schedstat where there is one, else psutil's ticks)."""
    total = 0.0
    for proc in procs:
        precise = cpu_seconds(proc.pid)
        if precise is not None:
            total += precise
            continue
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system
    return total


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants, plus the children each has reaped."""
    total = 0.0
    for proc in tree(pid):
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.children_user + t.children_system
            precise = cpu_seconds(proc.pid)
            total += precise if precise is not None else t.user + t.system
    return total


def tree_rss(pid: int) -> float:
    total = 0
    for proc in tree(pid):
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total / 2**20


def proc_cpu(pid: int | None) -> float:
    if pid is None:
        return 0.0
    precise = cpu_seconds(pid)
    if precise is not None:
        return precise
    with contextlib.suppress(psutil.Error):
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    return 0.0


def lnav_env(home: Path) -> dict[str, str]:
    """An isolated HOME and TMPDIR for lnav, so it never reads or writes the user's ~/.lnav."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "tmp").mkdir(exist_ok=True)
    return {"HOME": str(home), "TMPDIR": str(home / "tmp"), "TERM": "xterm-256color"}
