"""Serving truth: a canary's own cost on the host, and the time from the last progress line
to WEDGED on screen. Figures, not a test: nothing here asserts a time.

1. Canary cost: a healthy SGLang sim on this machine (a model folder with a
   ``generation_config.json``), ``--canaries`` canaries sent one after another through
   babysit's own path (:func:`tui.session.canary.run_canary`, the local transport). Per
   canary: the agent's CPU seconds as it says in its answer (``cpu_s``), the same measured
   from outside (this process's reaped children's CPU times across the canary: the agent
   is the one child it starts then), and the wall time; median and max of each.
2. WEDGED on screen: the TUI (``babysit gpu svc`` with a hosts.yaml, 2 s refresh) in a
   private tmux server, a vLLM sim under load whose engine stops ``--wedge-after`` s after
   it is ready (``wedged`` scenario); ``capture-pane`` polled every :data:`POLL` s until
   the banner says WEDGED. The figure: (the first screen showing WEDGED) - (the last
   progress line's stamp in the sim's log) - ``wedged_after``: the delay babysit adds to
   its own rule, over ``--runs`` runs.

    .venv/bin/python bench/serving.py [--canaries 10] [--runs 3] [--json FILE]
    .venv/bin/python bench/serving.py --load PORT     (the load's client process)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from screens import Tmux
from sim_idle import free_port, health

ROOT = Path(__file__).resolve().parents[1]
#: Seconds between two looks at the screen.
POLL = 0.2
#: ``wedged_after`` of the service on screen (hosts.yaml).
WEDGED_AFTER = 5.0
#: Seconds of serving before the sim's engine stops.
WEDGE_AFTER = 4.0
#: Seconds a screen gets to show WEDGED before a run counts as failed.
SCREEN_TIMEOUT = 60.0
#: The load: streams of completions, tokens each, and how long a request may wait.
LOAD_STREAMS, LOAD_TOKENS, LOAD_WAIT = 3, 40, 600.0
#: What the model recommends (its generation_config.json).
RECOMMENDED = {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
#: vLLM's stats line (its stamp has no year) with its throughputs.
STATS = re.compile(
    r"INFO (?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)[^\n]*Avg prompt throughput: (?P<prefill>[\d.]+)"
    r" tokens/s, Avg generation throughput: (?P<gen>[\d.]+) tokens/s"
)


def start_sim(work: Path, engine: str, scenario: str, extra: list[str]) -> tuple:
    """A sim appending to ``work/<engine>.log`` (a shell's ``>> log``); (process, port, log)."""
    port = free_port()
    model = work / "models" / "Qwen3-8B"
    model.mkdir(parents=True, exist_ok=True)
    (model / "generation_config.json").write_text(json.dumps(RECOMMENDED))
    server = ["--model-path", str(model)] if engine == "sglang" else ["serve", str(model)]
    argv = [sys.executable, "-m", "tui", "sim", "--engine", engine, "--port", str(port)]
    argv += ["--load-seconds", "0.3", "--scenario", scenario, "--seed", "1", *extra, "--"]
    log = work / f"{engine}-{port}.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), BABYSIT_SIM_STATE=str(work / "sim-state"))
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [*argv, *server], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env
        )
    deadline = time.monotonic() + 60
    while health(port) != 200:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the sim did not become ready: {log.read_text()[-500:]}")
        time.sleep(0.05)
    return proc, port, log


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def hosts_yaml(work: Path, engine: str, port: int, log: Path) -> Path:
    fields = {"engine": engine, "log": str(log), "port": port, "wedged_after": WEDGED_AFTER}
    path = work / "hosts.yaml"
    path.write_text(
        f"hosts:\n  gpu:\n    local: true\n    services:\n      svc: {json.dumps(fields)}\n"
    )
    return path


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "max": max(values), "n": len(values)}


# --------------------------------------------------------------------------- 1. canary cost


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def canaries(config: Path, count: int) -> dict[str, object]:
    from tui.core.canary import CanaryOutcome
    from tui.hostsfile import load_config
    from tui.session.canary import run_canary
    from tui.session.sessions import Sessions

    host = load_config(str(config)).hosts["gpu"]
    sessions = Sessions(long_lived=False, timeout=None)
    said, outside, wall, outcomes = [], [], [], []
    try:
        session = sessions.session(host, host.services["svc"])
        assessment = await session.fresh()  # the run, asked once (its agent is not counted)
        for _ in range(count):
            before, t0 = children_cpu(), time.monotonic()
            result = await run_canary(session, assessment=assessment)
            wall.append(time.monotonic() - t0)
            outside.append(children_cpu() - before)
            outcomes.append(result.outcome.value)
            if result.agent_cpu_s is not None:
                said.append(result.agent_cpu_s)
    finally:
        await sessions.close()
    ok = outcomes.count(CanaryOutcome.OK.value)
    return {
        "canaries": count,
        "ok": ok,
        "outcomes": outcomes,
        "agent_cpu_s": summary(said) if said else None,
        "outside_cpu_s": summary(outside),
        "wall_s": summary(wall),
    }


def canary_cost(work: Path, count: int) -> dict[str, object]:
    proc, port, log = start_sim(work, "sglang", "healthy", [])
    try:
        return asyncio.run(canaries(hosts_yaml(work, "sglang", port, log), count))
    finally:
        stop(proc)


# --------------------------------------------------------------------------- 2. WEDGED on screen


def last_progress(text: str) -> float | None:
    """Epoch seconds of the last vLLM stats line with a throughput above 0 (its stamp)."""
    found = None
    for match in STATS.finditer(text):
        if float(match["gen"]) > 0 or float(match["prefill"]) > 0:
            found = match["stamp"]
    if found is None:
        return None
    stamp = f"{datetime.now().year}-{found}"
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp()


def one_screen_run(work: Path) -> dict[str, object]:
    extra = ["--wedge-after", f"{WEDGE_AFTER:g}", "--stats-interval", "1"]
    proc, port, log = start_sim(work, "vllm", "wedged", extra)
    config = hosts_yaml(work, "vllm", port, log)
    load = subprocess.Popen([sys.executable, __file__, "--load", str(port)], cwd=ROOT)
    tmux = Tmux(work / "tmux.sock")
    try:
        tmux.start([sys.executable, "-m", "tui", "gpu", "svc", "--config", str(config)])
        deadline = time.monotonic() + SCREEN_TIMEOUT
        seen = None
        while time.monotonic() < deadline:
            if "WEDGED" in tmux.screen():
                seen = time.time()
                break
            time.sleep(POLL)
        last = last_progress(log.read_text(errors="replace"))
        if seen is None or last is None:
            return {"error": "no WEDGED on screen" if seen is None else "no progress line"}
        return {
            "delay_s": seen - last - WEDGED_AFTER,
            "progress_to_screen_s": seen - last,
        }
    finally:
        tmux.stop()
        load.send_signal(signal.SIGKILL)
        load.wait(10)
        stop(proc)


def wedged_on_screen(work: Path, runs: int) -> dict[str, object]:
    results = []
    for n in range(runs):
        folder = work / f"run{n}"
        folder.mkdir()
        results.append(one_screen_run(folder))
    delays = [r["delay_s"] for r in results if "delay_s" in r]
    return {
        "runs": results,
        "wedged_after_s": WEDGED_AFTER,
        "refresh_s": 2.0,
        "poll_s": POLL,
        "delay_s": summary(delays) if delays else None,
    }


# --------------------------------------------------------------------------- the load's process


def load(port: int) -> None:
    """Completions one after another on each stream until killed (a request to a wedged
    server waits)."""
    body = json.dumps({"prompt": "hello", "max_tokens": LOAD_TOKENS}).encode()

    def stream() -> None:
        while True:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/completions",
                data=body,
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=LOAD_WAIT) as answer:  # noqa: S310
                    answer.read()
            except OSError:
                return

    threads = [threading.Thread(target=stream, daemon=True) for _ in range(LOAD_STREAMS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--canaries", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--load", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load is not None:
        load(args.load)
        return 0
    with tempfile.TemporaryDirectory(prefix="babysit-serving-") as tmp:
        work = Path(tmp)
        os.environ["BABYSIT_STATE"] = str(work / "local-state")
        os.environ["BABYSIT_HOST_STATE"] = str(work / "host-state")
        (work / "canary").mkdir()
        (work / "screen").mkdir()
        data = {
            "canary": canary_cost(work / "canary", args.canaries),
            "wedged": wedged_on_screen(work / "screen", args.runs),
        }
    print(json.dumps(data, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
