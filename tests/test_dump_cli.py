"""`babysit dump` as a script runs it, against real sim processes (py-spy installed by the
test extra): every process's stack, the sim's main loop among them, the log's lines and
nvidia-smi in one file whose path is the last line; its ``--json``; a dead service and an
unreachable host write nothing; over ssh too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.ports import free_port
from support.servers import REPO, sim_argv
from support.sshd import Sshd
from support.wait import wait_until

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"
#: A function of the sim's main loop (tui/sim/server.py), as py-spy names it.
MAIN_LOOP = "SimServer._loop (tui/sim/server.py"
#: A secret on the sim's command line: never in the bundle.
SECRET = "sk-dump-SEKRET-0123456789"  # noqa: S105 - a test value


class TpSim:
    """A sim with ``--tp 2`` (one worker below its root) appending to ``log``."""

    def __init__(self, log: Path, state: Path) -> None:
        self.log = log
        self.port = free_port()
        argv = sim_argv("sglang", self.port, extra=("--tp", "2", "--api-key", SECRET))
        env = {**os.environ, "PYTHONPATH": str(REPO), "BABYSIT_SIM_STATE": str(state)}
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=REPO,
                env=env,
                start_new_session=True,
            )
        wait_until(lambda: READY in log.read_text(errors="replace"), 30, "the ready line")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """py-spy (the venv's) and the nvidia-smi stand-in on PATH; the sims' registry."""
    state = tmp_path / "sim-state"
    path = os.pathsep.join([str(REPO / "tui" / "sim"), str(Path(sys.executable).parent)])
    monkeypatch.setenv("PATH", f"{path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BABYSIT_SIM_STATE", str(state))
    monkeypatch.setenv("BABYSIT_SIM_PYTHON", sys.executable)
    return state


@pytest.fixture
def sim(tmp_path: Path, tools: Path) -> Iterator[TpSim]:
    running = TpSim(tmp_path / "serve.log", tools)
    try:
        yield running
    finally:
        running.stop()


def babysit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )


def service_entry(log: Path, port: int, match: str | None = None) -> str:
    match = match or f"tui sim .*--port {port} "
    return (
        "    services:\n      qwen:\n        engine: sglang\n"
        f"        log: {json.dumps(str(log))}\n        port: {port}\n"
        f"        match: {json.dumps(match)}\n"
    )


def config(tmp_path: Path, host: str, log: Path, port: int, match: str | None = None) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text("hosts:\n" + host + service_entry(log, port, match))
    return path


def worker_pids(root: int) -> list[int]:
    children = Path(f"/proc/{root}/task/{root}/children").read_text().split()
    return [int(pid) for pid in children]


def test_every_process_stack_the_log_and_nvidia_smi_in_one_file_named_last(
    tmp_path: Path, sim: TpSim, state_dirs: dict[str, Path]
) -> None:
    hosts = config(tmp_path, "  here:\n    local: true\n", sim.log, sim.port)
    result = babysit("dump", "here/qwen", "--config", str(hosts))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    path = Path(lines[-1])
    assert path.parent == state_dirs["local"] / "dumps"
    assert path.name.startswith("here-qwen-") and path.suffix == ".txt"
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    pids = [sim.pid, *worker_pids(sim.pid)]
    assert len(pids) == 2
    for pid in pids:
        assert any(line.startswith(f"process {pid} ") and "py-spy" in line for line in lines)
    text = path.read_text()
    assert MAIN_LOOP in text
    for pid in pids:
        assert f"Process {pid}: " in text, pid
    assert "tui/sim/worker.py" in text
    assert "NVIDIA-SMI" in text
    assert "pid, used_gpu_memory [MiB], gpu_uuid" in text
    assert READY in text
    log_lines = sim.log.read_text().splitlines()
    assert log_lines[-1] in text
    assert f"run:      pid {sim.pid} " in text
    assert SECRET not in text
    assert "<redacted" in text
    assert "Traceback" not in result.stdout + result.stderr


def test_json_names_the_path_the_processes_and_ptrace(tmp_path: Path, sim: TpSim) -> None:
    hosts = config(tmp_path, "  here:\n    local: true\n", sim.log, sim.port)
    out = tmp_path / "bundles" / "here"
    result = babysit("dump", "here/qwen", "--json", "--out", str(out), "--config", str(hosts))
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert document["schema"] == 1
    assert document["ok"] is True
    assert Path(document["path"]).parent == out
    assert Path(document["path"]).is_file()
    processes = document["processes"]
    assert processes[0]["pid"] == sim.pid
    assert {p["how"] for p in processes} == {"py-spy"}
    assert all(p["problem"] is None for p in processes)
    assert document["ptrace"]["allowed"] is True
    assert document["ptrace"]["why"] is None
    assert result.stderr == ""


def test_a_dead_service_is_refused_and_nothing_is_written(
    tmp_path: Path, state_dirs: dict[str, Path]
) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-12-01 09:20:06] {READY}\n")
    # a match no process has: another test's sim on a port given out twice is no run of it
    never = f"/no-such-server/{tmp_path.name}"
    hosts = config(tmp_path, "  here:\n    local: true\n", log, free_port(), never)
    result = babysit("dump", "here/qwen", "--config", str(hosts))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "no verified run to dump (DEAD: " in result.stderr
    assert "nothing was written" in result.stderr
    assert result.stdout == ""
    assert not (state_dirs["local"] / "dumps").exists()
    again = babysit("dump", "here/qwen", "--json", "--config", str(hosts))
    assert again.returncode == 3, again.stdout + again.stderr
    document = json.loads(again.stdout)
    assert document["ok"] is False, document
    assert document["error"]["kind"] == "dump"


def test_an_unreachable_host_is_exit_3_and_nothing_is_written(
    tmp_path: Path, state_dirs: dict[str, Path]
) -> None:
    host = f"  down:\n    ssh: root@127.0.0.1:{free_port()}\n"
    hosts = config(tmp_path, host, Path("/srv/serve.log"), free_port())
    result = babysit("dump", "down/qwen", "--config", str(hosts))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "nothing was written" in result.stderr
    assert not (state_dirs["local"] / "dumps").exists()


@pytest.mark.sshd
def test_over_ssh_the_bundle_is_written_here(
    tmp_path: Path, sim: TpSim, sshd: Sshd, state_dirs: dict[str, Path]
) -> None:
    hosts = config(
        tmp_path, "".join(f"  {x}\n" for x in sshd.host_yaml("gpu").splitlines()), sim.log, sim.port
    )
    result = babysit("dump", "gpu/qwen", "--config", str(hosts))
    assert result.returncode == 0, result.stdout + result.stderr
    path = Path(result.stdout.splitlines()[-1])
    assert path.parent == state_dirs["local"] / "dumps"
    assert path.name.startswith("gpu-qwen-")
    text = path.read_text()
    assert f"run:      pid {sim.pid} " in text
    assert f"process {sim.pid} (parent " in text
    # The sshd session's PATH has neither py-spy nor the nvidia-smi stand-in: the kernel's
    # view of each process, and nvidia-smi's absence, are in the bundle.
    assert "threads:" in text or MAIN_LOOP in text
    assert "nvidia-smi" in text
    assert READY in text
