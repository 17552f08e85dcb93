"""Parse rate of the metrics parser on a 1,000,000-line mixed log, beside two baselines.

Writes a mixed log of all four engines (:mod:`mixed_log`: SGLang's and vLLM's
metric lines of several versions among their noise, llama.cpp's timing,
progress and acceptance lines in their 2024/2025/2026 shapes, TGI's ``Success``
lines in compact, full, coloured and JSON shapes, each among its engine's other
lines) to a temp dir, then measures, each in a fresh subprocess on one core (CPU
time, best of --repeat):

* the floor: read the file, split it into lines, decode them;
* one ``re.search`` of a single SGLang decode-line pattern per line;
* the full parser: what ``babysit parse`` does per line (cut, decode, clean,
  :class:`tui.core.metrics.boundaries.LogScanner`), without printing;
* ``babysit parse FILE`` itself (text summary), end to end.

Peak memory is each subprocess's ru_maxrss; the parser is also run on a
tenth of the file to show its memory does not grow with the file. A figure,
not a test: nothing here asserts a time.

    .venv/bin/python bench/parse_rate.py [--lines N] [--repeat R] [--keep DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mixed_log import SHARES, write_log

TARGET = 300_000
DECODE = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[^\]]*\] Decode batch.*gen throughput \(token/s\): ([\d.]+)"
)


# --- one measurement, in its own process --------------------------------------------


def measure(mode: str, path: Path, limit: int | None) -> dict[str, float]:
    from datetime import datetime

    from tui.commands.parse import read_lines
    from tui.core.metrics.boundaries import LogScanner

    start = time.process_time()
    lines = found = 0
    with open(path, "rb") as stream:
        if mode == "floor":
            for data in stream:
                data.decode("utf-8", "replace")
                lines += 1
                if lines == limit:
                    break
        elif mode == "regex":
            search = DECODE.search
            for data in stream:
                if search(data.decode("utf-8", "replace")) is not None:
                    found += 1
                lines += 1
                if lines == limit:
                    break
        elif mode == "parser":
            scanner = LogScanner(reference=datetime(2026, 12, 31))
            feed = scanner.feed
            for offset, text in read_lines(stream):
                if feed(text, offset) is not None:
                    found += 1
                lines += 1
                if lines == limit:
                    break
        else:
            raise SystemExit(f"unknown mode {mode}")
    seconds = time.process_time() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"lines": lines, "found": found, "seconds": seconds, "rss": rss}


def measure_cli(path: Path) -> dict[str, float]:
    """``babysit parse FILE`` end to end; CPU time and peak RSS of the child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "tui", "parse", str(path)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"seconds": seconds, "rss": after.ru_maxrss * 1024}


def run_child(mode: str, path: Path, limit: int | None = None) -> dict[str, float]:
    argv = [sys.executable, __file__, "--measure", mode, "--file", str(path)]
    if limit:
        argv += ["--limit", str(limit)]
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


# --- the report ---------------------------------------------------------------------


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the log here and keep it")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON to FILE")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.file, args.limit)))
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        path = (args.keep or Path(tmp)) / "mixed.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        counts = write_log(path, args.lines)
        size = path.stat().st_size
        shares = ", ".join(f"{name} {counts[name] / args.lines:.0%}" for name, _ in SHARES)
        print(
            f"log: {args.lines:,} lines, {mib(size)} ({shares}), "
            f"{counts['metric'] / args.lines:.1%} metric lines, "
            f"written in {time.monotonic() - started:.1f} s"
        )
        print(
            f"CPU time on one core, best of {args.repeat}; peak memory: ru_maxrss of each process"
        )
        results: dict[str, dict[str, float]] = {}
        for mode in ("floor", "regex", "parser"):
            runs = [run_child(mode, path) for _ in range(args.repeat)]
            results[mode] = min(runs, key=lambda r: r["seconds"])
        cli = min((measure_cli(path) for _ in range(args.repeat)), key=lambda r: r["seconds"])
        small = run_child("parser", path, limit=args.lines // 10)

    rows = (
        ("floor: read + split + decode", results["floor"]),
        ("one re.search per line", results["regex"]),
        ("full parser (LogScanner)", results["parser"]),
        ("babysit parse FILE (text)", {"seconds": cli["seconds"], "rss": cli["rss"]}),
    )
    floor = results["floor"]["seconds"]
    regex = results["regex"]["seconds"]
    print(f"{'':32} {'lines/s':>11} {'µs/line':>8} {'peak RSS':>10} {'x floor':>8} {'x regex':>8}")
    for name, r in rows:
        rate = args.lines / r["seconds"]
        print(
            f"{name:32} {rate:>11,.0f} {r['seconds'] / args.lines * 1e6:>8.2f} "
            f"{mib(r['rss']):>10} {r['seconds'] / floor:>7.1f}x {r['seconds'] / regex:>7.1f}x"
        )
    parser_rate = args.lines / results["parser"]["seconds"]
    verdict = "met" if parser_rate >= TARGET else "NOT met"
    print(f"target >= {TARGET:,} lines/s for the full parser: {verdict} ({parser_rate:,.0f})")
    print(f"full parser / one regex, same run: {regex / results['parser']['seconds']:.2f}x")
    print(
        f"parser memory: {mib(small['rss'])} on {int(small['lines']):,} lines, "
        f"{mib(results['parser']['rss'])} on {args.lines:,} lines "
        f"(log {mib(size)}): independent of file length"
        if results["parser"]["rss"] < small["rss"] * 1.2
        else f"parser memory grew: {mib(small['rss'])} -> {mib(results['parser']['rss'])}"
    )
    print(f"metric lines and run events found by the parser: {int(results['parser']['found']):,}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "lines": args.lines,
                    "repeat": args.repeat,
                    "bytes": size,
                    "target": TARGET,
                    "results": results,
                    "cli": cli,
                    "small": small,
                }
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
