"""`babysit demo` in tmux: time to the first full screen, then babysit's CPU in steady state.

Starts `babysit demo` in a private tmux server (120x36), polls ``capture-pane``
until the banner shows (its first text, then STARTING or a verdict, then LIVE),
lets the fleet settle, and measures CPU over ``--seconds`` (default 60):

- babysit: the TUI process (all threads) plus the agents it runs (the log
  follower, the probe agent answering every 2 s, and what they run, such as
  nvidia-smi): live ones by their CPU times and their reaped children's,
  finished ones through babysit's children times;
- the simulated servers and the load generator, reported separately.

Then presses ``q`` and times the exit. Figures, not a test; targets: first
screen <= 2 s, babysit <= 10% of one core.

    .venv/bin/python bench/demo_first_screen.py [--seconds 60] [--settle 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent / "babysit"
BABYSIT = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "tui"]
VERDICTS = ("STARTING", "LIVE", "STALE", "DEAD", "NO-LOG", "AMBIGUOUS", "UNKNOWN")
FIRST_SCREEN_TARGET = 2.0
CPU_TARGET = 10.0


class Tmux:
    def __init__(self, socket: Path, env: dict[str, str]) -> None:
        self.socket = str(socket)
        self.env = env

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", self.socket, "-f", os.devnull, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
        )

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "bench").stdout


def cpu(process: psutil.Process) -> tuple[float, float]:
    """(own CPU seconds, CPU seconds of its reaped children)."""
    times = process.cpu_times()
    return times.user + times.system, times.children_user + times.children_system


def tree_cpu(pids: dict[int, psutil.Process], *, reaped: bool = False) -> dict[int, float]:
    """CPU seconds of each process; with ``reaped``, also of the children it has
    reaped (a long-lived agent's nvidia-smi runs)."""
    out = {}
    for pid, proc in pids.items():
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        out[pid] = times.user + times.system
        if reaped:
            out[pid] += times.children_user + times.children_system
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="steady-state window")
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds after LIVE before measuring"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="babysit-bench-") as scratch:
        base = Path(scratch)
        (base / "tmp").mkdir()
        env = dict(
            os.environ,
            BABYSIT_DEMO_STATE=str(base / "state"),
            TMPDIR=str(base / "tmp"),
            TERM="xterm-256color",
        )
        tmux = Tmux(base / "tmux.sock", env)
        command = f'{shlex.join([*BABYSIT, "demo"])}; echo "exited with $?"; sleep 600'
        try:
            return measure(tmux, command, base, args)
        finally:
            tmux.run("kill-server")
            subprocess.run([*BABYSIT, "demo", "--stop"], env=env, capture_output=True)


def measure(tmux: Tmux, command: str, base: Path, args: argparse.Namespace) -> int:
    started = time.monotonic()
    tmux.run("new-session", "-d", "-s", "bench", "-x", "120", "-y", "36", command)
    first = verdict = live = None
    while live is None:
        screen = tmux.screen()
        now = time.monotonic() - started
        if first is None and "●" in screen and "q quit" in screen:
            first = now
        if verdict is None and any(f"● {v}" in screen for v in VERDICTS):
            verdict = now
        if "● LIVE" in screen:
            live = now
        if now > 30:
            print("no LIVE banner after 30 s; the screen:\n" + screen, file=sys.stderr)
            return 1
        time.sleep(0.01)

    folder = next((base / "tmp").glob("babysit-demo-*"))
    fleet = json.loads((folder / "fleet.json").read_text())
    babysit = psutil.Process(fleet["owner"]["pid"])
    fleet_pids = {p["pid"]: p["role"] for p in fleet["processes"]}
    time.sleep(args.settle)

    def helpers() -> dict[int, psutil.Process]:
        return {c.pid: c for c in babysit.children(recursive=True) if c.pid not in fleet_pids}

    def fleet_procs(role: str) -> dict[int, psutil.Process]:
        out = {}
        for pid, r in fleet_pids.items():
            if r == role:
                try:
                    out[pid] = psutil.Process(pid)
                except psutil.Error:
                    continue
        return out

    sims, load = fleet_procs("service"), fleet_procs("load")
    wall0 = time.monotonic()
    own0, reaped0 = cpu(babysit)
    helpers0 = tree_cpu(helpers(), reaped=True)
    sims0, load0 = tree_cpu(sims), tree_cpu(load)
    # follow helpers that start during the window, so their CPU counts from their start
    seen: dict[int, psutil.Process] = {}
    deadline = wall0 + args.seconds
    while time.monotonic() < deadline:
        seen.update(helpers())
        time.sleep(0.25)
    own1, reaped1 = cpu(babysit)
    alive1 = tree_cpu({**seen, **helpers()}, reaped=True)
    sims1, load1 = tree_cpu(sims), tree_cpu(load)
    wall = time.monotonic() - wall0

    own = own1 - own0
    # helpers still running: their CPU in the window; finished ones: babysit's children times
    running = sum(c - helpers0.get(pid, 0.0) for pid, c in alive1.items())
    finished = reaped1 - reaped0
    sims_used = sum(sims1.get(pid, 0.0) - c for pid, c in sims0.items())
    load_used = sum(load1.get(pid, 0.0) - c for pid, c in load0.items())

    tmux.run("send-keys", "-t", "bench", "q")
    quit_at = time.monotonic()
    while "exited with" not in tmux.screen():
        if time.monotonic() - quit_at > 20:
            print("babysit did not exit within 20 s of q", file=sys.stderr)
            return 1
        time.sleep(0.02)
    exit_s = time.monotonic() - quit_at
    left = [pid for pid in fleet_pids if _alive(pid)]

    def pct(seconds: float) -> float:
        return 100.0 * seconds / wall

    babysit_pct = pct(own + running + finished)
    cores = psutil.cpu_count() or 1
    ok_first = "ok" if first <= FIRST_SCREEN_TARGET else "OVER TARGET"
    ok_cpu = "ok" if babysit_pct <= CPU_TARGET else "OVER TARGET"

    def row(label: str, value: str, note: str = "") -> None:
        print(f"  {label:<34} {value}{note}")

    print(f"babysit demo in tmux 120x36 ({cores} CPUs, load average {os.getloadavg()[0]:.2f})")
    row("first full screen (banner shown)", f"{first:6.2f} s", f"   target <= 2 s: {ok_first}")
    row("first verdict on the banner", f"{verdict:6.2f} s")
    row("banner LIVE", f"{live:6.2f} s")
    print(f"steady state over {wall:.1f} s (from {args.settle:g} s after LIVE):")
    row("babysit (TUI + its agents)", f"{babysit_pct:6.2f} %", f"   target <= 10%: {ok_cpu}")
    row("  TUI process", f"{pct(own):6.2f} %")
    row("  agents running (follower, probe)", f"{pct(running):6.2f} %")
    row("  agents finished", f"{pct(finished):6.2f} %")
    row(f"simulated servers ({len(sims)} running)", f"{pct(sims_used):6.2f} %", "   (not babysit)")
    row("load generator", f"{pct(load_used):6.2f} %", "   (not babysit)")
    row("exit after q", f"{exit_s:6.2f} s", f"   processes left: {len(left)}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "first_screen_s": first,
                    "first_verdict_s": verdict,
                    "live_s": live,
                    "window_s": wall,
                    "babysit_pct": babysit_pct,
                    "tui_pct": pct(own),
                    "agents_running_pct": pct(running),
                    "agents_finished_pct": pct(finished),
                    "sims": len(sims),
                    "sims_pct": pct(sims_used),
                    "load_pct": pct(load_used),
                    "exit_s": exit_s,
                    "processes_left": len(left),
                }
            )
        )
    return 0 if not left else 1


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
