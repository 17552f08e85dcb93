"""Orphans and leftovers on real processes: who owns each GPU process, which processes
hold GPU memory for no configured service, and a worker whose server died is never a
run — through the agent, over every transport, with the nvidia-smi stand-in."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from sim_helpers import Sim, nvidia_smi, sim_env
from support import orphan_sim
from support.reports import report_host
from support.servers import REPO, Server, free_port
from support.sshd import Sshd, start_sshd
from support.wait import wait_until

from tui.config import Host
from tui.core.gpu import APPS_QUERY
from tui.core.hint import HintRule
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.probe import ProbeChannel, probe_host
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
if len(sys.argv) > 4:  # a worker's title, as prctl(PR_SET_NAME) sets it
    import ctypes
    ctypes.CDLL(None).prctl(15, sys.argv[4].encode()[:15], 0, 0, 0)
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
    sim registry (which is returned); each run's first argument is appended to
    ``nvidia-smi.calls`` beside it."""
    state = tmp_path / "sim-state"
    calls = tmp_path / "nvidia-smi.calls"
    local, remote = orphan_sim.install_standin(
        state, tmp_path / "bin", orphans_sshd.bin_dir, calls=calls
    )
    monkeypatch.setenv("PATH", f"{local.parent}{os.pathsep}{os.environ['PATH']}")
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


# ------------------------------------------------------------------ the orphan-workers sim

TP = 3


def listed(state: Path) -> dict[int, int]:
    """pid -> MiB as the stand-in lists compute apps now."""
    done = nvidia_smi(sim_env(state), *APPS_QUERY[1:], shim=False)
    assert done.returncode == 0, done.stderr
    return {int(row.split(",")[0]): int(row.split(",")[1]) for row in done.stdout.splitlines()}


async def test_the_workers_a_killed_server_leaves_are_its_orphans_and_no_run(
    place: Callable[..., Host], tmp_path: Path, gpu_state: Path
) -> None:
    sim = Sim(
        tmp_path,
        "vllm",
        "--load-seconds",
        "0.3",
        "--tp",
        str(TP),
        "--scenario",
        "orphan-workers",
        server=("serve", "Qwen/Qwen3-8B"),
        state=gpu_state,
    )
    workers: list[int] = []
    try:
        sim.wait_ready()
        workers = wait_until(
            lambda: (
                sorted(k.pid for k in kids)
                if len(kids := psutil.Process(sim.pid).children()) == TP - 1
                else None
            ),
            10,
            "the server's workers",
        )
        ranks = {sim.pid, *workers}
        wait_until(
            lambda: set(rows := listed(gpu_state)) == ranks and all(rows.values()),
            10,
            "every rank holding memory",
        )
        host = place({"v": {"engine": "vllm", "log": str(sim.log_path), "port": sim.port}})
        live = (await reports_of(host, ["v"]))["v"]
        assert live.verdict is Verdict.LIVE, live.assessment.summary
        assert live.gpus is not None and live.gpus.orphans == ()
        assert set(live.gpus.pids) == ranks

        sim.signal(signal.SIGKILL)
        sim.wait()
        held = wait_until(
            lambda: rows if set(rows := listed(gpu_state)) == set(workers) else None,
            10,
            "only the workers in the process list",
        )
        dead = (await reports_of(host, ["v"]))["v"]
        assert dead.verdict is Verdict.DEAD, dead.assessment.summary
        named = ", ".join(str(pid) for pid in workers)
        assert f"its workers {named} live on, holding the log open" in dead.assessment.summary
        assert dead.gpus is not None
        orphans = sorted((o.pid, o.memory_mib, o.worker_of) for o in dead.gpus.orphans)
        assert orphans == [(pid, held[pid], "v") for pid in workers]
        assert len({o.gpu for o in dead.gpus.orphans}) == TP - 1
        (hint,) = [h for h in dead.hints if h.rule is HintRule.ORPHANS]
        assert f"2 processes ({', '.join(str(o.pid) for o in dead.gpus.orphans)})" in hint.message
    finally:
        sim.stop()
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------ the reused process list


def compute_apps_asked(state: Path) -> int:
    calls = state.parent / "nvidia-smi.calls"
    lines = calls.read_text().splitlines() if calls.exists() else []
    return sum(line.startswith("--query-compute-apps") for line in lines)


async def test_a_reused_process_list_still_tells_whose_its_processes_are_now(
    tmp_path: Path, gpu_state: Path
) -> None:
    """The list is reused while every process it names lives; the server that held the
    worker died since: the worker is an orphan at once, without a new list."""
    log = tmp_path / "v.log"
    holding = [sys.executable, "-c", HOLD, str(gpu_state), "0", "2048", WORKER_TITLE]
    with log.open("ab") as out:
        server = subprocess.Popen(
            ["bash", "-c", '"$@" & wait', "bash", *holding],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            start_new_session=True,
        )
    worker = None
    try:
        wait_until(lambda: "held" in log.read_text(), 10, "the worker to hold its memory")
        (worker,) = psutil.Process(server.pid).children()
        host = host_of({"v": {"engine": "vllm", "log": str(log), "port": free_port()}})
        links = SshLinks()
        transport = open_transport(host, links)
        channel = ProbeChannel(transport)
        try:
            started = max(p.create_time() for p in (psutil.Process(server.pid), worker))
            await asyncio.sleep(max(0.0, started + 2.0 - time.time()))

            async def refresh() -> list:
                return await report_host(
                    transport, host, tail_bytes=0, channel=channel, apps_max_age=60
                )

            (before,) = await refresh()
            assert before.assessment.run is not None, before.assessment.summary
            assert before.gpus is not None and before.gpus.pids == (worker.pid,)
            assert before.gpus.orphans == ()
            assert compute_apps_asked(gpu_state) == 1

            server.kill()
            server.wait(10)
            (after,) = await refresh()
            assert compute_apps_asked(gpu_state) == 1  # the same list
            assert after.gpus is not None and after.gpus.apps_read_at == before.gpus.apps_read_at
            assert after.verdict is Verdict.DEAD, after.assessment.summary
            assert [(o.pid, o.memory_mib, o.worker_of) for o in after.gpus.orphans] == [
                (worker.pid, 2048, "v")
            ]
        finally:
            await channel.close()
            await links.close()
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(10)
        if worker is not None and worker.is_running():
            worker.kill()
