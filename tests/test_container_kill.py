"""babysit's kill of a container service against a real dockerd: ``docker stop`` of the
run confirmed (by full id), its outcome, and a restarted container left alone."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from support.dockerd import Dockerd, sim_command, wait_running
from support.ports import free_port
from support.wait import wait_until

from tui.agent.container import container_facts
from tui.config import ContainerRef, Host, Service
from tui.core.answers import read
from tui.core.containers import ContainerState
from tui.core.runs import Assessment
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.ops.actions import Finished, Planned, ServiceActions
from tui.ops.container_kill import ContainerTarget, stop_container
from tui.ops.hostops import TransportOps
from tui.ops.kill import IdentityChanged
from tui.ops.kill_outcome import outcome_of
from tui.remote import SshLinks, open_transport

pytestmark = pytest.mark.integration

READY = "Application startup complete."


def container_service(name: str, port: int, **changes: object) -> tuple[Host, Service]:
    """A local host with one vLLM service that runs in the container ``name``."""
    host = parse_config(
        "hosts:\n  h:\n    local: true\n    services:\n"
        f"      qwen: {{engine: vllm, log: /unused, port: {port}}}\n"
    ).hosts["h"]
    service = dataclasses.replace(
        host.services["qwen"], log="", container=ContainerRef(name), **changes
    )
    return dataclasses.replace(host, services={"qwen": service}), service


def state_of(name: str) -> ContainerState:
    """The container as the agent's inspect sees it (the probe answer's ``container``)."""
    return ContainerState.from_json(read(container_facts(name), "container"))


def seen(host: Host, service: Service, container: ContainerState) -> Assessment:
    """What the user confirmed: the container's run as it is now."""
    return Assessment(host.name, service.name, Verdict.LIVE, "", 0.0, container=container)


def start_sim(dockerd: Dockerd, name: str, port: int, **options: object) -> ContainerState:
    dockerd.run_container(name, sim_command("vllm", port, load=0.2), **options)  # type: ignore[arg-type]
    wait_running(dockerd, name)
    log = state_of(name).log_path
    wait_until(lambda: READY in Path(log).read_text(), 30, "the sim to be ready")
    return state_of(name)


async def test_kill_stops_the_container_and_says_how_it_ended(dockerd: Dockerd) -> None:
    port = free_port()
    before = start_sim(dockerd, "kill-sim", port)
    host, service = container_service("kill-sim", port)
    transport = open_transport(host, SshLinks())
    actions = ServiceActions(TransportOps(transport, service), host, service, actor="cli")
    steps = [s async for s in actions.kill_container(before, None, grace=10)]

    assert isinstance(steps[0], Planned)
    end = steps[-1]
    assert isinstance(end, Finished) and end.ok, end.result
    after = state_of("kill-sim")
    assert not after.running and after.status == "exited"
    assert after.started_at == before.started_at, "stopped, not restarted"
    words = end.result
    assert f"container kill-sim ({before.short_id})" in words
    assert f"exit code {after.exit_code}" in words and "not OOM-killed" in words
    assert f"port {port} is closed" in words
    # The audit record, as any kill's: the container's first pid and its identity.
    record = json.loads(Path(_audit_log()).read_text().splitlines()[-1])
    assert record["action"] == "kill" and record["ok"] is True
    assert record["identity"]["pid"] == before.pid
    assert record["identity"]["run_id"].startswith(before.id)
    assert record["result"] == words


async def test_a_container_restarted_since_the_confirm_is_not_stopped(dockerd: Dockerd) -> None:
    port = free_port()
    confirmed = start_sim(dockerd, "restarted-sim", port)
    dockerd.docker("restart", "-t", "1", "restarted-sim")
    wait_running(dockerd, "restarted-sim")
    now = state_of("restarted-sim")
    assert now.started_at != confirmed.started_at
    host, service = container_service("restarted-sim", port)
    transport = open_transport(host, SshLinks())
    target = ContainerTarget.of(confirmed, None, service)
    with pytest.raises(IdentityChanged, match="restarted since you confirmed"):
        async for _ in stop_container(transport, target, grace=5):
            pass
    assert state_of("restarted-sim").running, "the new run was left alone"
    assert state_of("restarted-sim").started_at == now.started_at


async def test_the_stop_outcome_of_a_process_that_ignores_nothing(dockerd: Dockerd) -> None:
    """The outcome read from the kill's events names the container's end."""
    port = free_port()
    before = start_sim(dockerd, "outcome-sim", port)
    host, service = container_service("outcome-sim", port)
    transport = open_transport(host, SshLinks())
    target = ContainerTarget.of(before, None, service)
    events = [e async for e in stop_container(transport, target, grace=10)]
    kinds = [e.kind for e in events]
    assert kinds[0] == "started" and kinds[-1] == "done"
    assert "stopping" in kinds and "stopped" in kinds
    outcome = outcome_of(events)
    assert outcome.ok and outcome.stopped is not None
    assert outcome.stopped["exit_code"] == state_of("outcome-sim").exit_code
    assert outcome.exit_status == 0


def _audit_log() -> str:
    from tui.ops.audit import log_path

    return log_path()


async def test_the_confirm_and_the_cli_name_the_container_run(dockerd: Dockerd) -> None:
    from tui.app.screens.confirm import container_kill_plan, relaunch_plan
    from tui.commands.kill import container_text

    port = free_port()
    state = start_sim(dockerd, "confirm-sim", port)
    host, service = container_service("confirm-sim", port)
    a = dataclasses.replace(seen(host, service, state), checked_at=state.started_at or 0.0)
    plan = container_kill_plan(service, a, state).text()
    assert "container: confirm-sim (" + state.short_id + ")" in plan
    assert "image: babysit-test:empty" in plan
    assert f"PIDs: {state.pid}" in plan
    assert f"stop: docker stop -t 30 {state.id}" in plan
    assert "GPU memory: checking" in plan
    words = container_text(a, state, None)
    assert f"container confirm-sim ({state.short_id}), image babysit-test:empty" in words
    assert f"pids {state.pid}" in words and "GPU memory: not read" in words
    # A running container without launch: is restarted (replace); a stopped one started.
    assert f"command: docker restart -t 30 {state.id}" in relaunch_plan(service, None, a).text()
    dockerd.docker("stop", "-t", "5", "confirm-sim")
    stopped = dataclasses.replace(a, container=state_of("confirm-sim"))
    assert f"command: docker start {state.id}" in relaunch_plan(service, None, stopped).text()


def test_babysit_kill_stops_the_container_the_probe_sees(
    dockerd: Dockerd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    port = free_port()
    state = start_sim(dockerd, "cli-kill-sim", port)
    config = tmp_path / "hosts.yaml"
    config.write_text(
        "hosts:\n  h:\n    local: true\n    services:\n"
        f"      qwen: {{engine: vllm, container: cli-kill-sim, port: {port}, stop_grace: 10}}\n"
    )
    wrong = main(["kill", "h/qwen", "--pid", str(state.pid + 100000), "--config", str(config)])
    assert wrong == 2 and state_of("cli-kill-sim").running
    capsys.readouterr()
    status = main(["kill", "h/qwen", "--pid", str(state.pid), "--config", str(config)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert f"container cli-kill-sim ({state.short_id}), image babysit-test:empty" in err
    assert f"docker stop -t 10 {state.id}" in err
    after = state_of("cli-kill-sim")
    assert not after.running
    assert f"exit code {after.exit_code}" in err
