"""Guarded kill and relaunch against real simulated servers, locally, over sshd and through pct."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest
from support.servers import Server, free_port, service_yaml, wait_until
from support.sshd import Sshd
from support.wait import until

from tui.cli import main
from tui.config import Host
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.ops.kill import KillTarget, kill_run
from tui.ops.kill_outcome import outcome_of
from tui.ops.relaunch import (
    Launched,
    LaunchRefused,
    WaitProgress,
    WaitResult,
    check_preconditions,
    launch,
    preflight,
    wait_ready,
)
from tui.remote import SshLinks, Transport, open_transport
from tui.remote.probe import probe_host

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"


def local_config(log: Path, port: int, **kwargs: object) -> str:
    body = "h:\n  local: true\n" + service_yaml(log, port, **kwargs)  # type: ignore[arg-type]
    return "hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())


def host_for(kind: str, sshd: Sshd, log: Path, port: int, **kwargs: object) -> Host:
    if kind == "local":
        entry = "h:\n  local: true\n"
    elif kind == "ssh":
        entry = sshd.host_yaml("h")
    else:
        sshd.add_container(105)
        entry = sshd.pct_host_yaml("h", 105)
    body = entry.rstrip("\n") + "\n" + service_yaml(log, port, **kwargs)  # type: ignore[arg-type]
    return parse_config("hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())).hosts["h"]


async def wait_verdict(transport: Transport, host: Host, want: Verdict, timeout: float = 20.0):
    """The host's first assessment with the verdict ``want``, asked every 0.2 s."""
    seen = []

    async def answer():
        (a,) = await probe_host(transport, host)
        seen.append(a.line)
        return a if a.verdict is want else None

    return await until(
        answer, lambda: f"{want.name} (last: {seen[-1:]})", timeout=timeout, step=0.2
    )


@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
async def test_relaunch_outlives_its_connection_then_kill_takes_the_whole_tree(
    kind: str, sshd: Sshd, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-05-09 09:22:05] {READY}\n")  # a previous run's log
    port = free_port()
    host = host_for(kind, sshd, log, port, tp=4)
    service = host.services["qwen"]
    links = SshLinks()
    transport = open_transport(host, links)
    launched = await launch(transport, service)
    await links.close()  # the connection that started it is gone

    # The old log was renamed, not deleted; the marker and the run record are there.
    assert launched.rotated_to is not None
    assert Path(launched.rotated_to).read_text() == f"[2026-05-09 09:22:05] {READY}\n"
    assert log.read_text().startswith(f"babysit run={launched.run_id} pid={launched.pid} ")
    records = (Path(os.environ["BABYSIT_HOST_STATE"]) / "qwen/runs.jsonl").read_text().splitlines()
    assert json.loads(records[-1])["pid"] == launched.pid
    # Every argument, quotes, $, spaces and a newline included, reached the server intact.
    assert psutil.Process(launched.pid).cmdline() == list(service.launch.command)  # type: ignore[union-attr]

    links = SshLinks()
    try:
        transport = open_transport(host, links)
        a = await wait_verdict(transport, host, Verdict.LIVE)
        assert a.verdict is Verdict.LIVE, a.line
        assert a.run is not None and a.run.root.pid == launched.pid
        tree = a.run.pids
        assert len(tree) == 4, "--tp 4: the server and three scheduler workers"
        events = [
            e
            async for e in kill_run(
                transport, KillTarget.of(a.run, a.boot_id or "", service), grace=10
            )
        ]
        outcome = outcome_of(events)
        assert outcome.ok, [e.message for e in events]
        assert not any(
            psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in tree
        )
        assert outcome.port_owners == []
        assert f"port {port} is closed" in outcome.summary(KillTarget.of(a.run, "", service), port)
    finally:
        await links.close()


async def test_ignore_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, scenario="ignore-sigterm", load=0.3)
    try:
        server.wait_for(READY)
        host = parse_config(
            "hosts:\n  h:\n    local: true\n    services:\n"
            f"      qwen: {{engine: sglang, log: {json.dumps(str(log))}, "
            f"match: 'tui sim .*--port {server.port} '}}\n"
        ).hosts["h"]
        transport = open_transport(host, SshLinks())
        (a,) = await probe_host(transport, host)
        assert a.run is not None
        events = [
            e
            async for e in kill_run(
                transport, KillTarget.of(a.run, a.boot_id or "", host.services["qwen"]), grace=1.0
            )
        ]
        signals = [e.data.get("signal") for e in events if e.kind == "signalled"]
        assert signals == ["SIGTERM", "SIGKILL"]
        assert outcome_of(events).ok
        assert server.proc.wait(5) == -9
    finally:
        server.kill()


async def test_a_changed_identity_is_never_signalled(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=0.3)
    try:
        server.wait_for(READY)
        host = parse_config("hosts:\n  h:\n    local: true\n").hosts["h"]
        transport = open_transport(host, SshLinks())
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        ticks = int(Path(f"/proc/{server.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        # What the user confirmed was another process that had this pid before.
        stale = KillTarget(boot_id, ((server.pid, ticks - 1),), None)
        events = [e async for e in kill_run(transport, stale, grace=1)]
        assert [e.kind for e in events] == ["started", "changed", "done"]
        assert (
            events[1].message == f"pid {server.pid} is now another process: nothing was signalled"
        )
        assert server.proc.poll() is None
        other_boot = KillTarget("another-boot", ((server.pid, ticks),), None)
        events = [e async for e in kill_run(transport, other_boot, grace=1)]
        assert [e.kind for e in events] == ["refused"]
        assert server.proc.poll() is None
    finally:
        server.kill()


async def test_wait_is_fooled_by_no_old_line(tmp_path: Path) -> None:
    """The log holds an earlier run's ready line, sigquit and RuntimeError; the new run's
    wait neither succeeds nor fails on them, and succeeds when this run is ready."""
    log = tmp_path / "serve.log"
    first = Server(log, load=0.2)
    first.wait_for(READY)
    first.kill()
    crashed = Server(log, scenario="oom", load=0.2)
    crashed.proc.wait(20)
    old = log.read_text()
    assert READY in old and "Received sigquit" in old and "RuntimeError" in old
    anchor = log.stat().st_size
    fresh = Server(log, load=2.0)
    try:
        ticks = int(Path(f"/proc/{fresh.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        st = log.stat()
        launched = Launched(
            "r", fresh.pid, ticks, "b", str(log), st.st_dev, st.st_ino, anchor, (), None
        )
        host = parse_config(
            "hosts:\n  h:\n    local: true\n    services:\n"
            f"      qwen: {{engine: sglang, log: {json.dumps(str(log))}}}\n"
        ).hosts["h"]
        transport = open_transport(host, SshLinks())
        steps = [
            s
            async for s in wait_ready(
                transport, host.services["qwen"], launched, timeout=30, tick=0.3
            )
        ]
        result = steps[-1]
        assert isinstance(result, WaitResult) and result.ready, result
        assert any(isinstance(s, WaitProgress) for s in steps), "it waited through loading"
        new_part = log.read_text()[len(old) :]
        assert READY in new_part
        assert result.elapsed >= 1.5
    finally:
        fresh.kill()


async def test_oom_is_reported_with_its_own_lines_within_seconds(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-05-09 09:22:05] {READY}\n")
    port = free_port()
    host = host_for("local", None, log, port, scenario="oom", load=0.3)  # type: ignore[arg-type]
    transport = open_transport(host, SshLinks())
    launched = await launch(transport, host.services["qwen"])
    steps = [s async for s in wait_ready(transport, host.services["qwen"], launched, tick=0.3)]
    result = steps[-1]
    assert isinstance(result, WaitResult) and not result.ready
    assert result.elapsed < 10
    text = "\n".join(result.last_lines)
    assert "Not enough memory" in text or "RuntimeError" in text, text
    assert READY not in text, "the old run's ready line is not this run's"


@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
async def test_a_scheduler_killed_while_loading_fails_the_wait_with_its_own_line(
    kind: str, sshd: Sshd, tmp_path: Path
) -> None:
    """SGLang's main process says 'Rank 0 scheduler is dead' (the scheduler, killed by
    SIGKILL, printed nothing): that is the reason given, not the RuntimeError after it."""
    log = tmp_path / "serve.log"
    host = host_for(
        kind, sshd, log, free_port(), scenario="killed-at-load", load=0.3, version="0.5.21"
    )
    links = SshLinks()
    try:
        transport = open_transport(host, links)
        launched = await launch(transport, host.services["qwen"])
        steps = [
            s
            async for s in wait_ready(
                transport, host.services["qwen"], launched, timeout=30, tick=0.3
            )
        ]
    finally:
        await links.close()
    result = steps[-1]
    assert isinstance(result, WaitResult) and not result.ready, result
    assert result.reason.startswith("failed: "), result.reason
    assert "Rank 0 scheduler is dead. Please check if there are relevant logs." in result.reason


#: SGLang 0.5.23's startup death (engine.py), after the main process's line prefix.
DIED_DURING_INIT = (
    "Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 "
    "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."
)


async def test_scheduler_died_during_initialization_fails_the_wait(tmp_path: Path) -> None:
    """A server that prints 0.5.23's startup death and stays (as a wrapper that outlives
    it would): the line alone ends the wait, as failed, with it as the reason."""
    log = tmp_path / "serve.log"
    script = (
        "import sys, time\n"
        "stamp = time.strftime('%Y-%m-%d %H:%M:%S')\n"
        f"print(f'[{{stamp}}] Load weight begin. avail mem=78.50 GB', flush=True)\n"
        f"print(f'[{{stamp}}] ' + {DIED_DURING_INIT!r}, flush=True)\n"
        "time.sleep(60)\n"
    )
    launch_spec = {"command": [sys.executable, "-c", script]}
    host = parse_config(
        "hosts:\n  h:\n    local: true\n    services:\n"
        f"      qwen: {{engine: sglang, log: {json.dumps(str(log))}, "
        f"launch: {json.dumps(launch_spec)}}}\n"
    ).hosts["h"]
    transport = open_transport(host, SshLinks())
    launched = await launch(transport, host.services["qwen"])
    try:
        steps = [
            s
            async for s in wait_ready(
                transport, host.services["qwen"], launched, timeout=15, tick=0.3
            )
        ]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(launched.pid, signal.SIGKILL)  # the stand-in this test started
    result = steps[-1]
    assert isinstance(result, WaitResult) and not result.ready, result
    assert result.reason.startswith("failed: ") and DIED_DURING_INIT in result.reason


async def test_preconditions_are_said_plainly(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=0.2)
    try:
        server.wait_for(READY)
        host = host_for("local", None, log, server.port)  # type: ignore[arg-type]
        service = host.services["qwen"]
        transport = open_transport(host, SshLinks())
        (a,) = await probe_host(transport, host)
        checks = await preflight(transport, service)
        with pytest.raises(LaunchRefused, match="has a run: LIVE — pid"):
            check_preconditions(service, a, checks, replacing=False)
        with pytest.raises(
            LaunchRefused, match=f"port {server.port} is in use by pid {server.pid}"
        ):
            check_preconditions(service, a, checks, replacing=True)
    finally:
        server.kill()


def test_kill_cli_refuses_a_pid_that_is_not_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=0.2)
    try:
        server.wait_for(READY)
        config = tmp_path / "hosts.yaml"
        config.write_text(local_config(log, server.port))
        assert main(["kill", "h/qwen", "--pid", str(os.getpid()), "--config", str(config)]) == 2
        err = capsys.readouterr().err
        assert f"pid {os.getpid()} is not the run babysit sees (pid {server.pid};" in err
        assert "nothing was signalled" in err
        assert server.proc.poll() is None
        assert (
            main(
                [
                    "kill",
                    "h/qwen",
                    "--pid",
                    str(server.pid),
                    "--grace",
                    "5",
                    "--config",
                    str(config),
                ]
            )
            == 0
        )
        wait_until(lambda: server.proc.poll() is not None, 5, "the server to exit")
        audit = (Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl").read_text().splitlines()
        last = json.loads(audit[-1])
        assert (last["action"], last["host"], last["service"], last["ok"]) == (
            "kill",
            "h",
            "qwen",
            True,
        )
        assert last["identity"]["pid"] == server.pid
    finally:
        server.kill()


def test_relaunch_cli_waits_and_refuses_a_second_launch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "serve.log"
    port = free_port()
    config = tmp_path / "hosts.yaml"
    config.write_text(local_config(log, port, load=0.5))
    try:
        assert (
            main(
                [
                    "relaunch",
                    "h/qwen",
                    "--wait",
                    "--timeout",
                    "30",
                    "--json",
                    "--config",
                    str(config),
                ]
            )
            == 0
        )
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert lines[0]["type"] == "launched" and lines[-1]["type"] == "ready"
        assert main(["relaunch", "h/qwen", "--config", str(config)]) == 2
        assert "has a run: LIVE" in capsys.readouterr().err
        assert main(["relaunch", "h/qwen", "--replace", "--wait", "--config", str(config)]) == 0
    finally:
        for proc in psutil.process_iter(["cmdline"]):
            if f"--port {port} " in " ".join(proc.info["cmdline"] or []):
                proc.kill()
