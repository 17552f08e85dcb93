"""Follow latency and cost over SSH: babysit's follower vs `ssh HOST tail -F`, same sshd, same run.

A writer process on the "host" (a real OpenSSH sshd on 127.0.0.1) appends lines
stamped with their write time at 10, 1,000 and 20,000 lines/s. Each follower
reads them; we report write-to-delivery latency (p50/p95), lines lost, and
CPU seconds: babysit's own process, its agent, and the sshd session serving it,
beside the ssh client, sshd session and tail of the peer.

    .venv/bin/python bench/tail_latency.py [--seconds 10] [--rates 10,1000,20000]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.sshd import Sshd, start_sshd

from tui.core.follow import Start
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.follow import Follower

WRITER = r"""
import sys, time
path, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
out = open(path, "a", buffering=1)
total = int(rate * seconds)
start = time.time()
sent = 0
while sent < total:
    due = min(total, int((time.time() - start) * rate) + 1)
    while sent < due:
        out.write("%d %d\n" % (sent, time.time_ns()))
        sent += 1
    out.flush()
    time.sleep(0.001 if rate > 500 else 1.0 / rate)
out.close()
print(sent)
"""


@dataclass
class Result:
    name: str
    rate: int
    received: int
    sent: int
    p50_ms: float
    p95_ms: float
    cpu: dict[str, float]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu_of(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def session_tree(sshd: Sshd) -> list[psutil.Process]:
    procs = []
    for child in sshd.session_processes():
        with contextlib.suppress(psutil.NoSuchProcess):
            procs.append(child)
            procs.extend(child.children(recursive=True))
    return procs


def parse(line: str, now_ns: int, latencies: list[float], seen: set[int]) -> None:
    parts = line.split()
    if len(parts) == 2 and parts[0].isdigit():
        seen.add(int(parts[0]))
        latencies.append((now_ns - int(parts[1])) / 1e6)


def hosts_yaml(sshd: Sshd, log: Path) -> Path:
    """A hosts.yaml with host ``h`` (this sshd) and its one service ``bench`` logging to ``log``."""
    service = f"\n  services:\n    bench:\n      log: {json.dumps(str(log))}\n"
    body = sshd.host_yaml("h").rstrip("\n") + service
    path = log.with_suffix(".hosts.yaml")
    path.write_text("hosts:\n" + "".join(f"  {line}\n" for line in body.splitlines()))
    return path


async def run_babysit(sshd: Sshd, log: Path, rate: int, seconds: float) -> Result:
    """``babysit tail -f -n 0 h/bench`` in its own process, read like ``ssh tail -F``: the
    client's CPU is that process's alone, as the ssh client's is."""
    tail = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tui",
        "tail",
        "-f",
        "-n",
        "0",
        "h/bench",
        "--config",
        str(hosts_yaml(sshd, log)),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    # connected, its agent started, and the run's one probe answered
    deadline = time.monotonic() + 20
    agent: list[psutil.Process] = []
    while time.monotonic() < deadline and not agent:
        await asyncio.sleep(0.2)
        agent = [p for p in session_tree(sshd) if "babysit-agent" in " ".join(p.cmdline())]
    if not agent:
        raise RuntimeError("babysit tail -f started no agent on the host within 20 s")
    await asyncio.sleep(1.0)
    sessions = session_tree(sshd)
    agent = [p for p in sessions if "babysit-agent" in " ".join(p.cmdline())]
    client = [psutil.Process(tail.pid)]
    cpu0 = (cpu_of(client), cpu_of(agent), cpu_of(sessions))
    latencies: list[float] = []
    seen: set[int] = set()

    async def consume() -> None:
        assert tail.stdout is not None
        while line := await tail.stdout.readline():
            parse(line.decode(), time.time_ns(), latencies, seen)

    reader = asyncio.create_task(consume())
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WRITER,
        str(log),
        str(rate),
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await writer.communicate()
    sent = int(out.decode().strip() or 0)
    deadline = time.monotonic() + 5
    while len(seen) < sent and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    cpu1 = (cpu_of(client), cpu_of(agent), cpu_of(sessions))
    tail.terminate()
    await tail.wait()
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    return Result(
        "babysit",
        rate,
        len(seen),
        sent,
        percentile(latencies, 0.5),
        percentile(latencies, 0.95),
        {
            "client": cpu1[0] - cpu0[0],
            "agent/tail": cpu1[1] - cpu0[1],
            "sshd": cpu1[2] - cpu0[2] - (cpu1[1] - cpu0[1]),
        },
    )


def ssh_argv(sshd: Sshd, *command: str) -> list[str]:
    """OpenSSH's own client running ``command`` on this sshd, with its key and its host key
    checked (a new connection each time)."""
    return [
        "ssh",
        "-p",
        str(sshd.port),
        "-i",
        str(sshd.client_key),
        "-o",
        f"UserKnownHostsFile={sshd.known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        f"{sshd.user}@127.0.0.1",
        *command,
    ]


async def run_ssh_tail(sshd: Sshd, log: Path, rate: int, seconds: float) -> Result:
    ssh = await asyncio.create_subprocess_exec(
        *ssh_argv(sshd, "tail", "-F", "-n", "0", str(log)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await asyncio.sleep(1.0)  # connected and tail started
    sessions = session_tree(sshd)
    tail = [p for p in sessions if p.name() == "tail"]
    client = [psutil.Process(ssh.pid)]
    cpu0 = (cpu_of(client), cpu_of(tail), cpu_of(sessions))
    latencies: list[float] = []
    seen: set[int] = set()

    async def consume() -> None:
        assert ssh.stdout is not None
        while line := await ssh.stdout.readline():
            parse(line.decode(), time.time_ns(), latencies, seen)

    reader = asyncio.create_task(consume())
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WRITER,
        str(log),
        str(rate),
        str(seconds),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await writer.communicate()
    sent = int(out.decode().strip() or 0)
    deadline = time.monotonic() + 5
    while len(seen) < sent and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    cpu1 = (cpu_of(client), cpu_of(tail), cpu_of(sessions))
    ssh.terminate()
    await ssh.wait()
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    return Result(
        "ssh tail -F",
        rate,
        len(seen),
        sent,
        percentile(latencies, 0.5),
        percentile(latencies, 0.95),
        {
            "client": cpu1[0] - cpu0[0],
            "agent/tail": cpu1[1] - cpu0[1],
            "sshd": cpu1[2] - cpu0[2] - (cpu1[1] - cpu0[1]),
        },
    )


async def idle_agent_cpu(sshd: Sshd, log: Path, seconds: float) -> float:
    host = parse_config(
        "hosts:\n" + "".join(f"  {x}\n" for x in sshd.host_yaml("h").splitlines())
    ).hosts["h"]
    links = SshLinks()
    follower = Follower(open_transport(host, links), str(log), label="bench", start=Start(tail=0))
    rows = follower.rows()
    await anext(rows)
    agent = [p for p in session_tree(sshd) if "babysit-agent" in " ".join(p.cmdline())]
    before = cpu_of(agent)
    await asyncio.sleep(seconds)
    used = cpu_of(agent) - before
    await rows.aclose()
    await links.close()
    return used / seconds * 100


def machine() -> str:
    return (
        f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
        f"{subprocess.run(['ssh', '-V'], capture_output=True, text=True).stderr.strip()}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rates", default="10,1000,20000")
    args = parser.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        sshd = start_sshd(Path(tmp) / "sshd")
        try:
            print(f"machine: {machine()}")
            print(
                f"{'follower':<13} {'rate/s':>7} {'sent':>7} {'lost':>6} {'p50 ms':>8} "
                f"{'p95 ms':>8} {'cpu client':>10} {'cpu agent':>10} {'cpu sshd':>9} "
                f"{'cpu µs/line':>11}"
            )
            for rate in rates:
                for runner in (run_babysit, run_ssh_tail):
                    log = Path(tmp) / f"{runner.__name__}-{rate}.log"
                    log.write_text("")
                    result = await runner(sshd, log, rate, args.seconds)
                    total_cpu = sum(result.cpu.values())
                    per_line = total_cpu / max(result.sent, 1) * 1e6
                    print(
                        f"{result.name:<13} {rate:>7} {result.sent:>7} "
                        f"{result.sent - result.received:>6} {result.p50_ms:>8.2f} "
                        f"{result.p95_ms:>8.2f} {result.cpu['client']:>10.2f} "
                        f"{result.cpu['agent/tail']:>10.2f} {result.cpu['sshd']:>9.2f} "
                        f"{per_line:>11.1f}"
                    )
            idle_log = Path(tmp) / "idle.log"
            idle_log.write_text("quiet\n")
            idle = await idle_agent_cpu(sshd, idle_log, min(args.seconds, 10))
            print(f"idle agent: {idle:.2f}% of one core")
        finally:
            sshd.stop()


if __name__ == "__main__":
    asyncio.run(main())
