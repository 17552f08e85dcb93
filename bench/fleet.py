"""Fleet refresh: 16 SSH hosts × 4 simulated servers each, every service's verdict at once.

Starts 16 OpenSSH sshd instances on loopback ports (each is one "host" with its
own connection), and 4 `babysit sim` servers per host. Then times full refreshes
of all 64 rows the way the fleet view makes them — one report round trip per
host (verdict, metrics from the log's tail, GPUs), all hosts at once, each
answered by that host's long-lived probe agent — and babysit's CPU per refresh.
The first refresh, which starts the agents, is timed on its own.

    .venv/bin/python bench/fleet.py [--hosts 16] [--per-host 4] [--refreshes 10] [--json FILE]

Each host has the nvidia-smi stand-in on its PATH (``--no-nvidia-smi`` leaves it
off), so every refresh reads GPUs as on a real fleet; here all sixteen hosts'
nvidia-smi runs share this one machine. Prints figures; asserts nothing.
Targets: full refresh ≤ 1 s; ≤ 15 % of one core at a 2 s refresh.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil
from fleet_setup import started_fleet

from tui.commands.status import gather_reports, select
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--refreshes", type=int, default=10)
    parser.add_argument(
        "--interval", type=float, default=2.0, help="seconds between refreshes, as in the view"
    )
    parser.add_argument(
        "--no-nvidia-smi",
        dest="nvidia_smi",
        action="store_false",
        help="leave the nvidia-smi stand-in off the hosts (each refresh then skips GPUs)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with started_fleet(root, args.hosts, args.per_host, nvidia_smi=args.nvidia_smi) as fleet:
            config = parse_config(fleet.hosts_yaml)
            selection = select(config, [])
            # The fleet view's own path: one session per service, one probe loop per host.
            sessions = Sessions(interval=args.interval)
            watches = {host.name: sessions.watch(host) for host, _ in selection}
            # Connect first: a refresh is measured on established connections.
            await asyncio.gather(
                *(sessions.transport(host).run(["true"], timeout=30) for host, _ in selection)
            )

            async def refresh() -> list[list[Verdict]]:
                await asyncio.gather(
                    *(watches[host.name].refresh(services) for host, services in selection)
                )
                now = time.time()
                return [
                    [sessions.session(host, s).report(now).verdict for s in services]
                    for host, services in selection
                ]

            t0 = time.monotonic()
            await refresh()
            first_s = time.monotonic() - t0
            times, cpus, machine_cpu = [], [], []
            verdicts: list[Verdict] = []
            for _ in range(args.refreshes):
                await asyncio.sleep(args.interval)
                cpu0, t0 = time.process_time(), time.monotonic()
                all0 = psutil.cpu_times()
                results = await refresh()
                times.append(time.monotonic() - t0)
                cpus.append(time.process_time() - cpu0)
                all1 = psutil.cpu_times()
                machine_cpu.append((all1.user + all1.system) - (all0.user + all0.system))
                verdicts = [v for group in results for v in group]
            await sessions.close()
            live = sum(v is Verdict.LIVE for v in verdicts)
            print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
            print(
                f"{args.hosts} hosts × {args.per_host} services = {len(verdicts)} rows "
                f"({live} live); nvidia-smi stand-in on each host: "
                f"{'yes' if args.nvidia_smi else 'no'}"
            )
            print(f"first refresh (starts each host's probe agent): {first_s:.3f} s")
            print("each refresh, s: " + " ".join(f"{t:.2f}" for t in times))
            print(
                f"full refresh: median {statistics.median(times):.3f} s, "
                f"max {max(times):.3f} s (target ≤ 1 s)"
            )
            per = statistics.median(cpus)
            print(
                f"babysit CPU per refresh: {per * 1000:.0f} ms → {per / 2 * 100:.1f}% of one "
                "core at a 2 s refresh (target ≤ 15%)"
            )
            spent = statistics.median(machine_cpu)
            print(
                f"whole machine per refresh: {spent:.2f} CPU-s — the {args.hosts} hosts' probes "
                f"(/proc scan, log tails, nvidia-smi) share this machine's {os.cpu_count()} "
                f"cores here; on a real fleet each host spends its share "
                f"(~{spent / args.hosts * 1000:.0f} ms) on its own CPU"
            )
            # The same through the CLI's code path, for completeness.
            t0 = time.monotonic()
            await gather_reports(selection)
            status_s = time.monotonic() - t0
            print(f"babysit status (new connections each time): {status_s:.2f} s")
            if args.json:
                figures = {
                    "hosts": args.hosts,
                    "per_host": args.per_host,
                    "rows": len(verdicts),
                    "live": live,
                    "nvidia_smi": args.nvidia_smi,
                    "refreshes": args.refreshes,
                    "first_refresh_s": first_s,
                    "refresh_s": times,
                    "refresh_median_s": statistics.median(times),
                    "refresh_max_s": max(times),
                    "cpu_per_refresh_s": per,
                    "pct_of_core_at_2s": per / 2 * 100,
                    "machine_cpu_per_refresh_s": spent,
                    "status_s": status_s,
                }
                Path(args.json).write_text(json.dumps(figures))  # noqa: ASYNC240 - timing is over


if __name__ == "__main__":
    asyncio.run(main())
