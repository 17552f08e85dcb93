"""The suite's scripted sections: the fleet, the exporter, the demo, the sim, the agent payloads,
the traps."""

from __future__ import annotations

from suite_table import Row, fmt, progress, run_script, verdict

# --------------------------------------------------------------------------- 5. and more: scripts


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
    services = data["hosts"] * data["per_host"]
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
            f"{data['pct_of_core_at_2s']:.1f} "
            f"({data['pct_of_core_at_2s'] / services:.3f} per service)",
            target=f"≤ 0.05 % per service{verdict(data['pct_of_core_at_2s'] <= 0.05 * services)}",
        ),
        Row(
            work,
            "whole machine CPU per refresh (all hosts' probes share it), s",
            f"{data['machine_cpu_per_refresh_s']:.2f}",
        ),
        Row(work, "`babysit status`, new connections, s", f"{data['status_s']:.2f}"),
    ]


def export(quick: bool, raw: dict) -> list[Row]:
    """`babysit export` over the fleet bench's fleet (see bench/export.py); no target is set."""
    data, text = run_script("export.py", ["--quick"] if quick else [], 360)
    raw["export"] = {"figures": data, "output": text[-2000:]}
    if data is None:
        return [
            Row(
                "`babysit export`",
                "failed",
                text.strip().splitlines()[-1][:100] if text.strip() else "no output",
            )
        ]
    steady, burst = data["steady"], data["back_to_back"]
    progress(
        f"  export: scrape median {steady['median_s'] * 1000:.1f} ms, CPU per scrape "
        f"{steady['cpu_per_scrape_s'] * 1000:.1f} ms, probing {data['probing_pct_of_core']:.1f}%"
    )
    work = (
        f"`babysit export`, {data['hosts']} sshd hosts × {data['per_host']} sims, "
        f"--every {data['every_s']:g}"
    )

    def ms(seconds: float) -> str:
        return fmt(seconds * 1000)

    return [
        Row(
            work,
            f"scrape of /metrics as Prometheus asks (gzipped OpenMetrics), one every "
            f"{steady['gap_s']:g} s: median / p95 (max), ms",
            f"{ms(steady['median_s'])} / {ms(steady['p95_s'])} ({ms(steady['max_s'])})"
            + (f"; {steady['late']} of {steady['scrapes']} late" if steady["late"] else ""),
        ),
        Row(
            work,
            "exporter CPU per scrape less probing's, one every "
            f"{steady['gap_s']:g} s / back to back: ms (µs per service)",
            f"{ms(steady['cpu_per_scrape_s'])} / {ms(burst['cpu_per_scrape_s'])} "
            f"({fmt(steady['cpu_per_scrape_per_service_s'] * 1e6)} / "
            f"{fmt(burst['cpu_per_scrape_per_service_s'] * 1e6)})",
        ),
        Row(
            work,
            "of which rendering OpenMetrics / gzip (same samples, timed apart), ms",
            f"{ms(data['render_openmetrics_cpu_s'])} / {ms(data['gzip_cpu_s'])}",
        ),
        Row(
            work,
            "exporter CPU probing, no scrape: % of a core (ms per service per round trip)",
            f"{fmt(data['probing_pct_of_core'])} "
            f"({fmt(data['cpu_per_service_round_trip_s'] * 1000, 2)})",
        ),
        Row(
            work,
            "exposition: samples (of GPUs, once per host); KiB as text / gzipped",
            f"{data['samples']:,} ({data['gpu_samples']:,}); {fmt(data['text_bytes'] / 1024)} / "
            f"{fmt(data['scrape_bytes'] / 1024)}",
        ),
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


def cold(quick: bool, raw: dict) -> list[Row]:
    """Cold starts and the idle host screen (see bench/cold_start.py)."""
    args = ["--repeat", "3" if quick else "7", "--idle", "15" if quick else "60"]
    data, text = run_script("cold_start.py", args, 300)
    raw["cold"] = {"figures": data, "output": text[-2000:]}
    if data is None:
        return [Row("Cold start", "failed", text.strip()[-100:] or "no output")]
    status, ssh, helps = data["status_seconds"], data["ssh_true_seconds"], data["help_seconds"]
    progress(f"  cold: --help {helps:.3f} s, status {status:.3f} s, ssh true {ssh:.3f} s")
    rows = [
        Row(
            "`babysit --help`, a new process",
            "wall time, median, s",
            f"{helps:.3f}",
            target=f"≤ 0.15 s{verdict(helps <= 0.15)}",
        ),
        Row(
            "`babysit status HOST` over SSH, one host, one live sim, cold",
            "wall time, median, s",
            f"{status:.2f}",
            baseline=f"`ssh HOST true` {ssh:.2f}",
            ratio=f"{status / ssh:.2g}× ssh HOST true",
            target=f"≤ 2× ssh HOST true{verdict(status <= 2 * ssh)}",
        ),
    ]
    idle = data["idle"]
    if "error" in idle:
        rows.append(Row("Host screen, one live service, idle log", "failed", idle["error"][:100]))
        return rows
    mine = idle["babysit_pct"] + idle["agents_pct"]
    rows.append(
        Row(
            f"Host screen, one live service, idle log, {idle['seconds']:.0f} s",
            "CPU of babysit and its agents, % of a core",
            f"{mine:.2f} ({idle['babysit_pct']:.2f} + {idle['agents_pct']:.2f} agents; "
            f"+{idle['sshd_pct']:.2f} sshd)",
            target=f"≤ 2 %{verdict(mine <= 2)}",
        )
    )
    return rows


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


def agent_payload(raw: dict) -> list[Row]:
    """Bytes on the channel for each agent start (see bench/agent_payload.py)."""
    import agent_payload as ap

    result = ap.measure(None)
    raw["agent_payload"] = result
    before = result["before"]
    old = before["compressed_bytes"] if before else None
    sent = {row["mode"]: row["compressed_bytes"] for row in result["modes"]}
    return [
        Row(
            "Agent start",
            f"{what}: compressed script sent, bytes",
            f"{sent[mode]:,}",
            baseline="" if old is None else f"{old:,} (one file)",
            ratio="" if old is None else f"{sent[mode] / old:.2f}",
            data={"mode": mode, "bytes": sent[mode], "one_file_bytes": old},
        )
        for mode, what in (("follow", "per follower start"), ("serve-probes", "per probe agent"))
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
