"""Big log, first screen: time until the last line is on screen, and peak memory.

Writes a 2 GiB SGLang-format log (about 10 M lines), opens it in babysit's host
screen inside tmux, and polls `tmux capture-pane` until the file's last line is
visible. Peak RSS covers babysit and its agent. Peers (lnav, toolong) are timed
the same way when they are installed; otherwise their row says so.

    .venv/bin/python bench/big_log.py [--gib 2] [--keep FILE]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
LAST = (
    "[2026-05-09 23:59:59 TP0] Decode batch, #running-req: 7, #token: 4242, "
    "token usage: 0.42, gen throughput (token/s): 99.99, #queue-req: 0, LAST-LINE-MARKER"
)


def make_log(path: Path, size: int) -> None:
    lines = []
    for i in range(400_000):
        h, rest = divmod(i, 3600)
        m, s = divmod(rest, 60)
        lines.append(
            f"[2026-05-09 {h % 24:02d}:{m:02d}:{s:02d} TP0] Decode batch, #running-req: {i % 9}, "
            f"#token: {i % 5000}, token usage: 0.{i % 100:02d}, cuda graph: True, "
            f"gen throughput (token/s): {50 + i % 17}.{i % 100:02d}, #queue-req: {i % 3}, \n"
        )
    block = "".join(lines).encode()
    with path.open("wb") as out:
        while out.tell() + len(block) < size:
            out.write(block)
        out.write((LAST + "\n").encode())


def measure(argv: list[str], marker: str, timeout: float = 120.0) -> tuple[float, float, str]:
    """(seconds until ``marker`` is on screen, peak RSS MiB of the tree, note)."""
    session = f"bench-{os.getpid()}"
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, check=False)
    started = time.monotonic()
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "40", *argv], check=True
    )
    pane_pid = int(
        subprocess.run(
            ["tmux", "display-message", "-p", "-t", session, "#{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    peak = 0.0
    seen = None
    try:
        while time.monotonic() - started < timeout:
            with contextlib.suppress(psutil.NoSuchProcess):
                root = psutil.Process(pane_pid)
                rss = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
                peak = max(peak, rss / 2**20)
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            if marker in screen and seen is None:
                seen = time.monotonic() - started
                end = time.monotonic() + 1.0  # keep sampling memory a little after
                while time.monotonic() < end:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        root = psutil.Process(pane_pid)
                        rss = sum(
                            p.memory_info().rss for p in [root, *root.children(recursive=True)]
                        )
                        peak = max(peak, rss / 2**20)
                    time.sleep(0.05)
                break
            time.sleep(0.02)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, check=False)
    if seen is None:
        return float("nan"), peak, f"last line not seen within {timeout:.0f} s"
    return seen, peak, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0)
    parser.add_argument("--keep", metavar="FILE", help="reuse (or leave) the log at FILE")
    args = parser.parse_args()
    if not shutil.which("tmux"):
        sys.exit("tmux is needed: apt-get install tmux")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(args.keep) if args.keep else Path(tmp) / "sglang-serve.log"
        if not log.exists() or log.stat().st_size < args.gib * 2**30 * 0.99:
            t0 = time.monotonic()
            make_log(log, int(args.gib * 2**30))
            print(f"wrote {log.stat().st_size / 2**30:.2f} GiB in {time.monotonic() - t0:.1f} s")
        config = Path(tmp) / "hosts.yaml"
        config.write_text(
            f"hosts:\n  here:\n    local: true\n    services:\n"
            f"      qwen: {{engine: sglang, log: {log}}}\n"
        )
        babysit = [str(ROOT / ".venv" / "bin" / "babysit"), "here", "--config", str(config)]
        if not Path(babysit[0]).exists():
            babysit = [sys.executable, "-m", "tui", "here", "--config", str(config)]
        rows = [("babysit host screen", babysit)]
        lnav = shutil.which("lnav")
        toolong = shutil.which("tl")
        rows.append(("lnav", [lnav, str(log)] if lnav else None))
        rows.append(("toolong", [toolong, str(log)] if toolong else None))
        print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
        print(f"{'viewer':<22} {'last line on screen':>20} {'peak RSS':>10}")
        for name, argv in rows:
            if argv is None:
                print(f"{name:<22} {'not installed':>20}")
                continue
            seconds, peak, note = measure(argv, "LAST-LINE-MARKER")
            print(f"{name:<22} {seconds:>18.2f} s {peak:>7.0f} MiB {note}")
        if args.keep is None:
            log.unlink()


if __name__ == "__main__":
    main()
