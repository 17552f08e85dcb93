"""Following in the TUI: a writer appends 5,000 lines/s for 30 s to a followed log; CPU and lag.

Each viewer (babysit's host screen, toolong, lnav) runs in its own tmux server
(160x40) on the same kind of log. While the writer runs, every 0.5 s the bench
reads the writer's counter (a shared 8-byte file it updates after each write)
and then the screen (capture-pane), and takes the newest line number visible:
lines behind = counter − newest, and seconds behind = now − the write time
stamped in that line. CPU is the viewer's whole process tree (TUI, agents,
children) over the writer's run; the tmux server's CPU is reported apart. After
the writer stops, the time until its last line is on screen.

    .venv/bin/python bench/tui_follow.py [--rate 5000] [--seconds 30] [--json FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import mmap
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from screens import Tmux, lnav_env, proc_cpu, tree_cpu, tree_rss

LINE = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}) INFO seq=(\d{9}) ")

WRITER = r"""
import datetime, mmap, os, struct, sys, time
path, counter, rate, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
with open(counter, "r+b") as c:
    shared = mmap.mmap(c.fileno(), 8)
out = open(path, "a")
total = int(rate * seconds)
start = time.time()
sent = 0
now = datetime.datetime.now
while sent < total:
    due = min(total, int((time.time() - start) * rate) + 1)
    chunk = []
    while sent < due:
        sent += 1
        chunk.append(f"{now().isoformat(timespec='microseconds')} INFO seq={sent:09d} "
                     f"decode batch running-req 12 token usage 0.42 gen 1234.5 tok/s\n")
    out.write("".join(chunk))
    out.flush()
    shared[:8] = struct.pack("<q", sent)
    time.sleep(0.002)
out.close()
print(sent)
"""


def header_lines(n: int = 50) -> str:
    stamp = datetime.datetime.now().isoformat(timespec="microseconds")
    return "".join(f"{stamp} INFO seq={0:09d} header line {i}\n" for i in range(n))


def newest(screen: str) -> tuple[int, float | None]:
    """(highest line number on screen, its write time as a POSIX timestamp)."""
    best, when = -1, None
    for match in LINE.finditer(screen):
        seq = int(match.group(2))
        if seq > best:
            best = seq
            when = datetime.datetime.fromisoformat(match.group(1)).timestamp()
    return best, when


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def follow_one(
    name: str, argv: list[str], env: dict[str, str] | None, work: Path, *, rate: int, seconds: float
) -> dict[str, object]:
    log = work / f"{name}.log"
    log.write_text(header_lines())
    counter = work / f"{name}.counter"
    counter.write_bytes(b"\0" * 8)
    tmux = Tmux(work / f"{name}.sock")
    tmux.start(argv, width=160, height=40, env=env)
    try:
        if tmux.wait_for(lambda s: "header line 49" in s, timeout=30) is None:
            return {"error": "the log never showed: " + " ".join(tmux.screen().split())[-200:]}
        time.sleep(1.0)
        assert tmux.pane_pid is not None
        cpu0, tmux0 = tree_cpu(tmux.pane_pid), proc_cpu(tmux.server_pid)
        wall0 = time.monotonic()
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(log), str(counter), str(rate), str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
        with counter.open("r+b") as handle:
            shared = mmap.mmap(handle.fileno(), 8)
            lag_lines: list[int] = []
            lag_seconds: list[float] = []
            peak_rss = 0.0
            while writer.poll() is None:
                time.sleep(0.5)
                written = struct.unpack("<q", shared[:8])[0]
                screen = tmux.screen()
                at = time.time()
                seq, when = newest(screen)
                peak_rss = max(peak_rss, tree_rss(tmux.pane_pid))
                if written > 0 and writer.poll() is None:
                    lag_lines.append(written - max(seq, 0))
                    if when is not None:
                        lag_seconds.append(at - when)
            wall = time.monotonic() - wall0
            cpu1, tmux1 = tree_cpu(tmux.pane_pid), proc_cpu(tmux.server_pid)
            out, _ = writer.communicate()
            sent = int(out.strip() or 0)
            stopped = time.monotonic()
            caught_up = None
            while time.monotonic() - stopped < 30:
                seq, _ = newest(tmux.screen())
                if seq >= sent:
                    caught_up = time.monotonic() - stopped
                    break
                time.sleep(0.05)
            shared.close()
        return {
            "sent": sent,
            "seconds": round(wall, 2),
            "cpu_seconds": round(cpu1 - cpu0, 2),
            "cpu_pct_of_core": round(100 * (cpu1 - cpu0) / wall, 1),
            "tmux_server_cpu_pct": round(100 * (tmux1 - tmux0) / wall, 1),
            "lag_seconds_p50": _round(percentile(lag_seconds, 0.5)),
            "lag_seconds_p95": _round(percentile(lag_seconds, 0.95)),
            "lag_seconds_max": _round(max(lag_seconds) if lag_seconds else None),
            "lag_lines_p50": percentile([float(x) for x in lag_lines], 0.5),
            "lag_lines_max": max(lag_lines) if lag_lines else None,
            "samples": len(lag_lines),
            "catch_up_seconds": _round(caught_up),
            "peak_rss_mib": round(peak_rss),
        }
    finally:
        tmux.stop()


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def viewers(
    peers: dict[str, str | None], work: Path
) -> dict[str, tuple[list[str], dict | None] | str]:
    """{name: (argv, env) or why it cannot run}; babysit's argv takes its log from hosts.yaml."""
    config = work / "hosts.yaml"
    config.write_text(
        "hosts:\n  here:\n    local: true\n    services:\n"
        f"      svc: {{log: {json.dumps(str(work / 'babysit.log'))}}}\n"
    )
    out: dict[str, tuple[list[str], dict | None] | str] = {
        "babysit": ([sys.executable, "-m", "tui", "here", "--config", str(config)], None)
    }
    tl = peers.get("toolong")
    out["toolong"] = ([tl, str(work / "toolong.log")], None) if tl else "toolong not installed"
    lnav = peers.get("lnav")
    out["lnav"] = (
        ([lnav, str(work / "lnav.log")], lnav_env(work / "lnav-home"))
        if lnav
        else "lnav not installed"
    )
    return out


def run_all(
    peers: dict[str, str | None], rate: int, seconds: float, log=print
) -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tui-follow-") as tmp:
        work = Path(tmp)
        for name, spec in viewers(peers, work).items():
            if isinstance(spec, str):
                results[name] = {"missing": spec}
            else:
                try:
                    results[name] = follow_one(
                        name, spec[0], spec[1], work, rate=rate, seconds=seconds
                    )
                except Exception as error:
                    results[name] = {"error": f"{type(error).__name__}: {error}"}
            log(f"  tui follow {name:<8} {summary(results[name])}")
    return results


def summary(r: dict[str, object]) -> str:
    if "missing" in r:
        return f"not run: {r['missing']}"
    if "error" in r:
        return f"error: {r['error']}"
    return (
        f"CPU {r['cpu_pct_of_core']}% of a core (tmux {r['tmux_server_cpu_pct']}%), lag p50 "
        f"{r['lag_seconds_p50']} s / p95 {r['lag_seconds_p95']} s, max {r['lag_lines_max']} "
        f"lines behind, caught up {r['catch_up_seconds']} s after the writer stopped, "
        f"RSS {r['peak_rss_mib']} MiB"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON here")
    args = parser.parse_args()
    tl = ROOT / "bench/.peers/toolong/bin/tl"
    peers = {
        "lnav": shutil.which("lnav"),
        "toolong": shutil.which("tl") or (str(tl) if tl.exists() else None),
    }
    results = run_all(peers, args.rate, args.seconds)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
