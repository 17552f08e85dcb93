"""Orphans and leftovers on real processes: who owns each GPU process, which processes
hold GPU memory for no configured service, and a worker whose server died is never a
run — through the agent, over every transport, with the nvidia-smi stand-in."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.reports import report_host
from support.servers import REPO, Server, free_port
from support.sshd import Sshd, start_sshd
from support.wait import wait_until

from tui.config import Host
from tui.core.hint import HintRule
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.probe import probe_host
from tui.remote.transport import Transport
from tui.sim.gpus import ProcUse, SimRecord, proc_start_ticks, write_record

pytestmark = pytest.mark.integration

#: A worker title of the vLLM engine (tui/engines/vllm EngineSpec.workers).
WORKER_TITLE = "VLLM::Worker_TP1"
VLLM_READY = "INFO:     Application startup complete.\n"


READY = "The server is fired up and ready to roll!"
VMID = 133
KINDS = ("local", "ssh", "pct")
#: What the process standing for a run started by hand holds on GPU 0.
HELD_MIB = 12345


def host_of(
    services: dict[str, dict[str, object]], kind: str = "local", sshd: Sshd | None = None
) -> Host:
    """Host ``h`` reached as ``kind`` (through ``sshd`` for ssh and pct) with ``services``."""
    if kind == "local":
        entry = "h:\n  local: true\n"
    elif kind == "ssh":
        assert sshd is not None
        entry = sshd.host_yaml("h")
    else:
        assert sshd is not None
        entry = sshd.pct_host_yaml("h", VMID)
    body = (
        entry.rstrip("\n")
        + "\n  services:\n"
        + "".join(f"    {name}: {json.dumps(fields)}\n" for name, fields in services.items())
    )
    return parse_config("hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())).hosts["h"]


class Titled:
    """A process whose argv[0] is ``title`` (``exec -a``), its output appended to
    ``log`` as a server's worker's is: what a worker looks like once its server died."""

    def __init__(self, title: str, log: Path) -> None:
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                ["bash", "-c", 'exec -a "$0" sleep 600', title],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        wait_until(self._titled, 10, f"pid {self.proc.pid} titled {title}")
        self.title = title

    def _titled(self) -> bool:
        try:
            return Path(f"/proc/{self.proc.pid}/cmdline").read_bytes().startswith(b"VLLM::")
        except OSError:
            return False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def titled() -> Iterator[list[Titled]]:
    started: list[Titled] = []
    try:
        yield started
    finally:
        for process in started:
            process.stop()


async def test_a_worker_left_holding_the_log_is_no_run_and_the_service_is_dead(
    transport: Transport, tmp_path: Path, titled: list[Titled]
) -> None:
    """The worker writes the log and the ready line comes after it started: still no
    run of the service, and the verdict names it."""
    log = tmp_path / "vllm.log"
    worker = Titled(WORKER_TITLE, log)
    titled.append(worker)
    with log.open("a") as out:
        out.write(VLLM_READY)
    host = host_of({"v": {"engine": "vllm", "log": str(log), "port": free_port()}})
    (result,) = await probe_host(transport, host)
    assert result.verdict is Verdict.DEAD, result.summary
    assert result.run is None
    assert f"its worker {worker.pid} lives on" in result.summary
    assert "holding the log open" in result.summary


# ------------------------------------------------------------------ with the GPU stand-in

#: A process that tells the nvidia-smi stand-in it holds memory on a GPU, then waits:
#: a run started by hand, or a worker whose server is gone.
HOLD = """\
import os, sys, time
from pathlib import Path
from tui.sim.gpus import ProcUse, SimRecord, proc_start_ticks, write_record
state, gpu, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
me = os.getpid()
ticks = proc_start_ticks(me)
use = ProcUse(me, ticks, gpu, mib)
write_record(SimRecord(me, ticks, "vllm", 0, "running", False, 0, 0, (use,)), Path(state))
print("held", flush=True)
time.sleep(600)
"""


class Holder:
    """A process (``python3 -c HOLD``) holding ``mib`` MiB on ``gpu`` in the stand-in."""

    def __init__(self, state: Path, gpu: int, mib: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(state), str(gpu), str(mib)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == b"held\n"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def hold_as(state: Path, pid: int, gpu: int, mib: int) -> None:
    """Tell the stand-in that process ``pid`` holds ``mib`` MiB on ``gpu``."""
    ticks = proc_start_ticks(pid)
    use = ProcUse(pid, ticks, gpu, mib)
    write_record(SimRecord(pid, ticks, "vllm", 0, "running", False, 0, 0, (use,)), state)


@pytest.fixture(scope="module")
def orphans_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """An sshd of this module's own, whose PATH carries the nvidia-smi stand-in."""
    server = start_sshd(tmp_path_factory.mktemp("orphans-sshd"))
    server.add_container(VMID)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def gpu_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, orphans_sshd: Sshd
) -> Iterator[Path]:
    """The nvidia-smi stand-in on PATH, here and on the sshd's hosts, reading this test's
    sim registry (which is returned)."""
    state = tmp_path / "sim-state"
    shim = (
        "#!/bin/sh\n"
        f"BABYSIT_SIM_STATE={shlex.quote(str(state))} "
        f"BABYSIT_SIM_PYTHON={shlex.quote(sys.executable)} "
        f'exec {shlex.quote(str(REPO / "tui" / "sim" / "nvidia-smi"))} "$@"\n'
    )
    local_bin = tmp_path / "bin"
    local_bin.mkdir()
    remote = orphans_sshd.bin_dir / "nvidia-smi"
    for path in (local_bin / "nvidia-smi", remote):
        path.write_text(shim)
        path.chmod(0o755)
    monkeypatch.setenv("PATH", f"{local_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BABYSIT_SIM_STATE", str(state))
    try:
        yield state
    finally:
        remote.unlink()


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    started: list[Holder] = []
    try:
        yield started
    finally:
        for holder in started:
            holder.stop()


@pytest.fixture(params=KINDS)
def place(request: pytest.FixtureRequest, orphans_sshd: Sshd) -> Callable[..., Host]:
    """Makes host ``h`` with the given services, reached locally, over ssh or through pct."""
    return lambda services: host_of(services, request.param, orphans_sshd)


async def reports_of(host: Host, names: list[str]) -> dict[str, object]:
    links = SshLinks()
    try:
        chosen = [host.services[n] for n in names]
        reports = await report_host(open_transport(host, links), host, chosen, tail_bytes=0)
    finally:
        await links.close()
    return {r.assessment.service: r for r in reports}


async def test_a_process_of_no_configured_service_is_an_orphan_and_another_services_run_is_not(
    place: Callable[..., Host],
    tmp_path: Path,
    gpu_state: Path,
    servers: list[Server],
    holders: list[Holder],
) -> None:
    a = Server(tmp_path / "a.log", state=gpu_state)
    b = Server(tmp_path / "b.log", state=gpu_state)
    servers.extend([a, b])
    stray = Holder(gpu_state, 0, HELD_MIB)
    holders.append(stray)
    a.wait_for(READY)
    b.wait_for(READY)
    services = {
        name: {"engine": "sglang", "log": str(server.log), "port": server.port, "gpus": [0]}
        for name, server in (("a", a), ("b", b))
    }
    host = place(services)
    # first b is not probed: its run is found as one of the request's gpu_owners
    for probed in (["a"], ["a", "b"]):
        reports = await reports_of(host, probed)
        report = reports["a"]
        assert report.verdict is Verdict.LIVE, report.assessment.summary
        gpus = report.gpus
        assert gpus is not None and gpus.pids == (a.pid,), gpus.note
        assert [(o.pid, o.gpu, o.memory_mib) for o in gpus.orphans] == [(stray.pid, 0, HELD_MIB)]
        (orphan,) = gpus.orphans
        assert orphan.start_ticks == proc_start_ticks(stray.pid)
        assert orphan.cmdline[:2] == (sys.executable, "-c") and orphan.worker_of is None
        entry = report.to_json()["gpus"]["orphans"][0]
        assert (entry["pid"], entry["memory_mib"], entry["gpu"]) == (stray.pid, HELD_MIB, 0)
        (hint,) = [h for h in report.hints if h.rule is HintRule.ORPHANS]
        assert f"process {stray.pid} holds {HELD_MIB:,} MiB" in hint.message
        assert hint.evidence[0].startswith(f"pid {stray.pid} ")
    # b's run holds memory on GPU 0 too: nvidia-smi lists it, and it is no orphan of a's
    b_gpus = reports["b"].gpus
    assert b_gpus is not None and b_gpus.pids == (b.pid,), b_gpus.note


async def test_a_leftover_worker_holding_gpu_memory_is_an_orphan_of_its_service_and_no_run(
    place: Callable[..., Host], tmp_path: Path, gpu_state: Path, titled: list[Titled]
) -> None:
    log = tmp_path / "vllm.log"
    worker = Titled(WORKER_TITLE, log)
    titled.append(worker)
    hold_as(gpu_state, worker.pid, 1, 30000)
    with log.open("a") as out:
        out.write(VLLM_READY)
    host = place({"v": {"engine": "vllm", "log": str(log), "port": free_port()}})
    report = (await reports_of(host, ["v"]))["v"]
    assert report.verdict is Verdict.DEAD, report.assessment.summary
    assert f"its worker {worker.pid} lives on" in report.assessment.summary
    assert report.gpus is not None
    assert [(o.pid, o.gpu, o.worker_of) for o in report.gpus.orphans] == [(worker.pid, 1, "v")]
    (hint,) = [h for h in report.hints if h.rule is HintRule.ORPHANS]
    assert "it looks like a worker of v" in hint.evidence[0]
