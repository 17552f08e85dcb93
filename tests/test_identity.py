"""Which run is this? Every verdict from real situations: real sims, real files, real /proc."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.agent_as import run_agent_as
from support.servers import Server, free_port, wait_until
from support.sshd import Sshd

from tui.cli import main
from tui.config import Host
from tui.core.runs import Assessment
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.probe import probe_host, probe_request

READY = "The server is fired up and ready to roll!"


def local_host(log: Path, *servers: Server, port: int | None = None) -> Host:
    """A local host whose one service matches exactly ``servers`` (by their ports)."""
    port_line = f"        port: {port}\n" if port else ""
    ports = "|".join(str(s.port) for s in servers) or "none"
    text = (
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      svc:\n        engine: sglang\n        log: {json.dumps(str(log))}\n"
        f"{port_line}"
        f"        match: 'tui sim .*--port ({ports}) '\n"
    )
    return parse_config(text).hosts["gpu"]


async def assess_local(host: Host) -> Assessment:
    links = SshLinks()
    try:
        (result,) = await probe_host(open_transport(host, links), host)
        return result
    finally:
        await links.close()


@pytest.mark.integration
async def test_live_after_this_runs_ready_line(tmp_path: Path, servers: list[Server]) -> None:
    log = tmp_path / "serve.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    result = await assess_local(local_host(log, server, port=server.port))
    assert result.verdict is Verdict.LIVE, result.summary
    assert result.run is not None and result.run.root.pid == server.pid
    assert result.ready is not None and result.ready.seen is True
    assert f"pid {server.pid} (started " in result.summary
    assert f"writes this log (inode {log.stat().st_ino}); ready since " in result.summary


@pytest.mark.integration
async def test_starting_while_loading(tmp_path: Path, servers: list[Server]) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=60)
    servers.append(server)
    server.wait_for("Init torch distributed begin")
    result = await assess_local(local_host(log, server))
    assert result.verdict is Verdict.STARTING, result.summary
    assert "not ready yet (no ready line since this run began at offset 0)" in result.summary


@pytest.mark.integration
async def test_dead_when_the_run_is_gone(tmp_path: Path, servers: list[Server]) -> None:
    log = tmp_path / "serve.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    server.kill()
    result = await assess_local(local_host(log, server))
    assert result.verdict is Verdict.DEAD
    assert result.summary.startswith("no SGLang process on gpu; this log was last written ")
    assert result.summary.endswith("by a run that is gone")


@pytest.mark.integration
async def test_stale_when_the_server_writes_a_deleted_log(
    tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "serve.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    old_inode = log.stat().st_ino
    log.unlink()
    log.write_text("")  # someone "cleaned up" and a new empty file appeared
    result = await assess_local(local_host(log, server))
    assert result.verdict is Verdict.STALE, result.summary
    assert result.summary.endswith(
        f"writes {log} (deleted, inode {old_inode}); the file now at that path is inode "
        f"{log.stat().st_ino} and nothing writes it"
    )
    assert result.writer_file is not None and result.writer_file.inode == old_inode


@pytest.mark.integration
async def test_no_log_when_the_path_is_gone(tmp_path: Path, servers: list[Server]) -> None:
    log = tmp_path / "serve.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    log.unlink()
    result = await assess_local(local_host(log, server))
    assert result.verdict is Verdict.NO_LOG
    assert f"runs, but {log} does not exist; it writes inode" in result.summary


@pytest.mark.integration
async def test_ambiguous_when_two_runs_write_one_log(tmp_path: Path, servers: list[Server]) -> None:
    log = tmp_path / "serve.log"
    servers.extend([Server(log, load=60), Server(log, load=60)])
    servers[1].wait_for("Init torch distributed begin")
    result = await assess_local(local_host(log, *servers))
    assert result.verdict is Verdict.AMBIGUOUS
    assert result.summary.startswith("2 candidate runs: pid ")
    for server in servers:
        assert f"pid {server.pid} " in result.summary


@pytest.mark.integration
async def test_trap_1_rm_during_kill_then_failed_launch_is_never_live(
    tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "serve.log"
    old = Server(log)
    servers.append(old)
    old.wait_for(READY)
    log.unlink()  # `rm -f server.log` while the old server dies
    old.kill()
    new = Server(log, scenario="oom", load=0.2)  # the relaunch dies at once…
    servers.append(new)
    new.proc.wait(20)
    log.write_text("")  # …and a new empty file is at the path
    result = await assess_local(local_host(log, old, new))
    assert result.verdict is Verdict.DEAD, result.summary
    assert "this log is empty" in result.summary


@pytest.mark.integration
async def test_trap_2_old_sigquit_and_ready_lines_never_make_a_new_run_live_or_failed(
    tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "serve.log"
    first = Server(log)
    servers.append(first)
    first.wait_for(READY)
    first.kill()
    crashed = Server(log, scenario="oom", load=0.2)
    servers.append(crashed)
    crashed.proc.wait(20)
    text = log.read_text()
    assert "Received sigquit" in text and "RuntimeError" in text and READY in text
    time.sleep(1.1)  # the new run starts in a later second than the old runs' last line
    loading = Server(log, load=60)
    servers.append(loading)
    # the new run's own lines (the old runs printed the same ones), which it often
    # stamps in the very second it started
    wait_until(
        lambda: b"Init torch distributed begin" in log.read_bytes()[len(text.encode()) :],
        20,
        "the new run's first lines",
    )
    result = await assess_local(local_host(log, first, crashed, loading))
    assert result.verdict is Verdict.STARTING, result.summary
    assert result.ready is not None and result.ready.seen is False
    assert result.ready.anchor == len(text.encode())


@pytest.mark.integration
async def test_trap_3_a_reused_pid_is_not_the_recorded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-05-09 09:22:05] {READY}\n")
    record_dir = Path(os.environ["BABYSIT_HOST_STATE"]) / "svc"
    record_dir.mkdir(parents=True)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        start_ticks = int(
            Path(f"/proc/{stranger.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        )
        record = {
            "run_id": "r1",
            "boot_id": boot_id,
            "pid": stranger.pid,
            "start_ticks": start_ticks - 1000,
            "log_path": str(log),
        }
        (record_dir / "runs.jsonl").write_text(json.dumps(record) + "\n")
        result = await assess_local(local_host(log))
    finally:
        stranger.kill()
        stranger.wait()
    assert result.verdict is Verdict.DEAD
    assert f"the last launch's pid {stranger.pid} now belongs to another process" in result.summary


@pytest.mark.integration
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="needs root to start a probe as another user",
)
async def test_a_process_the_probe_cannot_read_is_reported(
    tmp_path: Path, servers: list[Server]
) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=60)
    servers.append(server)
    server.wait_for("Init torch distributed begin")
    host = local_host(log, server)
    tmp_path.chmod(0o755)
    data = run_agent_as("nobody", "nogroup", probe_request(list(host.services.values())))
    from tui.core.assess import assess
    from tui.core.runs import ServiceProbe

    result = assess(ServiceProbe.from_json("gpu", "sglang", data, data["services"][0]))
    assert result.verdict is Verdict.UNKNOWN
    assert (
        f"pid {server.pid} (user root) looks like this service but its open files cannot "
        "be read by this user" in result.summary
    )


@pytest.mark.integration
def test_host_down_is_unknown_with_the_reason_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "hosts.yaml"
    config.write_text(
        f"hosts:\n  down:\n    ssh: root@127.0.0.1:{free_port()}\n    connect_timeout: 2\n"
        "    services:\n      svc: {log: /var/log/x.log}\n"
    )
    assert main(["status", "--config", str(config), "--json"]) == 3
    entry = json.loads(capsys.readouterr().out)["services"][0]
    assert entry["verdict"] == "unknown"
    assert "connection refused" in entry["summary"]


@pytest.mark.integration
async def test_one_refresh_is_one_round_trip_over_ssh(
    sshd: Sshd, tmp_path: Path, servers: list[Server]
) -> None:
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    server = Server(log_a)
    servers.append(server)
    server.wait_for(READY)
    log_b.write_text("old\n")
    entry = sshd.host_yaml("gpu").rstrip("\n") + (
        "\n  services:\n"
        f"    a: {{engine: sglang, log: {json.dumps(str(log_a))}, port: {server.port}}}\n"
        f"    b: {{engine: vllm, log: {json.dumps(str(log_b))}}}\n"
    )
    host = parse_config("hosts:\n" + "".join(f"  {x}\n" for x in entry.splitlines())).hosts["gpu"]
    links = SshLinks()
    try:
        transport = open_transport(host, links)
        await transport.run(["true"], timeout=10)  # connected; now count sessions
        before = sshd.log.read_text().count("Starting session: command")
        results = await probe_host(transport, host)
        after = sshd.log.read_text().count("Starting session: command")
    finally:
        await links.close()
    assert after - before == 1
    assert [r.verdict for r in results] == [Verdict.LIVE, Verdict.DEAD], [r.line for r in results]


@pytest.mark.integration
def test_status_cli_text_json_and_exit_codes(
    tmp_path: Path, servers: list[Server], capsys: pytest.CaptureFixture[str]
) -> None:
    live_log, loading_log, dead_log = (
        tmp_path / n for n in ("live.log", "loading.log", "dead.log")
    )
    live, loading = Server(live_log), Server(loading_log, load=60)
    servers.extend([live, loading])
    live.wait_for(READY)
    loading.wait_for("Init torch distributed begin")
    dead_log.write_text("[2026-05-09 09:22:05] Decode batch, #running-req: 1\n")
    config = tmp_path / "hosts.yaml"
    config.write_text(
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      live: {{engine: sglang, log: {json.dumps(str(live_log))}, "
        f"match: '--port {live.port}'}}\n"
        f"      loading: {{engine: sglang, log: {json.dumps(str(loading_log))}, "
        f"match: '--port {loading.port}'}}\n"
        f"      dead: {{engine: sglang, log: {json.dumps(str(dead_log))}, "
        "match: '--model-path /nothing-x'}\n"
    )
    assert main(["status", "gpu/live", "--config", str(config)]) == 0
    assert main(["status", "gpu/live", "gpu/loading", "--config", str(config)]) == 1
    capsys.readouterr()
    assert main(["status", "--config", str(config)]) == 2
    text = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in text if not line.startswith(" ")] == [
        ["gpu/live", "●", "LIVE"],
        ["gpu/loading", "◐", "STARTING"],
        ["gpu/dead", "✖", "DEAD"],
    ]
    main(["status", "--config", str(config), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == 1
    first = data["services"][0]
    assert set(first) >= {
        "host",
        "service",
        "verdict",
        "summary",
        "process",
        "log",
        "ready",
        "checked_at",
    }
    assert first["process"]["pid"] == live.pid
    assert first["log"]["written_by_pid"] == live.pid
    assert first["ready"]["seen"] is True
    assert first["checked_at"][-6] in "+-"  # ISO-8601 with the UTC offset
    assert data["services"][2]["process"] is None


@pytest.mark.integration
async def test_probes_running_at_once_never_take_each_other_for_the_run(
    tmp_path: Path, servers: list[Server]
) -> None:
    """A probe's argv carries the service's match pattern: another probe must not match it."""
    log = tmp_path / "serve.log"
    server = Server(log)
    servers.append(server)
    server.wait_for(READY)
    host = parse_config(  # a pattern that also matches the probe's own argv
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      svc: {{engine: sglang, log: {json.dumps(str(log))}, "
        f"match: '--port {server.port}'}}\n"
    ).hosts["gpu"]
    results = await asyncio.gather(*(assess_local(host) for _ in range(6)))
    assert {r.verdict for r in results} == {Verdict.LIVE}, [r.line for r in results]
    assert {r.run.root.pid for r in results if r.run} == {server.pid}
    assert all(not r.others for r in results), [r.line for r in results]


@pytest.mark.unit
@pytest.mark.parametrize("started", [True, False])
async def test_an_unreadable_answer_is_unknown_not_a_crash(tmp_path: Path, started: bool) -> None:
    """The agent's output is not JSON; or something else ran in its place and printed a
    banner (a forced command): UNKNOWN with what was seen, never a crash."""
    from support.reports import report_host

    from tui.remote.agentcall import start_mark
    from tui.remote.transport import Completed, Transport

    class Garbled(Transport):
        chain = ("local",)

        async def run(self, argv, *, timeout, stdin=None):
            assert stdin is not None
            header, _, rest = stdin.partition(b"\n")
            size, _ = (int(x) for x in header.split())
            nonce = json.loads(rest[size:])["nonce"]
            mark = start_mark(nonce) if started else b""
            return Completed(tuple(argv), 0, b"Welcome to the GPU box!\n" + mark + b"{no", b"")

        def stream(self, argv, *, stdin=False):
            raise NotImplementedError

    host = local_host(tmp_path / "x.log")
    (report,) = await report_host(Garbled(), host)
    assert report.assessment.verdict is Verdict.UNKNOWN
    if started:
        assert "the probe's answer was unreadable" in report.assessment.summary
    else:
        assert "the agent did not start" in report.assessment.summary
        assert "printed 'Welcome to the GPU box!…'" in report.assessment.summary
