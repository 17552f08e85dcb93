"""The probe of a service in a container, against a real dockerd: the container's
facts, its one run (State.Pid and its cgroup), readiness counted from this run's
first json-file record, and the answers for a container that exited or is not there."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pwd
import shlex
import shutil
from pathlib import Path

import pytest
from support.dockerd import Dockerd, sim_command, wait_running
from support.ports import free_port
from support.sshd import Sshd
from support.wait import until, wait_until

from tui.agent.container import container_facts, docker_time
from tui.agent.containerprobe import container_log, run_bound
from tui.agent.jsonlog import json_readiness
from tui.config import Host, Service
from tui.core.containers import DOCKER_JSON, PLAIN
from tui.core.runs import ServiceProbe
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.agentcall import run_agent
from tui.remote.probe import probe_request
from tui.remote.transport import Transport

pytestmark = pytest.mark.integration

READY = {
    "vllm": "Application startup complete.",
    "sglang": "The server is fired up and ready to roll!",
}
ARGS = {"vllm": "non-default args: {", "sglang": "server_args="}


def local_host(body: str) -> Host:
    return parse_config(f"hosts:\n  here:\n    local: true\n    services:\n{body}").hosts["here"]


def service_of(host: Host) -> Service:
    return next(iter(host.services.values()))


async def ask(transport: Transport, service: Service, tail_bytes: int = 0) -> dict:
    """The service's raw entry of a probe answer (the answer's top under ``top``)."""
    result = await run_agent(transport, probe_request([service], tail_bytes=tail_bytes), timeout=30)
    assert result.ok, result.completed.stderr
    answer = json.loads(result.completed.stdout)
    (entry,) = answer["services"]
    ServiceProbe.from_json("here", service.engine.value, answer, entry)  # it reads back
    return dict(entry, top=answer)


def inspect(dockerd: Dockerd, name: str) -> dict:
    return json.loads(dockerd.docker("inspect", name).stdout)[0]


def records(path: str) -> list[tuple[int, dict]]:
    """(offset, record) of each line of a json-file."""
    out = []
    offset = 0
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                out.append((offset, json.loads(line)))
            offset += len(line)
    return out


def ready_records(path: str, engine: str) -> list[tuple[int, dict]]:
    return [(o, r) for o, r in records(path) if READY[engine] in r["log"]]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
async def test_a_sim_in_a_container_is_one_run_ready_by_its_json_time(
    dockerd: Dockerd, engine: str
) -> None:
    port = free_port()
    name = f"cprobe-{engine}"
    dockerd.run_container(name, sim_command(engine, port, load=0.3))
    wait_running(dockerd, name)
    service = service_of(
        local_host(f"      s: {{engine: {engine}, container: {name}, port: {port}}}\n")
    )
    transport = open_transport(local_host("      s: {log: /x}\n"), SshLinks())

    async def ready() -> dict | None:
        entry = await ask(transport, service, tail_bytes=4096)
        runs = entry["runs"]
        return entry if runs and runs[0].get("ready", {}).get("seen") else None

    entry = await until(ready, f"the {engine} container's run to be ready", timeout=60)
    state = inspect(dockerd, name)
    container = entry["container"]
    assert container["found"] is True
    assert container["id"] == state["Id"]
    assert container["status"] == "running"
    assert container["pid"] == state["State"]["Pid"]
    assert container["started_at"] == pytest.approx(docker_time(state["State"]["StartedAt"]))
    (run,) = entry["runs"]
    assert run["pid"] == state["State"]["Pid"]
    assert run["sources"] == ["container"]
    pids = {run["pid"], *(m["pid"] for m in run["members"])}
    assert pids <= set(container["pids"])
    assert entry["top"]["agent_pid"] not in pids
    # the log is the container's json-file, its tail the raw records
    log = entry["log"]
    assert log["format"] == DOCKER_JSON
    assert log["path"] == state["LogPath"]
    assert log["inode"] == Path(state["LogPath"]).stat().st_ino
    tail = base64.b64decode(log["tail"])
    assert tail.rstrip(b"\n").split(b"\n")[-1].endswith(b'Z"}')
    assert log["first_ts"] == pytest.approx(docker_time(records(state["LogPath"])[0][1]["time"]))
    ready = run["ready"]
    ((offset, record),) = ready_records(state["LogPath"], engine)
    assert ready["anchor"] == 0
    assert ready["offset"] == offset
    assert ready["at"] == pytest.approx(docker_time(record["time"]))
    assert ready["line"] == record["log"].rstrip("\n")
    assert ARGS[engine] in ready["args_line"]
    assert not entry["health_asked"]
    probe = ServiceProbe.from_json("here", engine, entry["top"], entry)
    assert probe.container is not None and probe.container.identity is not None
    assert probe.log.format == DOCKER_JSON
    assert probe.runs[0].ready is not None and probe.runs[0].ready.seen


async def test_a_restart_is_a_new_run_whose_records_begin_past_the_old_ready_line(
    dockerd: Dockerd,
) -> None:
    port = free_port()
    name = "cprobe-restart"
    dockerd.run_container(name, sim_command("vllm", port, load=6))
    wait_running(dockerd, name)
    service = service_of(
        local_host(f"      s: {{engine: vllm, container: {name}, port: {port}}}\n")
    )
    transport = open_transport(local_host("      s: {log: /x}\n"), SshLinks())
    path = inspect(dockerd, name)["LogPath"]
    wait_until(lambda: ready_records(path, "vllm"), 60, "the first run's ready line")
    first = await ask(transport, service)
    assert first["runs"][0]["ready"]["seen"] is True
    ((old_offset, _),) = ready_records(path, "vllm")

    await asyncio.to_thread(dockerd.docker, "restart", "-t", "5", name)
    state = inspect(dockerd, name)
    assert state["State"]["Pid"] != first["container"]["pid"]
    entry = await ask(transport, service)
    after = ready_records(path, "vllm")
    (run,) = entry["runs"]
    ready = run["ready"]
    assert entry["container"]["started_at"] > first["container"]["started_at"]
    assert run["pid"] == state["State"]["Pid"]
    assert ready["anchor"] > old_offset
    # the records before the anchor are the old run's, those from it on the new run's
    finished = docker_time(state["State"]["FinishedAt"])
    for at, record in records(path):
        assert (docker_time(record["time"]) > finished) == (at >= ready["anchor"])
    if len(after) == 1:  # the file still held only the old ready line after this answer
        assert ready["seen"] is False
        assert entry["health_asked"] is False

    async def ready_again() -> dict | None:
        got = (await ask(transport, service))["runs"]
        return got[0]["ready"] if got and got[0]["ready"].get("seen") else None

    ready = await until(ready_again, "the new run's own ready line", timeout=60)
    ((_, _), (new_offset, new_record)) = ready_records(path, "vllm")
    assert ready["offset"] == new_offset
    assert ready["at"] == pytest.approx(docker_time(new_record["time"]))


async def test_an_exited_container_has_no_run_and_keeps_its_facts(dockerd: Dockerd) -> None:
    name = "cprobe-exited"
    dockerd.run_container(name, ["/bin/sh", "-c", "echo 'the last words'; exit 3"])
    wait_until(
        lambda: dockerd.inspect(name, "{{.State.Status}}") == "exited", 30, f"{name} to exit"
    )
    service = service_of(local_host(f"      s: {{engine: vllm, container: {name}}}\n"))
    entry = await ask(open_transport(local_host("      s: {log: /x}\n"), SshLinks()), service, 4096)
    container = entry["container"]
    assert (container["found"], container["running"], container["status"]) == (
        True,
        False,
        "exited",
    )
    assert container["exit_code"] == 3
    assert container["finished_at"] is not None
    assert entry["runs"] == []
    assert entry["log"]["format"] == DOCKER_JSON and entry["log"]["regular"] is True
    tail = base64.b64decode(entry["log"]["tail"])
    assert json.loads(tail.splitlines()[-1])["log"] == "the last words\n"


async def test_a_missing_container_and_a_runtime_that_cannot_be_asked(dockerd: Dockerd) -> None:
    transport = open_transport(local_host("      s: {log: /x}\n"), SshLinks())
    missing = service_of(local_host("      s: {engine: vllm, container: cprobe-nothere}\n"))
    entry = await ask(transport, missing)
    assert entry["container"]["found"] is False
    assert entry["container"]["absent"] is True
    assert entry["runs"] == []
    assert entry["log"] == {"path": "", "exists": False, "regular": False, "format": DOCKER_JSON}
    if shutil.which("podman") is None:
        other = service_of(local_host("      s: {container: c1, runtime: podman}\n"))
        entry = await ask(transport, other)
        assert entry["container"]["found"] is False
        assert "podman not found on the host" in entry["container"]["problem"]
        assert "absent" not in entry["container"]


async def test_a_log_beside_the_container_is_read_as_any_runs(
    dockerd: Dockerd, tmp_path: Path
) -> None:
    port = free_port()
    name = "cprobe-ownlog"
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "serve.log"
    command = shlex.join(sim_command("sglang", port, load=0.3))
    dockerd.run_container(
        name,
        ["/bin/sh", "-c", f"exec {command} >>{log} 2>&1"],
        options=["-v", f"{logs}:{logs}"],
    )
    wait_running(dockerd, name)
    service = service_of(
        local_host(f"      s: {{engine: sglang, container: {name}, log: {log}, port: {port}}}\n")
    )
    transport = open_transport(local_host("      s: {log: /x}\n"), SshLinks())

    async def ready() -> dict | None:
        entry = await ask(transport, service)
        runs = entry["runs"]
        return entry if runs and runs[0].get("ready", {}).get("seen") else None

    entry = await until(ready, "the run writing its own log to be ready", timeout=60)
    assert entry["log"]["format"] == PLAIN
    assert entry["log"]["inode"] == log.stat().st_ino
    (run,) = entry["runs"]
    assert run["pid"] == inspect(dockerd, name)["State"]["Pid"]
    assert any(f["at_log"] and f["write"] for f in run["files"])
    assert READY["sglang"] in run["ready"]["line"]


async def test_a_container_on_a_host_reached_over_ssh(dockerd: Dockerd, sshd: Sshd) -> None:
    shutil.copy(dockerd.bin_dir / "docker", sshd.bin_dir / "docker")
    port = free_port()
    name = "cprobe-ssh"
    dockerd.run_container(name, sim_command("vllm", port, load=0.3))
    wait_running(dockerd, name)
    host = parse_config(
        "hosts:\n"
        + "".join(f"  {line}\n" for line in sshd.host_yaml("gpu").splitlines())
        + "    services:\n"
        + f"      s: {{engine: vllm, container: {name}, port: {port}}}\n"
    ).hosts["gpu"]
    links = SshLinks()
    try:
        transport = open_transport(host, links)

        async def ready() -> dict | None:
            entry = await ask(transport, service_of(host))
            runs = entry["runs"]
            return entry if runs and runs[0].get("ready", {}).get("seen") else None

        entry = await until(ready, "the container's run, over ssh, to be ready", timeout=60)
    finally:
        await links.close()
    state = inspect(dockerd, name)
    assert entry["container"]["id"] == state["Id"]
    assert entry["runs"][0]["pid"] == state["State"]["Pid"]
    assert entry["log"]["path"] == state["LogPath"]


def test_a_json_file_the_probe_may_not_read_says_so(dockerd: Dockerd) -> None:
    """The runtime answers (as for a member of the docker group), but the json-file under
    the daemon's root is root's: the log says why it cannot be read, and readiness is
    left to /health."""
    name = "cprobe-denied"
    dockerd.run_container(name, ["/bin/sh", "-c", "echo hello; sleep 60"])
    wait_running(dockerd, name)
    facts = container_facts(name)
    nobody = pwd.getpwnam("nobody").pw_uid
    os.seteuid(nobody)
    try:
        log = container_log(facts, 4096)
        ready = json_readiness(facts["log_path"], run_bound(facts), facts["started_at"], {})
    finally:
        os.seteuid(0)
    assert log["format"] == DOCKER_JSON
    assert log["problem"] == (
        f"{facts['log_path']} cannot be read: permission denied to user nobody"
    )
    assert "tail" not in log
    assert ready == {"anchor": None, "source": log["problem"], "seen": None}
