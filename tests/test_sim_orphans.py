"""The orphan-workers scenario: workers that outlive their server, holding GPU memory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from sim_helpers import ROOT, Sim, alive_or_zombie, nvidia_smi, sim_env, wait_until

pytestmark = pytest.mark.integration

APPS = ("--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv,noheader,nounits")
#: engine -> (server flags, the title of the worker of rank r)
ENGINES = {
    "sglang": (("--model-path", "Qwen/Qwen3-8B"), "sglang::scheduler_TP{rank}"),
    "vllm": (("serve", "Qwen/Qwen3-8B"), "VLLM::Worker_TP{rank}"),
    "tgi": (("--model-id", "Qwen/Qwen3-8B"), "text-generation-server"),
}
TP = 3
ORPHANS = "orphan-workers"


def held(env: dict[str, str]) -> dict[int, tuple[int, str]]:
    """pid -> (MiB, GPU uuid) as the stand-in lists compute apps."""
    done = nvidia_smi(env, *APPS)
    assert done.returncode == 0, done.stderr
    rows = {}
    for line in done.stdout.splitlines():
        pid, memory, uuid = line.split(", ")
        rows[int(pid)] = (int(memory), uuid)
    return rows


def gone(pid: int) -> bool:
    return alive_or_zombie(pid) in (None, "Z", "X")


def argv_of(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().rstrip("\0").split("\0")


def orphan_sim(tmp_path: Path, engine: str) -> Sim:
    server, _ = ENGINES[engine]
    return Sim(
        tmp_path,
        engine,
        "--load-seconds",
        "0.3",
        "--tp",
        str(TP),
        "--scenario",
        ORPHANS,
        server=server,
    )


def workers_of(sim: Sim, count: int = TP - 1) -> list[int]:
    """The server's ``count`` worker pids, once they all run."""
    kids = wait_until(
        lambda: (
            [kid.pid for kid in kids]
            if len(kids := psutil.Process(sim.pid).children()) == count
            else None
        ),
        10,
        f"{count} workers",
    )
    return sorted(kids)


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_workers_outlive_a_killed_server_holding_their_memory(tmp_path: Path, engine: str) -> None:
    sim = orphan_sim(tmp_path, engine)
    env = sim_env(sim.state)
    workers: list[int] = []
    try:
        sim.wait_ready()
        workers = workers_of(sim)
        _, title = ENGINES[engine]
        assert [argv_of(pid)[0] for pid in workers] == [
            title.format(rank=rank) for rank in range(1, TP)
        ]
        assert all(os.getsid(pid) == pid != os.getsid(sim.pid) for pid in workers)
        # While the server lives, every rank's memory is listed under the rank's own pid.
        ranks = {sim.pid, *workers}
        before = wait_until(
            lambda: rows if set(rows := held(env)) == ranks else None,
            10,
            "every rank in the process list",
        )
        assert all(before[pid][0] > 0 for pid in workers)
        assert len({uuid for _, uuid in before.values()}) == TP

        sim.signal(signal.SIGKILL)
        assert sim.wait() == -signal.SIGKILL
        for pid in workers:
            record = sim.state / f"sim-{pid}.json"
            wait_until(
                lambda r=record: json.loads(r.read_text())["phase"] == "orphaned",
                10,
                "the worker to see its server gone",
            )
        assert not any(gone(pid) for pid in workers)
        assert all(psutil.Process(pid).ppid() != sim.pid for pid in workers)
        for pid in workers:
            for fd in (1, 2):
                assert os.readlink(f"/proc/{pid}/fd/{fd}") == str(sim.log_path)
        assert held(env) == {pid: before[pid] for pid in workers}

        for pid in workers:
            os.kill(pid, signal.SIGTERM)
        wait_until(lambda: all(gone(pid) for pid in workers), 5, "SIGTERM to end the orphans")
        assert held(env) == {}
    finally:
        sim.stop()
        kill_all(workers)


def test_a_server_stopped_by_sigterm_ends_its_workers(tmp_path: Path) -> None:
    sim = orphan_sim(tmp_path, "vllm")
    env = sim_env(sim.state)
    workers: list[int] = []
    try:
        sim.wait_ready()
        workers = workers_of(sim)
        sim.signal(signal.SIGTERM)
        assert sim.wait() == 0
        wait_until(lambda: all(gone(pid) for pid in workers), 5, "the workers to end")
        assert held(env) == {}
    finally:
        sim.stop()
        kill_all(workers)


def test_every_scenario_titles_its_workers_first_on_the_command_line(tmp_path: Path) -> None:
    sim = Sim(tmp_path, "vllm", "--load-seconds", "0.3", "--tp", "2", server=ENGINES["vllm"][0])
    try:
        sim.wait_ready()
        (worker,) = workers_of(sim, 1)
        argv = argv_of(worker)
        assert argv[:3] == ["VLLM::Worker_TP1", "-m", "tui.sim.worker"]
        assert os.getsid(worker) == os.getsid(sim.pid)  # a healthy worker stays in the session
        sim.signal(signal.SIGKILL)
        assert sim.wait() == -signal.SIGKILL
        wait_until(lambda: gone(worker), 5, "the worker to die with its server")
    finally:
        sim.stop()


@pytest.mark.parametrize(
    ("engine", "flags", "why"),
    [
        ("vllm", ("--tp", "1"), "orphan-workers needs workers: --tp 2 or more"),
        ("llamacpp", ("--tp", "2"), "llama-server is one process"),
    ],
)
def test_orphan_workers_needs_workers(engine: str, flags: tuple[str, ...], why: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tui", "sim", "--engine", engine, "--scenario", ORPHANS, *flags],
        cwd=ROOT,
        env=sim_env(Path("/nonexistent-sim-state")),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert why in done.stderr
