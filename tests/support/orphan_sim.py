"""A vLLM sim of the ``orphan-workers`` scenario whose server a test kills -9, leaving its
TP worker holding GPU memory in the nvidia-smi stand-in; and that stand-in on PATH."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
from pathlib import Path

import psutil
from sim_helpers import ROOT, Sim

from support.wait import wait_until

#: The sim's tensor parallel size: the server (rank 0) and one worker.
TP = 2
SCENARIO = "orphan-workers"


def standin_shim(state: Path, calls: Path | None = None) -> str:
    """A shell script that runs the nvidia-smi stand-in on the sim registry ``state``
    (appending each run's first argument to ``calls`` when given)."""
    logged = f'echo "$1" >> {shlex.quote(str(calls))}\n' if calls is not None else ""
    return (
        "#!/bin/sh\n"
        f"{logged}"
        f"BABYSIT_SIM_STATE={shlex.quote(str(state))} "
        f"BABYSIT_SIM_PYTHON={shlex.quote(sys.executable)} "
        f'exec {shlex.quote(str(ROOT / "tui" / "sim" / "nvidia-smi"))} "$@"\n'
    )


def install_standin(state: Path, *folders: Path, calls: Path | None = None) -> list[Path]:
    """The stand-in as ``nvidia-smi`` in each of ``folders``; the paths written."""
    written = []
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "nvidia-smi"
        path.write_text(standin_shim(state, calls))
        path.chmod(0o755)
        written.append(path)
    return written


def start(tmp_path: Path, state: Path) -> Sim:
    """The sim, ready, with its worker running."""
    sim = Sim(
        tmp_path,
        "vllm",
        "--load-seconds",
        "0.3",
        "--tp",
        str(TP),
        "--scenario",
        SCENARIO,
        server=("serve", "Qwen/Qwen3-8B"),
        state=state,
    )
    sim.wait_ready()
    return sim


def workers(sim: Sim) -> list[int]:
    """The server's worker pids, once they all run."""
    found = wait_until(
        lambda: (
            [kid.pid for kid in kids]
            if len(kids := psutil.Process(sim.pid).children()) == TP - 1
            else None
        ),
        10,
        f"{TP - 1} workers",
    )
    return sorted(found)


def orphan(sim: Sim) -> list[int]:
    """kill -9 the server; its workers, once each knows it is an orphan."""
    pids = workers(sim)
    sim.signal(signal.SIGKILL)
    sim.wait()
    for pid in pids:
        record = sim.state / f"sim-{pid}.json"
        wait_until(
            lambda r=record: json.loads(r.read_text())["phase"] == "orphaned",
            10,
            "the worker to see its server gone",
        )
    return pids


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie has)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def end(pids: list[int]) -> None:
    """SIGKILL whichever of ``pids`` still runs (test cleanup)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def service(sim: Sim, launch: bool = True) -> dict[str, object]:
    """The sim as a hosts.yaml service (with ``launch``: a sim on the same port)."""
    entry: dict[str, object] = {
        "engine": "vllm",
        "log": str(sim.log_path),
        "port": sim.port,
        "match": f"tui sim --engine vllm --port {sim.port} ",
        "stop_grace": 5,
    }
    if launch:
        entry["launch"] = {
            "command": list(sim.argv),
            "cwd": str(ROOT),
            "env": {"PYTHONPATH": str(ROOT), "BABYSIT_SIM_STATE": str(sim.state)},
        }
    return entry
