"""The performance suite: every benchmark, babysit beside the tools people use today, one table.

Run through ``bench/run`` (which makes the venv first). Installs the peers it
compares with (Debian's lnav and tmux, PyPI's toolong in ``bench/.peers/``),
runs each benchmark, prints one table — the work, babysit's figure, each peer's,
the ratio babysit ÷ peer and the target — and writes it with every raw figure
and the machine it ran on to ``bench/results/<date>-<host>.json``.

    bench/run [--quick]
              [--only follow,big-log,tui,parse,fleet,export,demo,cold,sim,agent,traps,serving]
              [--no-install] [--out DIR]

A full run takes about 11 minutes on a 2-core machine; ``--quick`` about 6
(shorter windows, a smaller big log, fewer repeats: figures for a smoke test,
not for quoting).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import peers as peers_mod
from suite_local import big_log, follow_over_ssh, parse, tui_follow
from suite_scripts import agent_payload, cold, demo, export, fleet, sim, traps
from suite_serving import serving
from suite_table import BENCH, ROOT, Row, progress, render

SECTIONS = (
    "follow",
    "big-log",
    "tui",
    "parse",
    "fleet",
    "export",
    "demo",
    "cold",
    "sim",
    "agent",
    "traps",
    "serving",
)


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
        ("export", lambda: export(args.quick, raw)),
        ("demo", lambda: demo(args.quick, raw)),
        ("cold", lambda: cold(args.quick, raw)),
        ("sim", lambda: sim(args.quick, raw)),
        ("agent", lambda: agent_payload(raw)),
        ("traps", lambda: traps(found, raw)),
        ("serving", lambda: serving(args.quick, raw)),
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
        "once a second, and its client CPU includes its TUI; babysit's client is "
        "`babysit tail -f`, a process of its own, as the ssh client is tail -F's.",
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
