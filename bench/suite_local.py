"""The suite's local sections: following over SSH, a big log, the TUI following, parsing."""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from pathlib import Path

from screens import lnav_env
from suite_table import ROOT, Row, fmt, progress, ratio_text, run_script, verdict

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
        target = ""
        if fn is cpu:
            lnav_cpu = cells["lnav"][1]
            ok = None if b is None or lnav_cpu is None else b <= lnav_cpu
            target = f"≤ lnav's{verdict(ok)}"
        elif fn is lag:
            target = f"p95 ≤ 0.1 s{verdict(None if b is None else b <= 0.1)}"
        rows.append(
            Row(
                work,
                measure_name,
                cells["babysit"][0],
                {"tail -F": "n/a", "lnav": cells["lnav"][0], "toolong": cells["toolong"][0]},
                ratio=ratio,
                target=target,
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
    results, cli, small = data["results"], data["cli"], data["small"]
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
            target=f"≥ 0.5× one regex{verdict(rate['parser'] >= 0.5 * rate['regex'])}",
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
