"""Parse rate of the metrics parser on a 1,000,000-line mixed log, beside two baselines.

Writes a mixed log (SGLang Decode/Prefill lines of several versions, vLLM stats
and SpecDecoding lines, and the noise around them: access lines, startup
lines, tracebacks, progress bars) to a temp dir, then measures, each in a
fresh subprocess on one core (CPU time, best of --repeat):

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
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET = 300_000
DECODE = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[^\]]*\] Decode batch.*gen throughput \(token/s\): ([\d.]+)"
)


# --- the log ----------------------------------------------------------------------


def _sglang_stamp(r: random.Random, i: int) -> str:
    second = i // 40
    return f"2026-05-09 {9 + second // 3600 % 10:02d}:{second // 60 % 60:02d}:{second % 60:02d}"


def _vllm_stamp(i: int) -> str:
    second = i // 40
    return f"05-09 {9 + second // 3600 % 10:02d}:{second // 60 % 60:02d}:{second % 60:02d}"


def metric_line(r: random.Random, i: int) -> str:  # noqa: PLR0911 - one return per format
    """One SGLang or vLLM metric line, of a version picked at random."""
    ts, vts = _sglang_stamp(r, i), _vllm_stamp(i)
    run, tok, use = r.randint(1, 64), r.randint(1000, 90000), r.random()
    gen, queue = r.uniform(100, 3000), r.randint(0, 20)
    choice = r.randrange(36)
    if choice < 6:
        return (
            f"[{ts} TP0] Decode batch. #running-req: {run}, #token: {tok}, token usage: "
            f"{use:.2f}, gen throughput (token/s): {gen:.2f}, #queue-req: {queue}"
        )
    if choice < 12:
        return (
            f"[{ts}] Decode batch, #running-req: {run}, #token: {tok}, token usage: {use:.2f}, "
            f"accept len: {r.uniform(1, 4):.2f}, accept rate: {r.random():.2f}, cuda graph: True, "
            f"gen throughput (token/s): {gen:.2f}, #queue-req: {queue}, "
        )
    if choice < 16:
        return (
            f"[{ts}.{i % 1000:03d} DP{i % 4} TP{i % 4} EP{i % 4}] Decode batch [{i}], "
            f"#running-req: {run}, #full token: {tok}, full token usage: {use:.2f}, mamba num: 24, "
            f"mamba usage: 0.12, accept len: {r.uniform(1, 4):.2f}, accept rate: {r.random():.2f}, "
            f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: {queue}"
        )
    if choice < 20:
        return (
            f"[{ts}] Decode batch, #running-req: {run}, #token: {tok}, token usage: {use:.2f}, "
            f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: {queue}"
        )
    if choice < 25:
        return (
            f"[{ts} TP0] Prefill batch, #new-seq: 2, #new-token: {tok}, #cached-token: 0, "
            f"token usage: {use:.2f}, #running-req: {run}, #queue-req: {queue}, #pending-token: "
            f"{tok * 2}, cuda graph: False, input throughput (token/s): {gen * 10:.2f}"
        )
    if choice < 30:
        return (
            f"[{ts}] Prefill batch. #new-seq: 1, #new-token: {tok}, #cached-token: 0, "
            f"cache hit rate: 0.00%, token usage: {use:.2f}, #running-req: {run}, "
            f"#queue-req: {queue}"
        )
    if choice < 32:
        return (
            f"(APIServer pid=7) INFO {vts} [loggers.py:335] Engine 000: Avg prompt throughput: "
            f"{gen:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: {run} "
            f"reqs, Waiting: {queue} reqs, GPU KV cache usage: {use * 100:.1f}%, Prefix cache hit "
            f"rate: {r.uniform(0, 100):.1f}%"
        )
    if choice < 33:
        return (
            f"INFO {vts} metrics.py:467] Avg prompt throughput: {gen:.1f} tokens/s, Avg "
            f"generation throughput: {gen:.1f} tokens/s, Running: {run} reqs, Swapped: 0 reqs, "
            f"Pending: {queue} reqs, GPU KV cache usage: {use * 100:.1f}%, "
            "CPU KV cache usage: 0.0%."
        )
    return (
        f"(APIServer pid=7) INFO {vts} [metrics.py:104] SpecDecoding metrics: Mean acceptance "
        f"length: {r.uniform(1, 4):.2f}, Accepted throughput: {gen:.2f} tokens/s, Drafted "
        f"throughput: {gen * 1.2:.2f} tokens/s, Accepted: {tok} tokens, Drafted: {tok * 2} tokens, "
        f"Per-position acceptance rate: 0.980, 0.954, 0.935, Avg Draft acceptance rate: "
        f"{r.uniform(0, 100):.1f}%"
    )


NOISE = (
    '[{ts}] INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK',
    '(APIServer pid=7) INFO:     127.0.0.1:{port} - "POST /v1/completions HTTP/1.1" 200 OK',
    "[{ts} TP0] Load weight begin. avail mem=78.61 GB",
    "[{ts} TP0] KV Cache is allocated. #tokens: 883573, K size: 30.34 GB, V size: 30.34 GB",
    "(EngineCore pid=8) INFO {vts} [gpu_worker.py:402] Available KV cache memory: 54.80 GiB",
    "(APIServer pid=7) INFO {vts} [launcher.py:56] Route: /v1/completions, Methods: POST",
    "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.43it/s]",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1999, in run',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "[{ts}] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: "
    "0.7000 -> 0.8000",
    "WARNING {vts} [scheduler.py:1201] Sequence group 7 is preempted by PreemptionMode.RECOMPUTE",
    "[{ts}] Endpoint '/get_model_info' is deprecated and will be removed in a future version.",
    "",
)


def write_log(path: Path, lines: int, seed: int = 1) -> dict[str, int]:
    """Write ``lines`` lines: about 36% metric lines (30% SGLang, 6% vLLM), the rest noise."""
    r = random.Random(seed)
    counts = {"metric": 0, "noise": 0}
    with open(path, "w", encoding="utf-8") as out:
        batch = []
        for i in range(lines):
            if r.random() < 0.36:
                batch.append(metric_line(r, i))
                counts["metric"] += 1
            else:
                template = NOISE[r.randrange(len(NOISE))]
                batch.append(
                    template.format(
                        ts=_sglang_stamp(r, i), vts=_vllm_stamp(i), port=40000 + i % 999
                    )
                )
                counts["noise"] += 1
            if len(batch) >= 10_000:
                out.write("\n".join(batch) + "\n")
                batch.clear()
        if batch:
            out.write("\n".join(batch) + "\n")
    return counts


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
        print(
            f"log: {args.lines:,} lines, {mib(size)}, {counts['metric'] / args.lines:.1%} metric "
            f"lines (SGLang and vLLM), written in {time.monotonic() - started:.1f} s"
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
