"""Signals babysit must never send, and a kill that must finish whatever its channel does.

Everything here runs where a mistake cannot hurt the machine: "init" is pid 1 of a
pid namespace the test makes (``unshare --pid --fork --mount-proc``), the sshd that
carries babysit's connection is one the test starts itself, and every process
signalled is one the test started.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import orphan_sim
from support.pct_standin import start_ticks
from support.servers import REPO, Server, free_port, wait_until
from support.sshd import Sshd, start_sshd

from tui.cli import main
from tui.config import Host
from tui.hostsfile import parse_config
from tui.ops.kill import KillTarget, kill_run
from tui.ops.kill_outcome import outcome_of
from tui.remote import SshLinks, open_transport
from tui.remote.probe import probe_host

READY = "The server is fired up and ready to roll!"
VMID = 131


# ---------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def kill_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """An sshd of this module's own: its sessions are dropped on purpose, and its PATH
    may carry an nvidia-smi stand-in, without touching any other test's connections."""
    server = start_sshd(tmp_path_factory.mktemp("kill-sshd"))
    server.add_container(VMID)
    try:
        yield server
    finally:
        server.stop()


def host_entry(kind: str, sshd: Sshd | None) -> str:
    if kind == "local":
        return "h:\n  local: true\n"
    assert sshd is not None
    if kind == "ssh":
        return sshd.host_yaml("h")
    sshd.add_container(VMID)
    return sshd.pct_host_yaml("h", VMID)


def config_text(kind: str, sshd: Sshd | None, service: dict[str, object]) -> str:
    body = host_entry(kind, sshd).rstrip("\n") + "\n  services:\n    qwen: " + json.dumps(service)
    return "hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())


def write_config(tmp_path: Path, kind: str, sshd: Sshd | None, service: dict[str, object]) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text(config_text(kind, sshd, service))
    return path


def host_of(kind: str, sshd: Sshd | None, service: dict[str, object]) -> Host:
    return parse_config(config_text(kind, sshd, service)).hosts["h"]


def sim_service(server: Server, **extra: object) -> dict[str, object]:
    return {
        "engine": "sglang",
        "log": str(server.log),
        "port": server.port,
        "match": f"tui sim .*--port {server.port} ",
        **extra,
    }


def audit_records() -> list[dict]:
    path = Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def kill_records(service: str = "qwen") -> list[dict]:
    folder = Path(os.environ["BABYSIT_HOST_STATE"]) / service / "kills"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def running(pid: int, ticks: str) -> bool:
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z" and start_ticks(pid) == ticks
    return False


def end_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the session a test process was started in (start_new_session=True)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    return env


# A process whose command line a service's match: hits, and that runs a command below
# itself ("{pid}" in it becomes its own pid) and writes the command's exit status.
PARENT = """\
import os, subprocess, sys
log = open(sys.argv[3], "a")  # holds the service's log open for writing, as a server does
result, argv = sys.argv[4], sys.argv[6:]
status = subprocess.call([a.replace("{pid}", str(os.getpid())) for a in argv])
with open(result, "w") as out:
    out.write(str(status))
"""


def parent_argv(
    tmp_path: Path, port: int, log: Path, result: Path, command: list[str]
) -> list[str]:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    return [sys.executable, str(script), "--port", str(port), str(log), str(result), "--", *command]


def babysit(*args: str) -> list[str]:
    return [sys.executable, "-m", "tui", *args]


def unshare_prefix() -> list[str]:
    """``unshare`` making a pid namespace with its own /proc, or skip where it cannot."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not installed")
    for extra in ([], ["--user", "--map-root-user"]):
        argv = [unshare, *extra, "--pid", "--fork", "--mount-proc"]
        if subprocess.run([*argv, "true"], capture_output=True, check=False).returncode == 0:
            return argv
    pytest.skip("cannot make a pid namespace here (unshare --pid --fork --mount-proc)")


# ---------------------------------------------------------------------- 21: never these


@pytest.mark.integration
def test_pid_1_is_never_signalled_inside_a_pid_namespace(tmp_path: Path) -> None:
    """A match: that hits init: `kill --pid 1` is refused (with the reason, audited),
    instead of SIGTERMing every process of the namespace, babysit included."""
    port = free_port()
    log = tmp_path / "init.log"
    result = tmp_path / "status"
    config = write_config(
        tmp_path,
        "local",
        None,
        {"engine": "sglang", "log": str(log), "match": rf"parent\.py --port {port} "},
    )
    command = babysit("kill", "h/qwen", "--pid", "1", "--grace", "1", "--config", str(config))
    init = subprocess.run(
        [*unshare_prefix(), *parent_argv(tmp_path, port, log, result, command)],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert init.returncode == 0, init.stderr.decode()
    # babysit itself was not signalled: it exited, refusing.
    assert result.read_text() == "2", init.stderr.decode()
    (last,) = audit_records()
    assert (last["action"], last["ok"], last["identity"]["pid"]) == ("kill", False, 1)
    assert "pid 1 is init" in last["result"] and "nothing was signalled" in last["result"]


@pytest.mark.integration
def test_a_tree_holding_babysit_itself_is_refused(tmp_path: Path) -> None:
    """babysit run from a shell that is the service's run: the kill would signal babysit."""
    port = free_port()
    log = tmp_path / "serve.log"
    result = tmp_path / "status"
    config = write_config(
        tmp_path,
        "local",
        None,
        {"engine": "sglang", "log": str(log), "match": rf"parent\.py --port {port} "},
    )
    command = babysit("kill", "h/qwen", "--pid", "{pid}", "--grace", "1", "--config", str(config))
    parent = subprocess.Popen(
        parent_argv(tmp_path, port, log, result, command),
        cwd=REPO,
        env=child_env(),
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert parent.wait(60) == 0, "the parent (the matched run) was signalled"
        # The probe never takes babysit's own chain for a run, so the pid is not the
        # service's run; and were it offered, the agent would refuse the kill itself
        # (test_the_agent_refuses_a_tree_holding_babysit_itself).
        assert result.read_text() == "2"
        assert all(record["ok"] is False for record in audit_records())
    finally:
        end_group(parent)


@pytest.mark.integration
async def test_the_agent_refuses_a_tree_holding_babysit_itself(tmp_path: Path) -> None:
    """Were babysit's own process ever offered as a run's member, the agent refuses
    before any signal: this test process is the babysit client that asks."""
    host = host_of("local", None, {"engine": "sglang", "log": str(tmp_path / "x.log")})
    transport = open_transport(host, SshLinks())
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    me = os.getpid()
    target = KillTarget(boot_id, ((me, int(start_ticks(me))),), None)
    events = [e async for e in kill_run(transport, target, grace=1)]
    assert [e.kind for e in events] == ["refused"]
    assert f"pid {me}" in events[0].message and "babysit itself" in events[0].message
    assert "nothing was signalled" in events[0].message


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["ssh", "pct"])
async def test_the_sshd_that_carries_babysits_connection_is_never_signalled(
    kind: str, tmp_path: Path
) -> None:
    own = start_sshd(tmp_path / "sshd")  # never the machine's own sshd
    try:
        listener = own.process.pid
        service = {
            "engine": "sglang",
            "log": str(own.log),
            "match": re.escape(f"-f {own.root / 'sshd_config'}"),
        }
        host = host_of(kind, own, service)
        links = SshLinks()
        try:
            transport = open_transport(host, links)
            (a,) = await probe_host(transport, host)
            # The probe never takes babysit's own chain for a run ...
            assert a.run is None, a.line
            # ... and were that sshd offered anyway, the agent refuses to signal it.
            sessions = [p.pid for p in own.session_processes()]
            target = KillTarget(
                a.boot_id or "",
                tuple((pid, int(start_ticks(pid))) for pid in [listener, *sessions]),
                None,
            )
            events = [e async for e in kill_run(transport, target, grace=1)]
            assert [e.kind for e in events] == ["refused"], [e.message for e in events]
            assert "carries babysit's own connection" in events[0].message
            assert own.process.poll() is None
            assert [p.pid for p in own.session_processes()] == sessions
            (again,) = await probe_host(transport, host)  # the connection still works
            assert again.verdict is a.verdict
        finally:
            await links.close()
    finally:
        own.stop()


SPAWNER = """\
import os, subprocess, sys, time
go, count = sys.argv[3], int(sys.argv[4])
children = []
while True:
    if os.path.exists(go) and not children:
        children = [subprocess.Popen(["sleep", "600"]) for _ in range(count)]
        open(go + ".done", "w").close()
    time.sleep(0.05)
"""


def start_spawner(
    tmp_path: Path, port: int, count: int, *, at_once: bool
) -> tuple[subprocess.Popen[bytes], Path]:
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNER)
    go = tmp_path / "go"
    if at_once:
        go.write_text("")
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", str(port), str(go), str(count)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    return proc, go


@pytest.mark.integration
def test_a_tree_larger_than_the_service_could_have_is_refused(tmp_path: Path) -> None:
    port = free_port()
    spawner, go = start_spawner(tmp_path, port, 60, at_once=True)
    try:
        wait_until(lambda: Path(f"{go}.done").exists(), 20, "60 children")
        children = [
            int(p)
            for p in Path(f"/proc/{spawner.pid}/task/{spawner.pid}/children").read_text().split()
        ]
        assert len(children) == 60
        config = write_config(
            tmp_path,
            "local",
            None,
            {
                "engine": "sglang",
                "log": str(tmp_path / "x.log"),
                "match": rf"spawner\.py --port {port} ",
            },
        )
        status = main(
            ["kill", "h/qwen", "--pid", str(spawner.pid), "--grace", "1", "--config", str(config)]
        )
        assert status == 2
        assert spawner.poll() is None
        assert all(Path(f"/proc/{c}").exists() for c in children)
        (last,) = audit_records()
        assert last["ok"] is False
        assert "61 processes" in last["result"] and "nothing was signalled" in last["result"]
    finally:
        end_group(spawner)


@pytest.mark.integration
async def test_a_tree_that_grew_past_the_bound_since_it_was_confirmed_is_refused(
    tmp_path: Path,
) -> None:
    port = free_port()
    spawner, go = start_spawner(tmp_path, port, 60, at_once=False)
    try:
        service = {
            "engine": "sglang",
            "log": str(tmp_path / "x.log"),
            "match": rf"spawner\.py --port {port} ",
        }
        host = host_of("local", None, service)
        transport = open_transport(host, SshLinks())
        wait_until(lambda: start_ticks(spawner.pid), 10, "the spawner")
        (a,) = await probe_host(transport, host)
        assert a.run is not None and a.run.pids == (spawner.pid,)
        target = KillTarget.of(a.run, a.boot_id or "", host.services["qwen"])
        go.write_text("")
        wait_until(lambda: Path(f"{go}.done").exists(), 20, "60 children")
        events = [e async for e in kill_run(transport, target, grace=1)]
        assert [e.kind for e in events] == ["refused"]
        assert "grown to 61 processes" in events[0].message
        assert spawner.poll() is None
    finally:
        end_group(spawner)


# ---------------------------------------------------------------------- 22: cut off


def ignoring_server(tmp_path: Path, servers: list[Server]) -> Server:
    server = Server(tmp_path / "serve.log", scenario="ignore-sigterm", load=0.3)
    servers.append(server)
    server.wait_for(READY)
    return server


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["ssh", "pct"])
async def test_a_kill_whose_connection_drops_after_sigterm_still_ends_the_run(
    kind: str, tmp_path: Path, kill_sshd: Sshd, servers: list[Server]
) -> None:
    server = ignoring_server(tmp_path, servers)
    host = host_of(kind, kill_sshd, sim_service(server))
    links = SshLinks()
    try:
        transport = open_transport(host, links)
        (a,) = await probe_host(transport, host)
        assert a.run is not None
        target = KillTarget.of(a.run, a.boot_id or "", host.services["qwen"])
        events = []
        async for event in kill_run(transport, target, grace=3):
            events.append(event)
            if event.kind == "signalled" and event.data.get("signal") == "SIGTERM":
                assert kill_sshd.kill_sessions() >= 1  # the network drops
        assert server.proc.wait(20) == -signal.SIGKILL
        kinds = [e.kind for e in events]
        assert "lost" in kinds and kinds[-1] == "done", [e.message for e in events]
        assert [e.data.get("signal") for e in events if e.kind == "signalled"] == [
            "SIGTERM",
            "SIGKILL",
        ]
        outcome = outcome_of(events)
        assert outcome.ok and outcome.interrupted
        (record,) = kill_records()
        assert record["state"] == "finished"
        assert [e["t"] for e in record["events"]][-1] == "done"
    finally:
        await links.close()


@pytest.mark.integration
async def test_a_local_kill_whose_caller_goes_away_still_ends_the_run(
    tmp_path: Path, servers: list[Server]
) -> None:
    """Locally the channel is the agent's process group: babysit quitting ends it."""
    server = ignoring_server(tmp_path, servers)
    host = host_of("local", None, sim_service(server))
    transport = open_transport(host, SshLinks())
    (a,) = await probe_host(transport, host)
    assert a.run is not None
    target = KillTarget.of(a.run, a.boot_id or "", host.services["qwen"])
    async with contextlib.aclosing(kill_run(transport, target, grace=2)) as events:
        async for event in events:
            if event.kind == "signalled":
                break  # babysit quits; the agent's group is ended
    assert server.proc.wait(20) == -signal.SIGKILL
    wait_until(lambda: [r["state"] for r in kill_records()] == ["finished"], 20, "the record")


def drop_after_sigterm(log: Path, drop: object) -> threading.Thread:
    def watch() -> None:
        wait_until(lambda: "SIGTERM received" in log.read_text(errors="replace"), 30, "SIGTERM")
        drop()  # type: ignore[operator]

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.integration
def test_the_cli_reads_back_the_end_of_a_kill_cut_by_a_drop(
    tmp_path: Path, kill_sshd: Sshd, servers: list[Server], capsys: pytest.CaptureFixture[str]
) -> None:
    server = ignoring_server(tmp_path, servers)
    config = write_config(tmp_path, "ssh", kill_sshd, sim_service(server))
    watcher = drop_after_sigterm(server.log, kill_sshd.kill_sessions)
    status = main(
        ["kill", "h/qwen", "--pid", str(server.pid), "--grace", "3", "--config", str(config)]
    )
    watcher.join(5)
    err = capsys.readouterr().err
    assert status == 0, err
    assert server.proc.wait(5) == -signal.SIGKILL
    assert "connection" in err and "read back" in err
    (last,) = audit_records()
    assert last["ok"] is True and "read back" in last["result"]


@pytest.mark.integration
def test_a_kill_whose_host_stays_unreachable_is_audited_and_says_where_its_end_is(
    tmp_path: Path,
    servers: list[Server],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tui.ops.kill

    # How long babysit tries to read the end back: the host stays away past any budget.
    # The grace outlasts the drop even on a loaded machine, so the end cannot come back
    # on the channel first.
    monkeypatch.setattr(tui.ops.kill, "READ_BACK_SLACK", 3.0)
    server = ignoring_server(tmp_path, servers)
    own = start_sshd(tmp_path / "sshd")
    try:
        config = write_config(tmp_path, "ssh", own, sim_service(server))
        watcher = drop_after_sigterm(server.log, own.stop)  # listener and sessions
        status = main(
            ["kill", "h/qwen", "--pid", str(server.pid), "--grace", "3", "--config", str(config)]
        )
        watcher.join(5)
        err = capsys.readouterr().err
        assert status == 3, err
        # The kill went on without its channel.
        assert server.proc.wait(20) == -signal.SIGKILL
        (record,) = kill_records()
        path = str(
            Path(os.environ["BABYSIT_HOST_STATE"]) / "qwen" / "kills" / f"{record['kill_id']}.json"
        )
        assert path in err
        (last,) = audit_records()
        assert last["ok"] is False and path in last["result"]
        wait_until(lambda: kill_records()[0]["state"] == "finished", 20, "the record")
    finally:
        own.stop()


# ---------------------------------------------------------------------- 23: the GPU


ESCAPE = """\
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


@pytest.fixture
def fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill_sshd: Sshd) -> Iterator[Path]:
    """The nvidia-smi stand-in on PATH, here and on kill_sshd's hosts, reading this
    test's sim registry."""
    state = tmp_path / "sim-state"
    local, remote = orphan_sim.install_standin(state, tmp_path / "bin", kill_sshd.bin_dir)
    monkeypatch.setenv("PATH", f"{local.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BABYSIT_SIM_STATE", str(state))
    try:
        yield state
    finally:
        remote.unlink()


def escape(state: Path, gpu: int, mib: int) -> tuple[int, str]:
    """A process that double-forked and setsid'd away, holding ``mib`` MiB on ``gpu``."""
    done = subprocess.run(
        [sys.executable, "-c", ESCAPE, str(state), str(gpu), str(mib)],
        env=child_env(),
        capture_output=True,
        timeout=30,
        check=True,
    )
    pid = int(done.stdout.decode().strip())
    return pid, start_ticks(pid)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("kind", "gpus"), [("local", [0]), ("ssh", [0]), ("pct", [0]), ("local", None)]
)
def test_memory_held_on_the_services_gpus_after_the_kill_is_named(  # noqa: PLR0917 - fixtures
    kind: str,
    gpus: list[int] | None,
    tmp_path: Path,
    kill_sshd: Sshd,
    fake_gpus: Path,
    servers: list[Server],
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = Server(tmp_path / "serve.log", state=fake_gpus, load=0.3)
    servers.append(server)
    server.wait_for(READY)
    holder, ticks = escape(fake_gpus, 0, 30000)
    try:
        extra = {"gpus": gpus} if gpus is not None else {}
        config = write_config(tmp_path, kind, kill_sshd, sim_service(server, **extra))
        status = main(
            ["kill", "h/qwen", "--pid", str(server.pid), "--grace", "5", "--config", str(config)]
        )
        err = capsys.readouterr().err
        assert server.proc.wait(5) is not None
        assert status == 1, err
        assert "GPU memory released" not in err
        said = f"pid {holder} (user {getpass.getuser()}, not signalled) holds 30000 MiB on GPU 0"
        assert said in err
        if gpus is None:
            assert "the GPUs the run held memory on" in err
        (last,) = audit_records()
        assert last["ok"] is False and said in last["result"]
    finally:
        if running(holder, ticks):
            os.kill(holder, signal.SIGKILL)


@pytest.mark.integration
def test_a_kill_that_frees_the_services_gpus_says_so(
    tmp_path: Path, fake_gpus: Path, servers: list[Server], capsys: pytest.CaptureFixture[str]
) -> None:
    server = Server(tmp_path / "serve.log", state=fake_gpus, load=0.3)
    servers.append(server)
    server.wait_for(READY)
    holder, ticks = escape(fake_gpus, 3, 30000)  # another GPU than the service's
    try:
        config = write_config(tmp_path, "local", None, sim_service(server, gpus=[0]))
        status = main(
            ["kill", "h/qwen", "--pid", str(server.pid), "--grace", "5", "--config", str(config)]
        )
        err = capsys.readouterr().err
        assert status == 0, err
        assert "no process holds memory on the service's GPU 0" in err
    finally:
        if running(holder, ticks):
            os.kill(holder, signal.SIGKILL)


# ---------------------------------------------------------------------- 24: the grace


@pytest.mark.integration
@pytest.mark.parametrize("grace", ["-5", "nan", "inf", "-inf", "1e9"])
def test_a_grace_that_is_not_a_sane_number_of_seconds_is_refused(
    grace: str, tmp_path: Path, servers: list[Server], capsys: pytest.CaptureFixture[str]
) -> None:
    server = Server(tmp_path / "serve.log", load=0.2)
    servers.append(server)
    server.wait_for(READY)
    config = write_config(tmp_path, "local", None, sim_service(server))
    argv = ["kill", "h/qwen", "--pid", str(server.pid), f"--grace={grace}", "--config", str(config)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--grace must be a number of seconds, more than 0 and at most 3600" in err
    assert server.proc.poll() is None, "nothing was signalled"
    assert main([*argv, "--json"]) == 2
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["ok"] is False and "--grace" in envelope["error"]["message"]
    assert (
        main(["relaunch", "h/qwen", "--replace", f"--grace={grace}", "--config", str(config)]) == 2
    )
    assert "--grace must be" in capsys.readouterr().err
    assert server.proc.poll() is None


@pytest.mark.unit
@pytest.mark.parametrize("timeout", ["-5", "nan", "inf", "0"])
def test_a_relaunch_wait_that_is_not_a_sane_number_of_seconds_is_refused(
    timeout: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "serve.log"
    service = {"engine": "sglang", "log": str(log), "launch": {"command": ["sleep", "60"]}}
    config = write_config(tmp_path, "local", None, service)
    argv = ["relaunch", "h/qwen", "--wait", f"--timeout={timeout}", "--config", str(config)]
    assert main(argv) == 2
    assert "--timeout must be a number of seconds, more than 0" in capsys.readouterr().err
    assert not log.exists(), "nothing was started"


@pytest.mark.unit
async def test_kill_run_refuses_a_grace_that_is_not_finite(tmp_path: Path) -> None:
    from tui.errors import UsageError

    target = KillTarget("b", ((os.getpid(), 1),), None)
    transport = open_transport(
        host_of("local", None, {"engine": "sglang", "log": "/x"}), SshLinks()
    )
    for grace in (float("nan"), float("inf"), -5.0):
        with pytest.raises(UsageError, match="grace"):
            [e async for e in kill_run(transport, target, grace=grace)]


@pytest.mark.unit
@pytest.mark.parametrize("value", [".nan", ".inf", "-5", "0"])
def test_stop_grace_in_hosts_yaml_is_checked_the_same_way(value: str) -> None:
    from tui.errors import ConfigError

    text = (
        "hosts:\n  h:\n    local: true\n    services:\n      qwen:\n"
        f"        engine: sglang\n        log: /x.log\n        stop_grace: {value}\n"
    )
    with pytest.raises(ConfigError, match=r"stop_grace.*more than 0 and at most 3600"):
        parse_config(text)


@pytest.mark.integration
async def test_a_kill_whose_channel_never_opened_does_not_say_it_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No step was seen: the kill may never have reached the host, and babysit says so
    rather than that it goes on there."""
    import tui.ops.kill

    monkeypatch.setattr(tui.ops.kill, "READ_BACK_SLACK", 1.0)
    text = (
        f"hosts:\n  h:\n    ssh: root@127.0.0.1:{free_port()}\n    connect_timeout: 1\n"
        "    services:\n      qwen: {engine: sglang, log: /x.log}\n"
    )
    host = parse_config(text).hosts["h"]
    links = SshLinks()
    try:
        target = KillTarget("boot", ((4_000_000, 1),), None)
        events = [e async for e in kill_run(open_transport(host, links), target, grace=1)]
    finally:
        await links.close()
    assert [e.kind for e in events] == ["lost", "unknown"]
    assert "may not have started" in events[0].message
    assert "most likely never started" in events[1].message
    assert "goes on on the host" not in " ".join(e.message for e in events)
