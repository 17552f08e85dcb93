"""Idle CPU cost of one simulated server: start it, wait until ready, then measure ~10 s.

Prints the CPU time the sim (and its children) used while idle, as a percentage
of one core. A figure, not a test: nothing here asserts a time.

    .venv/bin/python bench/sim_idle.py [--engine sglang|vllm] [--tp N] [--seconds S] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def health(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def schedstat_seconds(pid: int) -> float | None:
    """CPU time of all threads of ``pid`` in nanosecond resolution (Linux), or None."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        return sum(int((task / "schedstat").read_text().split()[0]) for task in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds(process: psutil.Process) -> float:
    """CPU time of the sim and its children (psutil's coarser ticks where schedstat is missing)."""
    total = 0.0
    for proc in [process, *process.children(recursive=True)]:
        precise = schedstat_seconds(proc.pid)
        if precise is not None:
            total += precise
            continue
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="sglang", choices=("sglang", "vllm"))
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as state, open(os.devnull, "wb") as sink:
        env = dict(os.environ, BABYSIT_SIM_STATE=state, PYTHONPATH=str(ROOT))
        argv = [
            sys.executable,
            "-m",
            "tui",
            "sim",
            "--engine",
            args.engine,
            "--tp",
            str(args.tp),
            "--load-seconds",
            "1",
            "--port",
            str(port),
        ]
        child = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=sink, stderr=sink)
        try:
            deadline = time.monotonic() + 30
            while health(port) != 200:
                if time.monotonic() > deadline or child.poll() is not None:
                    print("sim did not become ready", file=sys.stderr)
                    return 1
                time.sleep(0.1)
            process = psutil.Process(child.pid)
            time.sleep(0.5)
            before, started = cpu_seconds(process), time.monotonic()
            time.sleep(args.seconds)
            used, wall = cpu_seconds(process) - before, time.monotonic() - started
        finally:
            child.terminate()
            child.wait(timeout=10)
    print(
        f"{args.engine} tp={args.tp} idle: {100 * used / wall:.3f}% of one core "
        f"({used * 1000:.1f} ms CPU over {wall:.1f} s)"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "engine": args.engine,
                    "tp": args.tp,
                    "pct_of_core": 100 * used / wall,
                    "cpu_ms": used * 1000,
                    "wall_s": wall,
                }
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
