"""Verdicts on real paths: reused pids, year-less stamps, symlinked logs, other users'
servers, cut logs, unreadable logs and babysit's own descriptors, from real sims and
real processes, over every transport where the case applies."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from support.agent_as import run_agent_as
from support.servers import REPO, Server, free_port, service_yaml, sim_argv, wait_until
from support.sshd import Sshd

from tui.cli import main
from tui.config import Host
from tui.core.assess import assess
from tui.core.runs import Assessment, ServiceProbe
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.ops.relaunch import launch
from tui.remote import SshLinks, open_transport
from tui.remote.probe import probe_host, probe_request
from tui.remote.transport import Transport

READY = "The server is fired up and ready to roll!"


def host_of(services: str) -> Host:
    """A host whose ``services:`` block is ``services`` (entries indented by six spaces)."""
    text = "hosts:\n  gpu:\n    local: true\n    services:\n" + services
    return parse_config(text).hosts["gpu"]


def service(name: str, log: Path | str, **fields: object) -> str:
    body = {"log": str(log), **fields}
    return f"      {name}: {json.dumps(body)}\n"


async def assess_over(transport: Transport, host: Host) -> list[Assessment]:
    return await probe_host(transport, host)


async def probe_locally(host: Host) -> list[Assessment]:
    links = SshLinks()
    try:
        return await probe_host(open_transport(host, links), host)
    finally:
        await links.close()


class HeldServer(Server):
    """A sim whose shell is started first and execs the sim only when told, so the test
    knows the pid the server will have before the server writes a byte."""

    def __init__(self, log: Path, argv: list[str], port: int = 0) -> None:
        self.log = log
        self.port = port
        env = dict(os.environ, PYTHONPATH=str(REPO))
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                ["sh", "-c", 'read go && exec "$@"', "sh", *argv],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=env,
                start_new_session=True,
            )

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.close()


class ServerAs(Server):
    """A sim run as another user (``setpriv``), its output appended to ``log``."""

    def __init__(self, user: str, group: str, log: Path) -> None:
        self.log = log
        self.port = free_port()
        env = dict(os.environ, PYTHONPATH=str(REPO), HOME="/")
        env.pop("BABYSIT_SIM_STATE")  # the test's folder is not this user's: its own default
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    "setpriv",
                    f"--reuid={user}",
                    f"--regid={group}",
                    "--clear-groups",
                    *sim_argv("sglang", self.port),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=REPO,
                env=env,
                start_new_session=True,
            )


def vllm_stamp(ts: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.localtime(ts))


# ---------------------------------------------------------------- 5: vLLM pid tags


@pytest.mark.integration
async def test_an_older_runs_lines_with_the_same_pid_tag_never_make_a_loading_run_live(
    transport: Transport, tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "vllm.log"
    port = free_port()
    server = HeldServer(log, sim_argv("vllm", port, load=60), port)
    servers.append(server)
    pid = server.pid
    old = time.time() - 3600  # the run before, an hour ago, in a container with the same pid
    earlier = (
        f"(APIServer pid={pid}) INFO {vllm_stamp(old)} [api_server.py:1208] vLLM server "
        "version 0.20.0, serving model Qwen/Qwen3-8B\n"
        f"(APIServer pid={pid}) INFO {vllm_stamp(old + 40)} [launcher.py:29] Route: /health\n"
        f"(APIServer pid={pid}) INFO:     Application startup complete.\n"
        f"(APIServer pid={pid}) INFO {vllm_stamp(old + 900)} [loggers.py:123] Engine 000: "
        "Avg prompt throughput: 0.0 tokens/s\n"
    )
    with log.open("a") as out:
        out.write(earlier)
    server.go()
    wait_until(
        lambda: f"pid={pid}) INFO {vllm_stamp(time.time())[:5]}" in log.read_text()[len(earlier) :],
        20,
        "the new run's first line",
    )
    host = host_of(service("v", log, engine="vllm", port=port, match=f"tui sim .*--port {port} "))
    (result,) = await assess_over(transport, host)
    assert result.verdict is Verdict.STARTING, result.summary
    assert result.run is not None and result.run.root.pid == pid
    assert result.ready is not None and result.ready.anchor == len(earlier.encode())


@pytest.mark.integration
async def test_a_pid_tag_that_cannot_be_dated_leaves_ready_unknown(
    tmp_path: Path, servers: list[Server]
) -> None:
    """Only an undated tagged line (uvicorn's) after the older run's dated ones: it may be
    either run's, so readiness is unknown, never yes."""
    log = tmp_path / "vllm.log"
    server = HeldServer(log, ["sleep", "60.25"])
    servers.append(server)
    pid = server.pid
    old = time.time() - 3600
    log.write_text(
        f"(APIServer pid={pid}) INFO {vllm_stamp(old)} [api_server.py:1208] vLLM server\n"
        f"(APIServer pid={pid}) INFO:     Application startup complete.\n"
    )
    server.go()
    wait_until(lambda: psutil.Process(pid).name() == "sleep", 10, "the sleep to run")
    host = host_of(service("v", log, engine="vllm"))  # the sleep writes the log
    (result,) = await probe_locally(host)
    assert result.verdict is Verdict.STARTING, result.summary
    assert result.ready is not None and result.ready.seen is None
    assert f"ready: unknown (lines tagged pid={pid} follow an older run's" in result.summary


# ---------------------------------------------------------------- 6: year-less stamps


def a_later_day_this_year() -> datetime.date:
    """A day at least two days ahead in this calendar year: last year's line of that day
    would land in the future if given this year."""
    today = datetime.date.today()
    for ahead in (14, 7, 3, 2):
        day = today + datetime.timedelta(days=ahead)
        if day.year == today.year:
            return day
    pytest.skip("no day left in this year to be last year's")


@pytest.mark.integration
async def test_last_years_yearless_lines_never_count_for_a_loading_run(
    transport: Transport, tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "vllm.log"
    day = a_later_day_this_year().strftime("%m-%d")
    earlier = (
        f"INFO {day} 07:00:05 api_server.py:712] vLLM API server version 0.7.3\n"
        f"INFO {day} 07:01:10 launcher.py:29] Route: /health, Methods: GET\n"
        "INFO:     Application startup complete.\n"
        f"INFO {day} 09:30:00 metrics.py:455] Avg prompt throughput: 0.0 tokens/s\n"
    )
    log.write_text(earlier)
    port = free_port()
    argv = sim_argv("vllm", port, load=60)
    argv[argv.index("--") : argv.index("--")] = ["--engine-version", "0.7.3"]
    server = HeldServer(log, argv, port)
    servers.append(server)
    # Its first line in a later second than its start: a line of the very second the
    # process started, after another run's, could be either run's (ready unknown).
    time.sleep(1.1)
    server.go()
    wait_until(
        lambda: "vLLM API server version" in log.read_text()[len(earlier) :], 20, "a first line"
    )
    host = host_of(service("v", log, engine="vllm", port=port, match=f"tui sim .*--port {port} "))
    (result,) = await assess_over(transport, host)
    assert result.verdict is Verdict.STARTING, result.summary
    assert result.ready is not None and result.ready.anchor == len(earlier.encode())


# ---------------------------------------------------------------- 7: paths that alias the log


@pytest.mark.integration
@pytest.mark.parametrize("alias", ["folder link", "file link", "double slash"])
async def test_a_log_reached_through_another_path_is_the_same_file(
    alias: str, transport: Transport, tmp_path: Path, servers: list[Server]
) -> None:
    real = tmp_path / "data" / "serve.log"
    real.parent.mkdir()
    if alias == "folder link":
        (tmp_path / "logs").symlink_to(real.parent)
        configured = f"{tmp_path}/logs/serve.log"
    elif alias == "file link":
        (tmp_path / "current.log").symlink_to(real)
        configured = f"{tmp_path}/current.log"
    else:
        configured = f"{tmp_path}/data//serve.log"
    server = Server(real)
    servers.append(server)
    server.wait_for(READY)
    (result,) = await assess_over(transport, host_of(service("s", configured, engine="sglang")))
    assert result.verdict is Verdict.LIVE, result.summary
    assert result.run is not None and result.run.root.pid == server.pid
    assert f"writes this log (inode {real.stat().st_ino})" in result.summary


@pytest.mark.integration
async def test_a_deleted_log_behind_a_folder_link_is_still_said_stale(
    transport: Transport, tmp_path: Path, servers: list[Server]
) -> None:
    real = tmp_path / "data" / "serve.log"
    real.parent.mkdir()
    (tmp_path / "logs").symlink_to(real.parent)
    configured = f"{tmp_path}/logs/serve.log"
    server = Server(real, load=60)
    servers.append(server)
    server.wait_for("Init torch distributed begin")
    old_inode = real.stat().st_ino
    real.unlink()
    real.write_text("")
    (result,) = await assess_over(transport, host_of(service("s", configured, engine="sglang")))
    assert result.verdict is Verdict.STALE, result.summary
    assert f"(deleted, inode {old_inode})" in result.summary
    assert result.writer_file is not None and result.writer_file.inode == old_inode


@pytest.mark.integration
def test_relaunch_refuses_beside_a_run_that_writes_the_log_through_a_link(
    tmp_path: Path, servers: list[Server], capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "data" / "serve.log"
    real.parent.mkdir()
    (tmp_path / "logs").symlink_to(real.parent)
    server = Server(real)
    servers.append(server)
    server.wait_for(READY)
    inode = real.stat().st_ino
    marker = str(1000 + free_port())
    config = tmp_path / "hosts.yaml"
    launch = {"command": ["sleep", marker]}
    config.write_text(
        "hosts:\n  h:\n    local: true\n    services:\n"
        + service("s", f"{tmp_path}/logs/serve.log", engine="sglang", launch=launch)
    )
    try:
        assert main(["relaunch", "h/s", "--config", str(config)]) == 2
        assert "has a run: LIVE" in capsys.readouterr().err
        assert real.stat().st_ino == inode  # the live run's log was not renamed away
    finally:
        for proc in psutil.process_iter(["cmdline"]):
            if proc.info["cmdline"] == ["sleep", marker]:
                proc.kill()


@pytest.mark.integration
def test_relaunch_rotates_the_file_a_linked_log_path_names_and_keeps_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "data" / "serve.log"
    real.parent.mkdir()
    real.write_text("the last run's lines\n")
    link = tmp_path / "serve.log"
    link.symlink_to(real)
    marker = str(1000 + free_port())
    config = tmp_path / "hosts.yaml"
    config.write_text(
        "hosts:\n  h:\n    local: true\n    services:\n"
        + service("s", link, engine="sglang", launch={"command": ["sleep", marker]})
    )
    try:
        assert main(["relaunch", "h/s", "--config", str(config)]) == 0, capsys.readouterr()
        assert link.is_symlink() and link.resolve() == real  # the link is left as it was
        [rotated] = real.parent.glob("serve.log.*")
        assert rotated.read_text() == "the last run's lines\n"
        wait_until(lambda: "babysit run=" in real.read_text(), 10, "the marker line")
        assert "the last run's lines" not in real.read_text()
    finally:
        for proc in psutil.process_iter(["cmdline"]):
            if proc.info["cmdline"] == ["sleep", marker]:
                proc.kill()


# ---------------------------------------------------------------- 8: another user's server


@pytest.mark.integration
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="needs root to start processes as other users",
)
def test_a_port_held_by_another_users_server_is_unknown_with_the_reason(
    tmp_path: Path, servers: list[Server]
) -> None:
    tmp_path.chmod(0o755)
    log = tmp_path / "serve.log"
    server = ServerAs("nobody", "nogroup", log)
    servers.append(server)
    server.wait_for(READY)
    host = host_of(service("s", log, engine="sglang", port=server.port))
    data = run_agent_as("daemon", "daemon", probe_request(list(host.services.values())))
    result = assess(ServiceProbe.from_json("gpu", "sglang", data, data["services"][0]))
    uid = psutil.Process(server.pid).uids().real
    assert result.verdict is Verdict.UNKNOWN, result.summary
    assert (
        f"port {server.port} listens, owned by uid {uid} (nobody), whose processes we may "
        "not read" in result.summary
    )


# ---------------------------------------------------------------- 9: a cut log


@pytest.mark.integration
async def test_copytruncate_of_a_live_server_keeps_it_live_by_health(
    transport: Transport, tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "serve.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    host = host_of(
        service(
            "s", log, engine="sglang", port=server.port, match=f"tui sim .*--port {server.port} "
        )
    )
    (before,) = await assess_over(transport, host)
    assert before.verdict is Verdict.LIVE, before.summary
    shutil.copyfile(log, tmp_path / "serve.log.1")  # logrotate's copytruncate
    os.truncate(log, 0)
    # The server writes on, at the start of the cut file (a probe of /health logs a line).
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/health", timeout=10):
        pass
    server.wait_for("Prefill batch")
    (after,) = await assess_over(transport, host)
    assert after.verdict is Verdict.LIVE, after.summary
    assert after.ready is not None and after.ready.by_http
    assert "by HTTP /health" in after.summary


@pytest.mark.integration
async def test_copytruncate_of_a_run_babysit_launched_keeps_it_live_by_health(
    transport: Transport, tmp_path: Path
) -> None:
    """The run record's anchor (offset 0 of the file it launched into) is no proof either."""
    log = tmp_path / "serve.log"
    port = free_port()
    text = "hosts:\n  gpu:\n    local: true\n" + "".join(
        f"  {line}\n" for line in service_yaml(log, port).splitlines()
    )
    host = parse_config(text).hosts["gpu"]
    try:
        launched = await launch(transport, host.services["qwen"])
        wait_until(lambda: READY in log.read_text(), 30, "the ready line")
        (before,) = await assess_over(transport, host)
        assert before.verdict is Verdict.LIVE and before.run is not None, before.summary
        assert before.run.root.pid == launched.pid
        assert before.ready is not None and before.ready.source == "run record"
        shutil.copyfile(log, tmp_path / "serve.log.1")
        os.truncate(log, 0)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10):
            pass
        wait_until(lambda: "Prefill batch" in log.read_text(), 20, "a line in the cut log")
        (after,) = await assess_over(transport, host)
        assert after.verdict is Verdict.LIVE, after.summary
        assert after.ready is not None and after.ready.by_http
    finally:
        for proc in psutil.process_iter(["cmdline"]):
            if f"--port {port} " in " ".join(proc.info["cmdline"] or []):
                proc.kill()


# ---------------------------------------------------------------- 10: one unreadable log


@pytest.mark.integration
async def test_an_unreadable_log_is_that_services_unknown_alone(
    transport: Transport, tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "serve.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    host = host_of(
        service("broken", "/proc/self/mem", engine="sglang")
        + service("good", log, engine="sglang", match=f"tui sim .*--port {server.port} ")
    )
    broken, good = await assess_over(transport, host)
    assert broken.verdict is Verdict.UNKNOWN, broken.summary
    assert "/proc/self/mem" in broken.summary and "Input/output error" in broken.summary
    assert good.verdict is Verdict.LIVE, good.summary


# ---------------------------------------------------------------- 11: babysit's own descriptors


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
def test_babysit_holding_the_log_for_its_own_stderr_is_not_a_run(
    kind: str, sshd: Sshd, tmp_path: Path, servers: list[Server]
) -> None:
    """Over ssh and pct the agent's own parents are sshd's, not babysit: the request says
    which processes are babysit's, and the agent checks them on the same boot."""
    log = tmp_path / "serve.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    sshd.add_container(105)
    reach = {
        "local": "gpu:\n  local: true\n",
        "ssh": sshd.host_yaml("gpu"),
        "pct": sshd.pct_host_yaml("gpu", 105),
    }[kind]
    entry_text = service("s", log, engine="sglang", port=server.port).strip()
    config = tmp_path / "hosts.yaml"
    config.write_text(
        "hosts:\n"
        + "".join(f"  {line}\n" for line in reach.splitlines())
        + f"    services:\n      {entry_text}\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [
            "sh",
            "-c",
            f'{sys.executable} -m tui status --json --config "$1" gpu/s 2>>"$2"',
            "sh",
            str(config),
            str(log),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
        check=False,
    )
    entry = json.loads(done.stdout)["services"][0]
    assert entry["verdict"] == "live", entry["summary"]
    assert done.returncode == 0


@pytest.mark.unit
def test_a_line_of_the_start_second_after_another_runs_is_not_taken_for_this_runs(
    tmp_path: Path,
) -> None:
    """Stamps are whole seconds: an older run's ready line stamped in the second the new
    run started (it ended then) must not become the new run's anchor."""
    from tui.agent.logtime import Dater
    from tui.agent.readiness import find_anchor
    from tui.engines import SPECS

    stamps = [[s.pattern, s.kind] for s in SPECS["sglang"].stamps]

    s = int(time.time()) - 100

    def stamp(t: float) -> bytes:
        return time.strftime("[%Y-%m-%d %H:%M:%S]", time.localtime(t)).encode()

    data = (
        stamp(s - 5) + b" an older run's line\n"
        + stamp(s) + b" The server is fired up and ready to roll!\n"
        + stamp(s + 1) + b" the new run's first line\n"
    )  # fmt: skip
    log = tmp_path / "serve.log"
    log.write_bytes(data)
    fd = os.open(log, os.O_RDONLY)
    try:
        at, how = find_anchor(fd, len(data), s + 0.7, Dater(stamps, time.time()), None)
        assert at is None and "share the start's second" in how
        # A line stamped after that second is this run's, as before.
        at, how = find_anchor(fd, len(data), s + 0.7 - 1, Dater(stamps, time.time()), None)
        assert at is not None
    finally:
        os.close(fd)


@pytest.mark.unit
def test_a_runs_args_line_in_the_starts_second_is_that_runs_anchor(tmp_path: Path) -> None:
    """A run prints its args line only as it begins, so an args line stamped in the
    second the process started, after an older run's lines, is this run's first; any
    other line of that second stays unsure."""
    from tui.agent.logtime import Dater
    from tui.agent.readiness import find_anchor
    from tui.engines import SPECS

    spec = SPECS["sglang"]
    stamps = [[s.pattern, s.kind] for s in spec.stamps]
    heads = [head.text.encode() for head in spec.args_heads]
    s = int(time.time()) - 100

    def stamp(t: float) -> bytes:
        return time.strftime("[%Y-%m-%d %H:%M:%S]", time.localtime(t)).encode()

    older = stamp(s - 2) + b" Received sigquit from a child process.\n"
    for first, found in (
        (b" server_args=ServerArgs(model_path='Qwen/Qwen3-8B')", True),
        (b" Init torch distributed begin.", False),
    ):
        data = older + stamp(s) + first + b"\n"
        log = tmp_path / "serve.log"
        log.write_bytes(data)
        fd = os.open(log, os.O_RDONLY)
        try:
            dater = Dater(stamps, time.time())
            at, how = find_anchor(fd, len(data), s + 0.3, dater, None, heads=heads)
        finally:
            os.close(fd)
        if found:
            assert (at, how) == (len(older), "timestamps and the run's args line")
        else:
            assert at is None and "share the start's second" in how
