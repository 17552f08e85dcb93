"""Killing orphans on a service's GPUs, and the kill's wait for GPU memory, on the real
agent over local, ssh and pct.

The orphans are real processes the test starts: each double-forks and setsid's away
and holds memory on a GPU of the nvidia-smi stand-in (as a TP worker left by a dead
server does). They are handed to the kill as the probe would (pid, start ticks, ...),
so the agent's identity re-check is what decides whether each is signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import orphan_sim
from support.pct_standin import start_ticks
from support.servers import REPO, Server
from support.sshd import Sshd, start_sshd

from tui.cli import main
from tui.config import Host
from tui.core.gpu import Orphan
from tui.hostsfile import parse_config
from tui.ops.actions import Finished, Planned, ServiceActions, Step
from tui.ops.hostops import TransportOps
from tui.ops.kill_outcome import KillEvent
from tui.remote import SshLinks, open_transport

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"
VMID = 132
HELD_MIB = 19558

# A process that double-forks and setsid's away, holding MIB MiB on GPU in the stand-in.
HOLDER = """\
import os, sys, time
from pathlib import Path
from tui.sim.gpus import ProcUse, SimRecord, proc_start_ticks, write_record
state, gpu, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        me = os.getpid()
        ticks = proc_start_ticks(me)
        use = ProcUse(me, ticks, gpu, mib)
        write_record(SimRecord(me, ticks, "sglang", 0, "running", False, 0, 0, (use,)), Path(state))
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.write(write, str(me).encode())
        os.close(write)
        time.sleep(600)
    os._exit(0)
os.close(write)
print(os.read(read, 64).decode())
"""


@pytest.fixture(scope="module")
def orphan_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """An sshd of this module's own, whose PATH may carry the nvidia-smi stand-in."""
    server = start_sshd(tmp_path_factory.mktemp("orphan-sshd"))
    server.add_container(VMID)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def gpu_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, orphan_sshd: Sshd) -> Iterator[Path]:
    """The nvidia-smi stand-in on PATH, here and on the sshd's hosts, reading this
    test's sim registry."""
    state = tmp_path / "sim-state"
    local, remote = orphan_sim.install_standin(state, tmp_path / "bin", orphan_sshd.bin_dir)
    monkeypatch.setenv("PATH", f"{local.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BABYSIT_SIM_STATE", str(state))
    try:
        yield state
    finally:
        remote.unlink()


@pytest.fixture
def holders() -> Iterator[list[tuple[int, str]]]:
    """(pid, start ticks) of the holders a test starts; each still running is ended."""
    started: list[tuple[int, str]] = []
    yield started
    for pid, ticks in started:
        if running(pid, ticks):
            os.kill(pid, signal.SIGKILL)


def running(pid: int, ticks: str) -> bool:
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z" and start_ticks(pid) == ticks
    return False


def hold(state: Path, gpu: int, holders: list[tuple[int, str]], mib: int = HELD_MIB) -> Orphan:
    """A holder of ``mib`` MiB on ``gpu``, as the probe would show it as an orphan."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", HOLDER, str(state), str(gpu), str(mib)],
        env=env,
        capture_output=True,
        timeout=30,
        check=True,
    )
    pid = int(done.stdout.decode().strip())
    ticks = start_ticks(pid)
    holders.append((pid, ticks))
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    started = time.time() - uptime + int(ticks) / os.sysconf("SC_CLK_TCK")
    cmdline = tuple(Path(f"/proc/{pid}/cmdline").read_text().split("\0")[:-1])
    return Orphan(pid, int(ticks), float(mib), gpu, cmdline, started, int(fields[1]))


def host_of(kind: str, sshd: Sshd, service: dict[str, object]) -> Host:
    if kind == "local":
        entry = "h:\n  local: true\n"
    elif kind == "ssh":
        entry = sshd.host_yaml("h")
    else:
        entry = sshd.pct_host_yaml("h", VMID)
    body = entry.rstrip("\n") + "\n  services:\n    qwen: " + json.dumps(service)
    return parse_config("hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())).hosts["h"]


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def audit_records() -> list[dict]:
    path = Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


async def kill_orphans(kind: str, sshd: Sshd, tmp_path: Path, orphans: list[Orphan]) -> list[Step]:
    """Every step of the kill of ``orphans`` through the real agent on ``kind``."""
    service = {"engine": "sglang", "log": str(tmp_path / "serve.log"), "gpus": [0, 1]}
    host = host_of(kind, sshd, service)
    links = SshLinks()
    try:
        transport = open_transport(host, links)
        ops = TransportOps(transport, host.services["qwen"])
        actions = ServiceActions(ops, host, host.services["qwen"], actor="cli")
        return [s async for s in actions.kill_orphans(orphans, boot_id(), grace=5)]
    finally:
        await links.close()


@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
async def test_orphans_are_killed_and_the_memory_they_held_is_said_freed(
    kind: str,
    tmp_path: Path,
    orphan_sshd: Sshd,
    gpu_state: Path,
    holders: list[tuple[int, str]],
) -> None:
    orphans = [hold(gpu_state, 0, holders), hold(gpu_state, 1, holders)]
    steps = await kill_orphans(kind, orphan_sshd, tmp_path, orphans)
    planned = steps[0]
    assert isinstance(planned, Planned)
    assert planned.text.startswith(f"stopping orphans pid {orphans[0].pid}, {orphans[1].pid}")
    signalled = {s.pid for s in steps if isinstance(s, KillEvent) and s.kind == "signalled"}
    assert signalled == {o.pid for o in orphans}
    end = steps[-1]
    assert isinstance(end, Finished) and end.ok, end.result
    assert end.exit_status == 0
    assert f"orphans pid {orphans[0].pid}, {orphans[1].pid} are gone" in end.result
    assert "GPU memory freed: 38.2 GiB on GPU 0, 1 (after " in end.result
    assert not any(running(pid, ticks) for pid, ticks in holders)
    (record,) = audit_records()
    assert record["action"] == "kill" and record["ok"] is True
    assert record["identity"]["pid"] == orphans[0].pid
    assert "GPU memory freed" in record["result"]


@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
async def test_an_orphan_whose_start_time_changed_is_left_alone(
    kind: str,
    tmp_path: Path,
    orphan_sshd: Sshd,
    gpu_state: Path,
    holders: list[tuple[int, str]],
) -> None:
    """The agent re-checks each orphan's start time: a stale one (its pid now another
    process, as far as the kill can tell) gets no signal; the other is killed."""
    stale, fresh = hold(gpu_state, 0, holders), hold(gpu_state, 1, holders)
    moved = Orphan(**{**stale.__dict__, "start_ticks": stale.start_ticks + 1})
    steps = await kill_orphans(kind, orphan_sshd, tmp_path, [moved, fresh])
    kinds = {(s.kind, s.pid) for s in steps if isinstance(s, KillEvent)}
    assert ("changed", stale.pid) in kinds
    assert ("signalled", stale.pid) not in kinds
    assert ("signalled", fresh.pid) in kinds
    assert running(*holders[0])
    assert not running(*holders[1])
    end = steps[-1]
    assert isinstance(end, Finished) and not end.ok and end.exit_status == 1
    assert f"pid {stale.pid} is now another process: nothing was signalled" in end.result
    (record,) = audit_records()
    assert record["ok"] is False and f"pid {stale.pid} is now another process" in record["result"]


def test_a_kill_says_how_much_gpu_memory_its_run_freed(
    tmp_path: Path, gpu_state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = Server(tmp_path / "serve.log", state=gpu_state, load=0.3)
    try:
        server.wait_for(READY)
        service = {
            "engine": "sglang",
            "log": str(server.log),
            "port": server.port,
            "match": f"tui sim .*--port {server.port} ",
            "gpus": [0],
        }
        config = tmp_path / "hosts.yaml"
        body = "h:\n  local: true\n  services:\n    qwen: " + json.dumps(service)
        config.write_text("hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines()))
        status = main(
            ["kill", "h/qwen", "--pid", str(server.pid), "--grace", "5", "--config", str(config)]
        )
        err = capsys.readouterr().err
        assert status == 0, err
        assert "GPU memory freed: " in err and " on GPU 0 (after " in err
        assert "no process holds memory on the service's GPU 0" in err
    finally:
        server.kill()
