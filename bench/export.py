"""Export over 64 services on 16 sshd hosts: the exporter's CPU per scrape and per service.

Starts the fleet bench's fleet (bench/fleet_setup.py: 16 OpenSSH sshd hosts on
loopback, 4 `babysit sim` servers on each, the nvidia-smi stand-in on each host's
PATH), then the real exporter as its own process,

    python -m tui export --config hosts.yaml --listen 127.0.0.1:0 --every 2

and waits for a scrape that gives every service a verdict. Then, reading the
exporter's process with psutil (user + system CPU, its children's included):

1. probing alone: its CPU over a window with no scrape before the scrapes and one
   after them (their mean is the probing rate), as % of one core and per service
   per round trip (each host is asked once every ``--every`` s plus the round
   trip's own duration, ``babysit_probe_duration_seconds``);
2. steady scrapes: ``--scrapes`` GETs of /metrics, one started every ``--gap`` s,
   each sent with Prometheus 2.42's Accept and Accept-Encoding headers (so the
   exporter renders OpenMetrics and gzips it, as for Prometheus): each one's wall
   duration (median, p95, max), and the CPU over their window minus the probing
   rate × the window, ÷ scrapes → CPU per scrape, ÷ services → per service;
3. the same scrapes back to back (the next sent when the last is read): the same
   figures, with less of probing's noise in them.

Also the exposition's size (text format, and gzipped OpenMetrics as a scrape gets it)
and its sample count, and how much of a scrape's CPU is rendering OpenMetrics and
gzip (timed in this process on the same samples).

    .venv/bin/python bench/export.py [--hosts 16] [--per-host 4] [--every 2]
        [--window 20] [--scrapes 40] [--gap 1] [--quick] [--json FILE]

The scraping client is this process; its own CPU is not counted. No target is set
for these figures; prints them, asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psutil
from fleet_setup import ROOT, started_fleet
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.parser import text_string_to_metric_families

from tui.export.exporter import Frozen

#: What Prometheus 2.42 sends with each scrape (scrape.scrapeAcceptHeader, and gzip).
PROMETHEUS_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
}
#: The exporter's line on stderr that names the address it serves.
SERVING = re.compile(r"serving (http://\S+/metrics)")
#: Seconds past its time after which a steady scrape counts as started late.
LATE = 0.05


@dataclass
class Scrape:
    seconds: float
    body: bytes
    encoding: str


def get(url: str, headers: dict[str, str] | None = None) -> Scrape:
    """One GET of ``url``: its wall duration and its body as sent."""
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - loopback http
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback http
        body = response.read()
        encoding = response.headers.get("Content-Encoding", "")
    return Scrape(time.perf_counter() - t0, body, encoding)


def cpu_seconds(process: psutil.Process) -> tuple[float, int]:
    """User + system CPU seconds of ``process`` and of its children (those running and
    those it has reaped); and how many children run now."""
    with process.oneshot():
        times = process.cpu_times()
        children = process.children(recursive=True)
    total = times.user + times.system + times.children_user + times.children_system
    for child in children:
        with contextlib.suppress(psutil.Error):
            theirs = child.cpu_times()
            total += theirs.user + theirs.system
    return total, len(children)


def exposition(text: str) -> dict[str, object]:
    """What one text-format scrape says: its sample counts (all, babysit's, the GPUs'),
    each service's verdict and each host's round trip's duration."""
    samples = babysit = gpu = 0
    verdicts: dict[tuple[str, str], str] = {}
    took: list[float] = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples += 1
            babysit += sample.name.startswith("babysit_")
            gpu += sample.name.startswith("babysit_gpu_metric")
            if sample.name == "babysit_verdict" and sample.value == 1:
                verdicts[(sample.labels["host"], sample.labels["service"])] = sample.labels[
                    "verdict"
                ]
            elif sample.name == "babysit_probe_duration_seconds":
                took.append(sample.value)
    return {
        "samples": samples,
        "babysit_samples": babysit,
        "gpu_samples": gpu,
        "verdicts": verdicts,
        "took": took,
    }


def exporter_said(stderr: Path) -> str:
    return stderr.read_text(errors="replace") if stderr.exists() else ""


def wait_serving(proc: subprocess.Popen[bytes], stderr: Path, timeout: float) -> str:
    """The /metrics URL from the exporter's ``serving`` line."""
    deadline = time.monotonic() + timeout
    while True:
        found = SERVING.search(exporter_said(stderr))
        if found:
            return found.group(1)
        if proc.poll() is not None or time.monotonic() > deadline:
            state = f"exited with {proc.returncode}" if proc.poll() is not None else "silent"
            raise SystemExit(f"babysit export {state}; it said:\n{exporter_said(stderr)[-1500:]}")
        time.sleep(0.05)


def wait_verdicts(
    url: str, proc: subprocess.Popen[bytes], stderr: Path, services: int, timeout: float
) -> dict[str, object]:
    """A scrape with a verdict for each of ``services``; then, within the rest of
    ``timeout``, one where all are live (the last scrape either way)."""
    deadline = time.monotonic() + timeout
    seen: dict[str, object] = {"verdicts": {}}
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(
                f"babysit export exited with {proc.returncode}; it said:\n"
                f"{exporter_said(stderr)[-1500:]}"
            )
        with contextlib.suppress(urllib.error.URLError, OSError):
            seen = exposition(get(url).body.decode())
            verdicts = seen["verdicts"]
            assert isinstance(verdicts, dict)
            if len(verdicts) >= services and all(v == "live" for v in verdicts.values()):
                return seen
        time.sleep(0.5)
    verdicts = seen["verdicts"]
    assert isinstance(verdicts, dict)
    if len(verdicts) < services:
        raise SystemExit(
            f"after {timeout:.0f} s the exporter gives {len(verdicts)} of {services} "
            f"services a verdict; it said:\n{exporter_said(stderr)[-1500:]}"
        )
    return seen


@dataclass
class Run:
    """One run of scrapes: each scrape, the window's wall seconds, the exporter's CPU
    seconds over it, the most children it had at either end, and how many scrapes
    started more than :data:`LATE` s after their time (the last one still being read)."""

    scrapes: list[Scrape]
    window: float
    cpu: float
    children: int
    late: int


def scrape_run(url: str, process: psutil.Process, count: int, gap: float) -> Run:
    """``count`` Prometheus-like scrapes, one started every ``gap`` s (0: back to back)."""
    cpu0, kids0 = cpu_seconds(process)
    t0 = time.monotonic()
    done = []
    late = 0
    for n in range(count):
        if gap > 0:
            due = t0 + n * gap
            late += time.monotonic() > due + LATE
            time.sleep(max(0.0, due - time.monotonic()))
        done.append(get(url, PROMETHEUS_HEADERS))
    if gap > 0:
        # The window is whole gaps, so the probing subtracted is the probing it held.
        time.sleep(max(0.0, t0 + count * gap - time.monotonic()))
    window = time.monotonic() - t0
    cpu1, kids1 = cpu_seconds(process)
    return Run(done, window, cpu1 - cpu0, max(kids0, kids1), late)


def probing(process: psutil.Process, window: float) -> Run:
    """The exporter's CPU over ``window`` seconds with no scrape."""
    cpu0, kids0 = cpu_seconds(process)
    t0 = time.monotonic()
    time.sleep(window)
    took = time.monotonic() - t0
    cpu1, kids1 = cpu_seconds(process)
    return Run([], took, cpu1 - cpu0, max(kids0, kids1), 0)


def render_cost(text: str, repeats: int = 5) -> tuple[float, float]:
    """CPU seconds this process takes to render the families of ``text`` as OpenMetrics,
    and to gzip that (medians of ``repeats``): the share of a scrape the exporter's HTTP
    thread spends after the series are made, on the same samples."""
    made = list(text_string_to_metric_families(text))
    render, pack = [], []
    for _ in range(repeats):
        t0 = time.process_time()
        body = openmetrics_latest(Frozen(made))
        t1 = time.process_time()
        gzip.compress(body)
        render.append(t1 - t0)
        pack.append(time.process_time() - t1)
    return statistics.median(render), statistics.median(pack)


def p95(values: list[float]) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument(
        "--every", type=float, default=2.0, help="the exporter's --every: seconds between asks"
    )
    parser.add_argument(
        "--window", type=float, help="seconds of probing alone, no scrape (default 20; quick 6)"
    )
    parser.add_argument("--scrapes", type=int, help="scrapes in each run (default 40; quick 15)")
    parser.add_argument(
        "--gap", type=float, default=1.0, help="seconds between two steady scrapes' starts"
    )
    parser.add_argument("--quick", action="store_true", help="shorter windows, fewer scrapes")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args()
    window_s = args.window if args.window is not None else (6.0 if args.quick else 20.0)
    count = args.scrapes if args.scrapes is not None else (15 if args.quick else 40)
    if count < 1 or window_s <= 0 or args.gap <= 0:
        parser.error("--scrapes, --window and --gap must be above 0")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with started_fleet(root, args.hosts, args.per_host) as fleet:
            config = root / "hosts.yaml"
            config.write_text(fleet.hosts_yaml)
            stderr = root / "export.stderr"
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            with stderr.open("wb") as err:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tui",
                        "export",
                        "--config",
                        str(config),
                        "--listen",
                        "127.0.0.1:0",
                        "--every",
                        f"{args.every:g}",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    cwd=ROOT,
                    env=env,
                    start_new_session=True,
                )
            try:
                figures = measure(
                    args,
                    proc=proc,
                    stderr=stderr,
                    services=fleet.services,
                    window_s=window_s,
                    count=count,
                )
            finally:
                exit_code = stop(proc)
    figures["exit_code_on_sigterm"] = exit_code
    figures["load_average"] = {"start": load_before, "end": os.getloadavg()}
    print(f"exporter's exit status on SIGTERM: {exit_code}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures))


def stop(proc: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM to the exporter (by its pid), then SIGKILL if it is still there after 15 s;
    its exit status (None when it had to be killed)."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return None


def measure(
    args: argparse.Namespace,
    *,
    proc: subprocess.Popen[bytes],
    stderr: Path,
    services: int,
    window_s: float,
    count: int,
) -> dict[str, object]:
    process = psutil.Process(proc.pid)
    t_start = time.monotonic()
    url = wait_serving(proc, stderr, 60)
    ready = wait_verdicts(url, proc, stderr, services, 180)
    ready_s = time.monotonic() - t_start
    verdicts = ready["verdicts"]
    assert isinstance(verdicts, dict)
    counts = Counter(verdicts.values())

    # 1. Probing alone, before the scrapes (and again after them, below).
    before = probing(process, window_s)
    text = get(url).body.decode()
    sizes = exposition(text)
    took = sizes["took"]
    assert isinstance(took, list)
    round_trip = statistics.median(took) if took else 0.0

    # 2. and 3. Scrapes, steady then back to back.
    runs = {
        name: scrape_run(url, process, count, gap)
        for name, gap in (("steady", args.gap), ("back_to_back", 0.0))
    }
    after = probing(process, window_s)
    # Probing's rate is taken as the mean of the two windows around the scrapes.
    probe_rate = (before.cpu + after.cpu) / (before.window + after.window)
    period = args.every + round_trip
    per_service_round_trip = probe_rate * period / services
    most_kids = max(before.children, after.children, *(r.children for r in runs.values()))
    figures_of = {}
    for name, run in runs.items():
        times = [s.seconds for s in run.scrapes]
        per_scrape = (run.cpu - probe_rate * run.window) / count
        figures_of[name] = {
            "gap_s": args.gap if name == "steady" else 0.0,
            "scrapes": count,
            "late": run.late,
            "window_s": run.window,
            "cpu_s": run.cpu,
            "scrape_s": times,
            "median_s": statistics.median(times),
            "p95_s": p95(times),
            "max_s": max(times),
            "cpu_per_scrape_s": per_scrape,
            "cpu_per_scrape_per_service_s": per_scrape / services,
            "encoding": run.scrapes[-1].encoding,
            "bytes": len(run.scrapes[-1].body),
        }
    render_s, gzip_s = render_cost(text)
    last = get(url, PROMETHEUS_HEADERS)
    openmetrics = gzip.decompress(last.body) if last.encoding == "gzip" else last.body
    text_bytes = len(get(url).body)
    rss = process.memory_info().rss

    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(
        f"{args.hosts} hosts × {args.per_host} services = {services} services "
        f"({', '.join(f'{n} {v}' for v, n in counts.most_common())}); nvidia-smi stand-in "
        f"on each host: yes; babysit export --every {args.every:g}; first scrape with every "
        f"verdict {ready_s:.1f} s after the start"
    )
    print(
        f"exposition: {sizes['samples']} samples ({sizes['babysit_samples']} babysit_*, of "
        f"which {sizes['gpu_samples']} babysit_gpu_metric*, each host's GPUs once), "
        f"{text_bytes:,} bytes as text, {len(openmetrics):,} as OpenMetrics, "
        f"{len(last.body):,} gzipped ({last.encoding or 'not compressed'}) as a scrape gets it"
    )
    print(
        f"probing alone, {before.window:.0f} s before the scrapes and {after.window:.0f} s "
        f"after: {before.cpu / before.window * 100:.1f}% and "
        f"{after.cpu / after.window * 100:.1f}% of one core, {probe_rate * 100:.1f}% together; "
        f"a round trip {round_trip:.2f} s (median), so one every {period:.2f} s per host → "
        f"{per_service_round_trip * 1000:.2f} ms CPU per service per round trip"
    )
    for name, figures in figures_of.items():
        how = (
            f"one started every {figures['gap_s']:g} s ({figures['late']} started late: "
            "the one before was still being read)"
            if name == "steady"
            else "back to back (the next when the last is read)"
        )
        print(
            f"{figures['scrapes']} scrapes {how}, over {figures['window_s']:.1f} s: "
            f"duration median {figures['median_s'] * 1000:.1f} ms, p95 "
            f"{figures['p95_s'] * 1000:.1f} ms, max {figures['max_s'] * 1000:.1f} ms; "
            f"exporter CPU {figures['cpu_s']:.2f} s, minus probing "
            f"{probe_rate * figures['window_s']:.2f} s → "
            f"{figures['cpu_per_scrape_s'] * 1000:.1f} ms per scrape, "
            f"{figures['cpu_per_scrape_per_service_s'] * 1e6:.0f} µs per service"
        )
    print(
        f"of a scrape's CPU, rendering these samples as OpenMetrics takes {render_s * 1000:.1f} "
        f"ms and gzip {gzip_s * 1000:.1f} ms (timed in this process on the same samples); "
        "the rest is making the series on the exporter's event loop and the HTTP exchange"
    )
    print(
        f"exporter: {rss / 2**20:.0f} MiB resident; children seen: {most_kids} "
        "(its SSH links are in-process)"
    )
    return {
        "hosts": args.hosts,
        "per_host": args.per_host,
        "services": services,
        "verdicts": dict(counts),
        "every_s": args.every,
        "ready_s": ready_s,
        "samples": sizes["samples"],
        "babysit_samples": sizes["babysit_samples"],
        "gpu_samples": sizes["gpu_samples"],
        "text_bytes": text_bytes,
        "openmetrics_bytes": len(openmetrics),
        "scrape_bytes": len(last.body),
        "scrape_encoding": last.encoding,
        "probing_window_s": [before.window, after.window],
        "probing_cpu_s": [before.cpu, after.cpu],
        "probing_pct_of_core": probe_rate * 100,
        "round_trip_s": round_trip,
        "cpu_per_service_round_trip_s": per_service_round_trip,
        "steady": figures_of["steady"],
        "back_to_back": figures_of["back_to_back"],
        "render_openmetrics_cpu_s": render_s,
        "gzip_cpu_s": gzip_s,
        "rss_bytes": rss,
        "children": most_kids,
    }


if __name__ == "__main__":
    main()
