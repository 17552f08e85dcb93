"""What a user pays before babysit answers, and while it only watches.

* ``babysit --help`` from a new process: wall time (median of --repeat);
* ``babysit status HOST`` over SSH, one host with one live sim, from a new process
  and a new connection, beside ``ssh HOST true`` to the same sshd with the same key
  (OpenSSH's own client, a new connection each time): wall time, median of --repeat;
* the host screen (``babysit HOST`` in tmux) of that one live service while its log
  stays quiet, for --idle seconds: CPU of babysit's process tree, of its agents on
  the host and of the sshd sessions serving them, % of a core.

Both cold figures run with the package's bytecode compiled (``compileall``), as an
installed package has it; a machine that sets PYTHONDONTWRITEBYTECODE would
otherwise compile every module on every start. A figure, not a test.

    .venv/bin/python bench/cold_start.py [--repeat N] [--idle S] [--json FILE]
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import psutil
from fleet_setup import started_fleet
from screens import Tmux, cpu_of, tree, tree_cpu
from support.sshd import Sshd
from tail_latency import ssh_argv

BABYSIT = [sys.executable, "-m", "tui"]


def wall(argv: list[str], repeat: int, **kwargs: object) -> list[float]:
    """Wall seconds of each of ``repeat`` runs of ``argv`` (after one unmeasured run)."""
    times = []
    for n in range(repeat + 1):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, cwd=ROOT, check=False, **kwargs)  # type: ignore[call-overload]
        if done.returncode != 0:  # status: a service that is not LIVE would time another path
            words = (done.stdout + done.stderr).decode(errors="replace").strip()
            raise SystemExit(f"{argv[-3:]} exited {done.returncode}: {words[-300:]}")
        if n:
            times.append(time.perf_counter() - started)
    return times


def sessions_of(sshds: list[Sshd]) -> list[psutil.Process]:
    found = []
    for sshd in sshds:
        for child in sshd.session_processes():
            found.extend(tree(child.pid))
    return found


def measure(repeat: int, idle: float) -> dict[str, object]:
    compileall.compile_dir(str(ROOT / "tui"), quiet=1)
    out: dict[str, object] = {}
    helps = wall([*BABYSIT, "--help"], repeat)
    out["help_seconds"] = statistics.median(helps)
    out["help_all"] = helps
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        root = Path(tmp)
        with started_fleet(root, 1, 1, nvidia_smi=True) as fleet:
            config = root / "hosts.yaml"
            config.write_text(fleet.hosts_yaml)
            (sshd,) = fleet.sshds
            ssh = ssh_argv(sshd, "true")
            ssh_times = wall(ssh, repeat)
            status_times = wall([*BABYSIT, "status", "node00", "--config", str(config)], repeat)
            out["ssh_true_seconds"] = statistics.median(ssh_times)
            out["status_seconds"] = statistics.median(status_times)
            out["ssh_true_all"] = ssh_times
            out["status_all"] = status_times
            out["idle"] = idle_screen(config, sshd_list=fleet.sshds, root=root, seconds=idle)
    return out


def idle_screen(
    config: Path, *, sshd_list: list[Sshd], root: Path, seconds: float
) -> dict[str, object]:
    tmux = Tmux(root / "tmux.sock")
    tmux.start([*BABYSIT, "node00", "--config", str(config)], width=160, height=40)
    try:
        if tmux.wait_for(lambda s: "LIVE" in s, timeout=60) is None:
            return {"error": "LIVE never showed: " + " ".join(tmux.screen().split())[-300:]}
        time.sleep(5.0)  # the first probes and the log's first read are done
        assert tmux.pane_pid is not None
        remote = sessions_of(sshd_list)
        agents = [p for p in remote if "babysit-agent" in " ".join(p.cmdline())]
        before = (tree_cpu(tmux.pane_pid), cpu_of(agents), cpu_of(remote))
        started = time.monotonic()
        time.sleep(seconds)
        took = time.monotonic() - started
        after = (tree_cpu(tmux.pane_pid), cpu_of(agents), cpu_of(remote))
        screen = tmux.screen()
        used = [b - a for a, b in zip(before, after, strict=True)]
        return {
            "seconds": round(took, 1),
            "babysit_pct": round(100 * used[0] / took, 2),
            "agents_pct": round(100 * used[1] / took, 2),
            "sshd_pct": round(100 * (used[2] - used[1]) / took, 2),
            "agents": len(agents),
            "live_at_end": "LIVE" in screen,
        }
    finally:
        tmux.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    r = measure(args.repeat, args.idle)
    print(f"babysit --help: {r['help_seconds']:.3f} s (median of {args.repeat})")
    ratio = r["status_seconds"] / r["ssh_true_seconds"]  # type: ignore[operator]
    print(
        f"babysit status HOST: {r['status_seconds']:.3f} s; ssh HOST true: "
        f"{r['ssh_true_seconds']:.3f} s; ratio {ratio:.2f}x"
    )
    idle = r["idle"]
    print(f"idle host screen: {idle}")
    if args.json:
        args.json.write_text(json.dumps(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
