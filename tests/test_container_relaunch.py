"""babysit's relaunch of a container service without ``launch:`` against a real dockerd:
``docker start`` of its stopped container (``docker restart`` of a running one), and a
readiness wait that reads only the new run's lines. Locally and through the real sshd."""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from support.dockerd import Dockerd, sim_command, wait_running
from support.ports import free_port
from support.sshd import Sshd
from support.wait import wait_until
from test_container_kill import READY, container_service, seen, start_sim, state_of

from tui.agent.container import docker_time
from tui.config import Host, LaunchSpec, Service
from tui.core.containers import ContainerState
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.ops.actions import Finished, ServiceActions
from tui.ops.hostops import TransportOps
from tui.ops.kill import IdentityChanged
from tui.ops.relaunch import Launched, LaunchRefused
from tui.remote import SshLinks, open_transport

pytestmark = pytest.mark.integration


def new_run_lines(state: ContainerState, text: str) -> list[float]:
    """The times of the json-file's records holding ``text`` at or after the run's start."""
    times = []
    for raw in Path(state.log_path).read_text().splitlines():
        record = json.loads(raw)
        at = docker_time(record["time"])
        if text in record["log"] and at is not None and at >= (state.started_at or 0):
            times.append(at)
    return times


def stopped_assessment(host: Host, service: Service, name: str):
    """The look right before the relaunch: the container's state, no run."""

    async def fresh():
        return dataclasses.replace(
            seen(host, service, state_of(name)), verdict=Verdict.DEAD, summary="exited"
        )

    return fresh


async def relaunch_steps(actions: ServiceActions, fresh, **options: object) -> list[object]:
    return [step async for step in actions.relaunch(fresh, **options)]  # type: ignore[arg-type]


async def test_start_of_a_stopped_container_waits_for_the_new_run(dockerd: Dockerd) -> None:
    port = free_port()
    first = start_sim(dockerd, "start-sim", port)
    dockerd.docker("stop", "-t", "5", "start-sim")
    host, service = container_service("start-sim", port)
    transport = open_transport(host, SshLinks())
    ops = TransportOps(transport, service, wait_timeout=60)
    actions = ServiceActions(ops, host, service, actor="cli")
    steps = await relaunch_steps(actions, stopped_assessment(host, service, "start-sim"))

    launched = next(s for s in steps if isinstance(s, Launched))
    assert launched.argv == ("docker", "start", first.id)
    assert launched.container is not None
    assert launched.container.id == first.id
    assert (launched.container.started_at or 0) > (first.started_at or 0), "a new StartedAt"
    end = steps[-1]
    assert isinstance(end, Finished) and end.ok, end.result
    assert end.wait is not None and READY in end.wait.reason
    # The ready line it saw is the new run's: the old run's is before the anchor, and
    # the new one is written at or after the new StartedAt.
    assert new_run_lines(launched.container, READY)
    assert launched.launch_offset > 0 and launched.inode == Path(first.log_path).stat().st_ino
    record = json.loads(Path(_audit_log()).read_text().splitlines()[-1])
    assert record["action"] == "wait" and record["ok"] is True
    assert record["command"] == ["docker", "start", first.id]


async def test_an_old_ready_line_never_counts_for_the_new_run(
    dockerd: Dockerd, tmp_path: Path
) -> None:
    """The first run was ready; the second dies while loading: its wait fails, though the
    json-file holds the first run's ready line."""
    flags = tmp_path / "flags"
    flags.mkdir()
    port = free_port()
    healthy = " ".join(sim_command("vllm", port, load=0.2))
    crash = " ".join(sim_command("vllm", port, load=0.5, scenario="oom"))
    script = f"if [ -e /flags/crash ]; then exec {crash}; else exec {healthy}; fi"
    dockerd.run_container("old-ready", ["/bin/sh", "-c", script], options=["-v", f"{flags}:/flags"])
    wait_running(dockerd, "old-ready")
    wait_until(lambda: READY in Path(state_of("old-ready").log_path).read_text(), 30, "ready")
    dockerd.docker("stop", "-t", "5", "old-ready")
    (flags / "crash").write_text("")
    host, service = container_service("old-ready", port)
    transport = open_transport(host, SshLinks())
    actions = ServiceActions(
        TransportOps(transport, service, wait_timeout=60), host, service, actor="cli"
    )
    steps = await relaunch_steps(actions, stopped_assessment(host, service, "old-ready"))

    end = steps[-1]
    assert isinstance(end, Finished) and not end.ok, end.result
    assert end.wait is not None and not end.wait.ready
    assert READY not in end.result
    assert all(READY not in line for line in end.wait.last_lines)
    assert end.exit_status == 1


async def test_a_start_of_a_running_container_is_refused(dockerd: Dockerd) -> None:
    port = free_port()
    start_sim(dockerd, "running-sim", port)
    host, service = container_service("running-sim", port)
    transport = open_transport(host, SshLinks())
    actions = ServiceActions(TransportOps(transport, service), host, service, actor="cli")
    with pytest.raises(LaunchRefused, match="is running; use --replace"):
        await relaunch_steps(actions, stopped_assessment(host, service, "running-sim"))


async def test_replace_restarts_the_confirmed_run_and_refuses_a_later_one(
    dockerd: Dockerd,
) -> None:
    port = free_port()
    confirmed = start_sim(dockerd, "replace-sim", port)
    host, service = container_service("replace-sim", port, stop_grace=5.0)
    transport = open_transport(host, SshLinks())
    ops = TransportOps(transport, service, wait_timeout=60)
    actions = ServiceActions(ops, host, service, actor="cli")
    fresh = stopped_assessment(host, service, "replace-sim")
    steps = [s async for s in actions.replace(None, None, fresh, grace=5, container=confirmed)]
    launched = next(s for s in steps if isinstance(s, Launched))
    assert launched.argv == ("docker", "restart", "-t", "5", confirmed.id)
    assert launched.container is not None
    assert (launched.container.started_at or 0) > (confirmed.started_at or 0)
    end = steps[-1]
    assert isinstance(end, Finished) and end.ok, end.result
    # The run confirmed is gone: a replace of it again is refused, nothing restarted.
    now = state_of("replace-sim")
    with pytest.raises(IdentityChanged, match="restarted since you confirmed"):
        async for _ in actions.replace(None, None, fresh, grace=5, container=confirmed):
            pass
    assert state_of("replace-sim").started_at == now.started_at


async def test_start_of_a_stopped_container_through_sshd(dockerd: Dockerd, sshd: Sshd) -> None:
    shutil.copy(dockerd.bin_dir / "docker", sshd.bin_dir / "docker")
    port = free_port()
    first = start_sim(dockerd, "ssh-start-sim", port)
    dockerd.docker("stop", "-t", "5", "ssh-start-sim")
    text = "hosts:\n" + "".join(
        f"  {line}\n"
        for line in (
            sshd.host_yaml("h").rstrip("\n")
            + "\n  services:\n"
            + f"    qwen: {{engine: vllm, log: /unused, port: {port}}}\n"
        ).splitlines()
    )
    host = parse_config(text).hosts["h"]
    _, local = container_service("ssh-start-sim", port)
    service = dataclasses.replace(host.services["qwen"], log="", container=local.container)
    host = dataclasses.replace(host, services={"qwen": service})
    links = SshLinks()
    try:
        transport = open_transport(host, links)
        ops = TransportOps(transport, service, wait_timeout=60)
        actions = ServiceActions(ops, host, service, actor="cli")
        steps = await relaunch_steps(actions, stopped_assessment(host, service, "ssh-start-sim"))
        launched = next(s for s in steps if isinstance(s, Launched))
        assert launched.container is not None
        assert (launched.container.started_at or 0) > (first.started_at or 0)
        end = steps[-1]
        assert isinstance(end, Finished) and end.ok, end.result
        assert new_run_lines(launched.container, READY)
        # And babysit's kill stops it through the same sshd.
        kill = [
            s async for s in actions.kill(None, None, grace=5, container=state_of("ssh-start-sim"))
        ]
        stopped = kill[-1]
        assert isinstance(stopped, Finished) and stopped.ok, stopped.result
        assert not state_of("ssh-start-sim").running
    finally:
        await links.close()


def _audit_log() -> str:
    from tui.ops.audit import log_path

    return log_path()


def run_argv(dockerd: Dockerd, name: str, command: list[str]) -> list[str]:
    """A full ``docker run -d …`` of ``command`` in the test image, as a service's
    ``launch:`` gives it (the harness's mounts, the host's network)."""
    from support.dockerd import IMAGE, MOUNTS, REPO

    argv = [str(dockerd.bin_dir / "docker"), "run", "-d", "--name", name, "--network", "host"]
    argv += ["--tmpfs", "/tmp", "-w", str(REPO), "-e", f"PYTHONPATH={REPO}"]
    prefix = Path(sys.base_prefix).resolve()
    for mount in [*(m for m in MOUNTS if Path(m).exists()), str(prefix), str(REPO)]:
        argv += ["-v", f"{mount}:{mount}:ro"]
    return [*argv, IMAGE, *command]


async def test_a_launch_of_docker_run_waits_for_the_new_container(dockerd: Dockerd) -> None:
    """launch: removes the old container and runs a new one: the wait waits for the new
    container's run and its ready line, never the old container's."""
    port = free_port()
    old = start_sim(dockerd, "launch-sim", port)
    dockerd.docker("stop", "-t", "5", "launch-sim")
    docker = str(dockerd.bin_dir / "docker")
    run = " ".join(
        shlex.quote(x) for x in run_argv(dockerd, "launch-sim", sim_command("vllm", port, load=1.0))
    )
    script = f"{shlex.quote(docker)} rm -f launch-sim && exec {run}"
    host, service = container_service(
        "launch-sim", port, launch=LaunchSpec(("/bin/sh", "-c", script))
    )
    transport = open_transport(host, SshLinks())
    actions = ServiceActions(
        TransportOps(transport, service, wait_timeout=60), host, service, actor="cli"
    )
    steps = await relaunch_steps(actions, stopped_assessment(host, service, "launch-sim"))

    end = steps[-1]
    assert isinstance(end, Finished) and end.ok, end.result
    assert READY in end.result
    new = state_of("launch-sim")
    assert new.id != old.id and new.running
    assert new_run_lines(new, READY)


def test_babysit_relaunch_starts_then_restarts_the_container(
    dockerd: Dockerd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    port = free_port()
    first = start_sim(dockerd, "cli-start-sim", port)
    dockerd.docker("stop", "-t", "5", "cli-start-sim")
    config = tmp_path / "hosts.yaml"
    config.write_text(
        "hosts:\n  h:\n    local: true\n    services:\n"
        f"      qwen: {{engine: vllm, container: cli-start-sim, port: {port}, stop_grace: 5}}\n"
    )
    argv = ["relaunch", "h/qwen", "--wait", "--timeout", "60", "--config", str(config)]
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 0, err
    assert f"ran docker start {first.id}: container cli-start-sim ({first.short_id})" in err
    started = state_of("cli-start-sim")
    assert started.running and (started.started_at or 0) > (first.started_at or 0)
    # Running now: a relaunch is refused; --replace restarts it.
    assert main(argv) == 2
    capsys.readouterr()
    status = main([*argv, "--replace"])
    err = capsys.readouterr().err
    assert status == 0, err
    assert f"ran docker restart -t 5 {first.id}" in err
    assert (state_of("cli-start-sim").started_at or 0) > (started.started_at or 0)
