"""The performance suite: every benchmark, babysit beside the tools people use today, one table.

Run through ``bench/run`` (which makes the venv first). Installs the peers it
compares with (Debian's lnav and tmux, PyPI's toolong in ``bench/.peers/``),
runs each benchmark, prints one table — the work, babysit's figure, each peer's,
the ratio babysit ÷ peer and the target — and writes it with every raw figure
and the machine it ran on to ``bench/results/<date>-<host>.json``.

    bench/run [--quick] [--only follow,big-log,tui,parse,fleet,demo,sim,traps]
              [--no-install] [--out DIR]

A full run takes about 9 minutes on a 2-core machine; ``--quick`` about 5
(shorter windows, a smaller big log, fewer repeats: figures for a smoke test,
not for quoting).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

import peers as peers_mod
from screens import lnav_env

SECTIONS = ("follow", "big-log", "tui", "parse", "fleet", "demo", "sim", "traps")
PEER_COLUMNS = ("tail -F", "lnav", "toolong")


# --------------------------------------------------------------------------- table


@dataclass
class Row:
    work: str
    measure: str
    babysit: str
    peers: dict[str, str] = field(default_factory=dict)
    baseline: str = ""
    ratio: str = ""
    target: str = ""
    #: Numbers behind the cells, for the JSON.
    data: dict[str, object] = field(default_factory=dict)


def fmt(x: float | None, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if abs(x) >= 10_000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def ratio_text(babysit: float | None, peers: dict[str, float | None]) -> str:
    parts = []
    for name, value in peers.items():
        if (
            babysit is None
            or value is None
            or value == 0
            or math.isnan(value)
            or math.isnan(babysit)
        ):
            continue
        parts.append(f"{babysit / value:.2g}× {name}")
    return "; ".join(parts)


def verdict(ok: bool | None) -> str:
    return "" if ok is None else (" ✓" if ok else " ✗")


def render(rows: list[Row]) -> str:
    headers = ["Work", "Measure", "babysit", *PEER_COLUMNS, "Baseline", "babysit ÷ peer", "Target"]
    table = [headers]
    for row in rows:
        table.append(
            [
                row.work,
                row.measure,
                row.babysit,
                *(row.peers.get(c, "") for c in PEER_COLUMNS),
                row.baseline,
                row.ratio,
                row.target,
            ]
        )
    # Drop columns that are empty in every row.
    keep = [i for i in range(len(headers)) if any(r[i] for r in table[1:])]
    table = [[r[i] for i in keep] for r in table]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    lines = []
    for n, r in enumerate(table):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- 1. follow


async def follow_over_ssh(quick: bool, found: dict, raw: dict) -> list[Row]:
    import screens
    import tail_latency
    from lnav_remote import run_lnav_remote
    from tail_latency import idle_agent_cpu, run_babysit, run_ssh_tail, start_sshd

    # tail_latency counts CPU in psutil's 10 ms ticks; the suite reads schedstat (ns) so
    # that 10 lines/s over 10 s is measured too, for every follower alike.
    tail_latency.cpu_of = screens.cpu_of

    seconds = 3.0 if quick else 10.0
    rates = (10, 1000, 20000)
    lnav = found["lnav"]
    rows: list[Row] = []
    raw["follow"] = {"seconds_per_rate": seconds, "results": []}
    with tempfile.TemporaryDirectory(prefix="bench-follow-") as tmp:
        sshd = start_sshd(Path(tmp) / "sshd")
        try:
            for rate in rates:
                got: dict[str, object] = {}
                for name in ("babysit", "tail -F", "lnav"):
                    log = Path(tmp) / f"{name.replace(' ', '')}-{rate}.log"
                    log.write_text("")
                    try:
                        if name == "babysit":
                            result = await run_babysit(sshd, log, rate, seconds)
                        elif name == "tail -F":
                            result = await run_ssh_tail(sshd, log, rate, seconds)
                        elif not lnav.ok:
                            got[name] = f"not installed: {lnav.missing}"
                            continue
                        else:
                            result = await run_lnav_remote(
                                sshd,
                                log,
                                rate=rate,
                                seconds=seconds,
                                work=Path(tmp) / f"lnav-{rate}",
                                lnav=lnav.path,
                            )
                    except Exception as error:
                        got[name] = f"failed: {type(error).__name__}: {error}"[:120]
                        continue
                    got[name] = result
                    cpu = sum(result.cpu.values())
                    raw["follow"]["results"].append(
                        {
                            "follower": name,
                            "rate": rate,
                            "sent": result.sent,
                            "received": result.received,
                            "p50_ms": result.p50_ms,
                            "p95_ms": result.p95_ms,
                            "cpu_seconds": result.cpu,
                            "cpu_us_per_line": cpu / max(result.sent, 1) * 1e6,
                        }
                    )
                    progress(
                        f"  follow {rate:>6}/s {name:<8} p50 {result.p50_ms:.2f} ms, "
                        f"p95 {result.p95_ms:.2f} ms, lost {result.sent - result.received},"
                        f" CPU {cpu:.2f} s"
                    )
                rows.extend(follow_rows(rate, got))
            idle_log = Path(tmp) / "idle.log"
            idle_log.write_text("quiet\n")
            idle = await idle_agent_cpu(sshd, idle_log, 3.0 if quick else 10.0)
            raw["follow"]["idle_agent_pct"] = idle
            rows.append(
                Row(
                    "Follow over SSH, idle",
                    "agent CPU, % of a core",
                    f"{idle:.2f}",
                    {"tail -F": "—", "lnav": "—"},
                    target=f"≤ 1 %{verdict(idle <= 1)}",
                    data={"idle_agent_pct": idle},
                )
            )
        finally:
            sshd.stop()
    return rows


def follow_rows(rate: int, got: dict[str, object]) -> list[Row]:
    from tail_latency import Result

    def cell(name: str, what) -> tuple[str, float | None]:
        value = got.get(name)
        if isinstance(value, Result):
            number, text = what(value)
            return text, number
        return (str(value) if value else "—"), None

    def latency(r: Result):
        return r.p95_ms, f"{fmt(r.p50_ms, 2)} / {fmt(r.p95_ms, 2)}"

    def lost(r: Result):
        return float(r.sent - r.received), f"{r.sent - r.received:,} of {r.sent:,}"

    def per_line(r: Result):
        total = sum(r.cpu.values()) / max(r.sent, 1) * 1e6
        return total, (f"{fmt(total)} ({fmt(r.cpu['client'] / max(r.sent, 1) * 1e6)} client)")

    work = f"Follow over SSH, {rate:,} lines/s"
    rows = []
    for measure, fn in (
        ("p50 / p95 latency, ms", latency),
        ("lines lost", lost),
        ("CPU µs per line, both ends", per_line),
    ):
        cells = {n: cell(n, fn) for n in ("babysit", "tail -F", "lnav")}
        b = cells["babysit"][1]
        peer_numbers = {"tail -F": cells["tail -F"][1], "lnav": cells["lnav"][1]}
        ratio = "" if measure == "lines lost" else ratio_text(b, peer_numbers)
        target_text = ""
        if measure.startswith("p50") and rate == 1000:
            target_text = f"p95 ≤ 50 ms{verdict(None if b is None else b <= 50)}"
        elif measure == "lines lost" and rate == 20000:
            target_text = f"0{verdict(None if b is None else b == 0)}"
        elif measure.startswith("CPU"):
            t = peer_numbers["tail -F"]
            ok = None if b is None or t is None else b <= 2 * t
            target_text = f"≤ 2× ssh tail -F{verdict(ok)}"
        rows.append(
            Row(
                work,
                measure,
                cells["babysit"][0],
                {"tail -F": cells["tail -F"][0], "lnav": cells["lnav"][0], "toolong": "n/a"},
                ratio=ratio + (" (p95)" if ratio and measure.startswith("p50") else ""),
                target=target_text,
            )
        )
    rows[0].peers["toolong"] = "n/a: opens local files only"
    return rows


# --------------------------------------------------------------------------- 2. big log


def big_log(quick: bool, found: dict, raw: dict) -> list[Row]:
    from big_log import make_log, measure

    gib = 0.25 if quick else 2.0
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench-big-log-") as tmp:
        log = Path(tmp) / "sglang-serve.log"
        t0 = time.monotonic()
        make_log(log, int(gib * 2**30))
        # Write it back now, so the first viewer does not share the disk with writeback.
        os.sync()
        progress(
            f"  big log: wrote {log.stat().st_size / 2**30:.2f} GiB in "
            f"{time.monotonic() - t0:.1f} s"
        )
        config = Path(tmp) / "hosts.yaml"
        config.write_text(
            f"hosts:\n  here:\n    local: true\n    services:\n"
            f"      qwen: {{engine: sglang, log: {log}}}\n"
        )
        babysit_bin = ROOT / ".venv" / "bin" / "babysit"
        babysit = [str(babysit_bin)] if babysit_bin.exists() else [sys.executable, "-m", "tui"]
        viewers: dict[str, list[str] | str] = {
            "babysit": [*babysit, "here", "--config", str(config)]
        }
        env = lnav_env(Path(tmp) / "lnav-home")
        viewers["lnav"] = (
            ["env", *(f"{k}={v}" for k, v in env.items()), found["lnav"].path, str(log)]
            if found["lnav"].ok
            else f"not installed: {found['lnav'].missing}"
        )
        viewers["toolong"] = (
            [found["toolong"].path, str(log)]
            if found["toolong"].ok
            else f"not installed: {found['toolong'].missing}"
        )
        for name, argv in viewers.items():
            if isinstance(argv, str):
                results[name] = {"missing": argv}
                continue
            seconds, peak, note = measure(argv, "LAST-LINE-MARKER")
            results[name] = {"seconds": seconds, "peak_rss_mib": peak, "note": note}
            progress(f"  big log {name:<8} {seconds:.2f} s, {peak:.0f} MiB {note}")
    raw["big_log"] = {"gib": gib, "results": results}

    def cell(name: str, key: str, digits: int) -> tuple[str, float | None]:
        r = results[name]
        assert isinstance(r, dict)
        if "missing" in r:
            return r["missing"], None
        value = r[key]
        if isinstance(value, float) and math.isnan(value):
            return r.get("note") or "—", None
        return fmt(value, digits), value

    work = f"Big log ({gib:g} GiB), first screen in tmux"
    rows = []
    for measure_name, key, digits, target, limit in (
        ("seconds until the last line is on screen", "seconds", 2, "≤ 0.5 s", 0.5),
        ("peak RSS, MiB", "peak_rss_mib", 0, "≤ 80 MB", 80e6 / 2**20),
    ):
        cells = {n: cell(n, key, digits) for n in results}
        b = cells["babysit"][1]
        rows.append(
            Row(
                work,
                measure_name,
                cells["babysit"][0],
                {"tail -F": "n/a", "lnav": cells["lnav"][0], "toolong": cells["toolong"][0]},
                ratio=ratio_text(b, {"lnav": cells["lnav"][1], "toolong": cells["toolong"][1]}),
                target=target + verdict(None if b is None else b <= limit),
            )
        )
    return rows


# --------------------------------------------------------------------------- 3. TUI follow


def tui_follow(quick: bool, found: dict, raw: dict) -> list[Row]:
    import tui_follow as tf

    rate, seconds = 5000, (8.0 if quick else 30.0)
    results = tf.run_all(
        {
            "lnav": found["lnav"].path if found["lnav"].ok else None,
            "toolong": found["toolong"].path if found["toolong"].ok else None,
        },
        rate,
        seconds,
        log=progress,
    )
    raw["tui_follow"] = {"rate": rate, "seconds": seconds, "results": results}

    def cell(name: str, fn) -> tuple[str, float | None]:
        r = results.get(name, {})
        if "missing" in r:
            return f"not installed: {r['missing']}", None
        if "error" in r:
            return f"failed: {r['error']}"[:100], None
        return fn(r)

    def cpu(r):
        return f"{fmt(r['cpu_pct_of_core'])} (+{fmt(r['tmux_server_cpu_pct'])} tmux)", r[
            "cpu_pct_of_core"
        ]

    def lag(r):
        return f"{fmt(r['lag_seconds_p50'], 2)} / {fmt(r['lag_seconds_p95'], 2)}", r[
            "lag_seconds_p95"
        ]

    def behind(r):
        return f"{fmt(r['lag_lines_max'])}", r["lag_lines_max"]

    def catch_up(r):
        return fmt(r["catch_up_seconds"], 2), r["catch_up_seconds"]

    def rss(r):
        return fmt(r["peak_rss_mib"], 0), r["peak_rss_mib"]

    work = f"Following in the TUI, {rate:,} lines/s for {seconds:g} s"
    rows = []
    for measure_name, fn in (
        ("CPU of the viewer's processes, % of a core", cpu),
        ("lag on screen p50 / p95, s", lag),
        ("most lines behind the writer", behind),
        ("last line on screen after the writer stops, s", catch_up),
        ("peak RSS, MiB", rss),
    ):
        cells = {n: cell(n, fn) for n in ("babysit", "toolong", "lnav")}
        b = cells["babysit"][1]
        ratio = (
            ""
            if fn is catch_up
            else ratio_text(b, {"toolong": cells["toolong"][1], "lnav": cells["lnav"][1]})
        )
        rows.append(
            Row(
                work,
                measure_name,
                cells["babysit"][0],
                {"tail -F": "n/a", "lnav": cells["lnav"][0], "toolong": cells["toolong"][0]},
                ratio=ratio,
                target="none set" if fn is cpu else "",
            )
        )
    return rows


# --------------------------------------------------------------------------- 4. parse


def parse(quick: bool, raw: dict) -> list[Row]:
    # A subprocess of its own: each measurement's peak RSS is its process's ru_maxrss,
    # which a child forked from this (large) process would inherit.
    lines, repeat = (200_000, 1) if quick else (1_000_000, 3)
    data, text = run_script("parse_rate.py", ["--lines", str(lines), "--repeat", str(repeat)], 300)
    raw["parse"] = {"figures": data, "output": text[-2000:]}
    if data is None:
        return [Row("Parsing", "failed", text.strip()[-100:] or "no output")]
    results, cli, small, target = data["results"], data["cli"], data["small"], data["target"]
    rate = {k: lines / v["seconds"] for k, v in results.items()}
    cli_rate = lines / cli["seconds"]
    progress(
        f"  parse: parser {rate['parser']:,.0f} lines/s, floor {rate['floor']:,.0f}, "
        f"regex {rate['regex']:,.0f}, babysit parse {cli_rate:,.0f}"
    )
    work = f"Parsing a {lines:,}-line mixed log, one core"
    baseline = f"floor {rate['floor']:,.0f}; one regex {rate['regex']:,.0f}"
    grows = results["parser"]["rss"] >= small["rss"] * 1.2
    return [
        Row(
            work,
            "full parser (LogScanner), lines/s",
            f"{rate['parser']:,.0f}",
            baseline=baseline,
            ratio=f"{rate['parser'] / rate['floor']:.2g}× floor; "
            f"{rate['parser'] / rate['regex']:.2g}× one regex",
            target=f"≥ {target:,}{verdict(rate['parser'] >= target)}",
        ),
        Row(
            work,
            "`babysit parse FILE` end to end, lines/s",
            f"{cli_rate:,.0f}",
            ratio=f"{cli_rate / rate['floor']:.2g}× floor",
        ),
        Row(
            work,
            "parser peak RSS, MiB (on 1/10 of the lines)",
            f"{results['parser']['rss'] / 2**20:.1f} ({small['rss'] / 2**20:.1f})",
            target=f"independent of length{verdict(not grows)}",
        ),
    ]


# --------------------------------------------------------------------------- 5. and more: scripts


def run_script(name: str, args: list[str], timeout: float) -> tuple[dict | None, str]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    try:
        result = subprocess.run(
            [sys.executable, str(BENCH / name), *args, "--json", str(out)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            check=False,
        )
        text = result.stdout + result.stderr
        data = json.loads(out.read_text()) if out.stat().st_size else None
        return data, text
    except subprocess.TimeoutExpired as error:
        return None, f"timed out after {timeout:.0f} s: {error.stdout or ''}"
    finally:
        out.unlink(missing_ok=True)


def fleet(quick: bool, raw: dict) -> list[Row]:
    data, text = run_script("fleet.py", ["--refreshes", "3" if quick else "10"], 300)
    raw["fleet"] = {"figures": data, "output": text[-2000:]}
    if data is None:
        return [
            Row(
                "Fleet refresh",
                "failed",
                text.strip().splitlines()[-1][:100] if text.strip() else "no output",
            )
        ]
    progress(
        f"  fleet: refresh median {data['refresh_median_s']:.3f} s, CPU "
        f"{data['pct_of_core_at_2s']:.1f}% at 2 s"
    )
    work = f"Fleet refresh, {data['hosts']} sshd hosts × {data['per_host']} sims"
    return [
        Row(
            work,
            "full refresh of every row (verdict, metrics, GPUs), median (max), s",
            f"{data['refresh_median_s']:.2f} ({data['refresh_max_s']:.2f})",
            target=f"≤ 1 s{verdict(data['refresh_median_s'] <= 1)}",
        ),
        Row(
            work,
            "babysit CPU per refresh, % of a core at a 2 s refresh",
            f"{data['pct_of_core_at_2s']:.1f}",
            target=f"≤ 15 %{verdict(data['pct_of_core_at_2s'] <= 15)}",
        ),
        Row(
            work,
            "whole machine CPU per refresh (all hosts' probes share it), s",
            f"{data['machine_cpu_per_refresh_s']:.2f}",
        ),
        Row(work, "`babysit status`, new connections, s", f"{data['status_s']:.2f}"),
    ]


def demo(quick: bool, raw: dict) -> list[Row]:
    data, text = run_script("demo_first_screen.py", ["--seconds", "10" if quick else "60"], 240)
    raw["demo"] = {"figures": data, "output": text[-2000:]}
    if data is None:
        return [Row("`babysit demo` in tmux", "failed", text.strip()[-100:] or "no output")]
    progress(
        f"  demo: first screen {data['first_screen_s']:.2f} s, steady {data['babysit_pct']:.1f}%"
    )
    work = "`babysit demo` in tmux"
    return [
        Row(
            work,
            "first full screen, s",
            f"{data['first_screen_s']:.2f}",
            target=f"≤ 2 s{verdict(data['first_screen_s'] <= 2)}",
        ),
        Row(
            work,
            f"babysit CPU over {data['window_s']:.0f} s of steady state, % of a core",
            f"{data['babysit_pct']:.1f}",
            target=f"≤ 10 %{verdict(data['babysit_pct'] <= 10)}",
        ),
    ]


def sim(quick: bool, raw: dict) -> list[Row]:
    data, text = run_script("sim_idle.py", ["--seconds", "3" if quick else "10"], 120)
    raw["sim_idle"] = {"figures": data, "output": text[-2000:]}
    if data is None:
        return [Row("Idle simulated server", "failed", text.strip()[-100:] or "no output")]
    return [
        Row(
            "Idle simulated server (`babysit sim`)",
            "CPU, % of a core",
            f"{data['pct_of_core']:.2f}",
            target=f"≤ 2 %{verdict(data['pct_of_core'] <= 2)}",
        )
    ]


# --------------------------------------------------------------------------- 6. traps


def traps(found: dict, raw: dict) -> list[Row]:
    import traps as tr

    results = tr.run_all(
        {
            "lnav": found["lnav"].path if found["lnav"].ok else None,
            "toolong": found["toolong"].path if found["toolong"].ok else None,
        },
        log=progress,
    )
    raw["traps"] = results

    def cell(r: dict) -> str:
        if "missing" in r:
            return f"not installed: {r['missing']}"
        if "error" in r:
            return f"failed: {r['error']}"[:100]
        told = "reported" if r["reported"] else "silent"
        return f"{r['lost']} lost, {r['duplicated']} dup, {told}"

    names = {
        "rotate": "rename + create (10 lines to the old file first)",
        "truncate": "truncate, then regrow past the old size",
        "rm": "rm while the writer keeps writing",
    }
    rows = []
    for trap, by in results.items():
        cli, tui = by.get("babysit", {}), by.get("babysit-tui", {})
        ok = all(
            "lost" in r and r["lost"] == 0 and r["duplicated"] == 0 and r["reported"]
            for r in (cli, tui)
        )
        rows.append(
            Row(
                f"Trap: {names[trap]}",
                "lines lost / shown twice / switch reported",
                f"tail: {cell(cli)}; TUI: {cell(tui)}",
                {
                    "tail -F": cell(by.get("tail-F", {})),
                    "lnav": cell(by.get("lnav", {})),
                    "toolong": cell(by.get("toolong", {})),
                },
                target=f"0 lost, 0 dup, reported{verdict(ok)}",
            )
        )
    return rows


# --------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="shorter windows and smaller files: a smoke test (~5 min)",
    )
    parser.add_argument("--only", help="comma-separated sections: " + ",".join(SECTIONS))
    parser.add_argument(
        "--no-install", action="store_true", help="do not apt-get/pip install missing peers"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=BENCH / "results",
        help="folder for the JSON result (default bench/results)",
    )
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    unknown = only - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")

    started = time.monotonic()
    when = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    progress("bench/run: checking peers (installing what is missing)")
    found, install_log = peers_mod.ensure(install=not args.no_install)
    for step in install_log:
        progress(f"  {step}")
    info = peers_mod.machine(found)
    progress(f"machine: {peers_mod.describe(info)}")
    if not found["tmux"].ok or not found["openssh-server"].ok:
        progress("bench/run: tmux and OpenSSH's sshd are needed to run the suite")
        return 2

    rows: list[Row] = []
    raw: dict[str, object] = {}
    timings: dict[str, float] = {}
    failures: dict[str, str] = {}
    steps = (
        ("follow", lambda: asyncio.run(follow_over_ssh(args.quick, found, raw))),
        ("big-log", lambda: big_log(args.quick, found, raw)),
        ("tui", lambda: tui_follow(args.quick, found, raw)),
        ("parse", lambda: parse(args.quick, raw)),
        ("fleet", lambda: fleet(args.quick, raw)),
        ("demo", lambda: demo(args.quick, raw)),
        ("sim", lambda: sim(args.quick, raw)),
        ("traps", lambda: traps(found, raw)),
    )
    for name, step in steps:
        if name not in only:
            continue
        progress(f"bench/run: {name} ({time.monotonic() - started:.0f} s in)")
        t0 = time.monotonic()
        try:
            rows.extend(step())
        except Exception as error:
            failures[name] = "".join(traceback.format_exception(error))[-2000:]
            rows.append(Row(name, "failed", f"{type(error).__name__}: {error}"[:120]))
            progress(failures[name])
        timings[name] = round(time.monotonic() - t0, 1)

    elapsed = time.monotonic() - started
    load_after = os.getloadavg()
    info["load_average"] = {"start": load_before, "end": load_after}
    table = render(rows)
    mode = "quick" if args.quick else "full"
    heading = (
        f"babysit performance suite ({mode} run), {when:%Y-%m-%d %H:%M} UTC, "
        f"{elapsed / 60:.1f} min; load average {load_before[0]:.2f} at the start, "
        f"{load_after[0]:.2f} at the end\n"
        f"machine: {peers_mod.describe(info)}"
    )
    notes = [
        "Ratios are babysit ÷ peer (below 1 is better for times, CPU and memory).",
        "Follow over SSH: a loopback sshd on this machine, so 'both ends' share its "
        "cores; lnav follows through its own tailer copied to the host and polls it about "
        "once a second, and its client CPU includes its TUI; babysit's client CPU is the "
        "bench process its follower runs in, so it also carries the bench's own per-line "
        "bookkeeping, which the peers' figures do not.",
        "Traps: babysit via `babysit tail -f --json` (local transport) and its TUI; "
        "TUIs read via capture-pane, lnav also via :write-view-to. Whether a follower that "
        "watches the size (tail -F, toolong) catches truncate-and-regrow is a race: that "
        "cell can differ from run to run.",
    ]
    print(heading)
    print()
    print(table)
    print()
    for note in notes:
        print(f"- {note}")

    args.out.mkdir(parents=True, exist_ok=True)
    host = "".join(c if c.isalnum() or c in "-_." else "-" for c in platform.node()) or "host"
    suffix = "-quick" if args.quick else ""
    if only != set(SECTIONS):
        suffix += "-only-" + "-".join(s for s in SECTIONS if s in only)
    target = args.out / f"{when:%Y-%m-%d}-{host}{suffix}.json"
    document = {
        "schema": 1,
        "date": when.isoformat(timespec="seconds"),
        "mode": mode,
        "elapsed_seconds": round(elapsed, 1),
        "section_seconds": timings,
        "machine": info,
        "install_log": install_log,
        "rows": [
            {
                "work": r.work,
                "measure": r.measure,
                "babysit": r.babysit,
                "peers": r.peers,
                "baseline": r.baseline,
                "ratio": r.ratio,
                "target": r.target,
            }
            for r in rows
        ],
        "table": heading + "\n\n" + table + "\n\n" + "\n".join(f"- {n}" for n in notes),
        "raw": raw,
        "failures": failures,
    }
    scratch = target.with_suffix(".json.tmp")
    scratch.write_text(json.dumps(document, indent=2, default=str) + "\n")
    os.replace(scratch, target)
    print(f"\nwritten: {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
