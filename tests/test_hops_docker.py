"""A host inside a container: the docker hop reached from this machine, over the real sshd
and through pct on it, against the harness's own Docker daemon.

The agent runs inside the container: it probes a sim that runs there and logs to a file
there (``babysit status`` says LIVE, ``babysit tail`` shows its lines). A stopped
container, a missing one and a missing python3 say so in plain words, in the
transports' errors, ``babysit status`` and ``babysit check``. The transports' contract
(argv byte for byte, status, stdin, streams ended when left) holds through the hop.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import test_transports as contract
import yaml
from support.dockerd import Dockerd, sim_command, wait_running
from support.ports import free_port
from support.sshd import Sshd
from support.wait import wait_until

from tui.cli import main
from tui.errors import HopFailed
from tui.hostsfile import parse_config
from tui.remote import SshLinks, Transport, open_transport

pytestmark = pytest.mark.integration

VMID = 141
#: The ways to the machine the docker CLI runs on.
BASES = ["local", "ssh", "pct"]
#: Where the sim inside the container writes its log (the container's own /tmp).
LOG = "/tmp/sim.log"
#: The container's lines babysit tail shows.
TAIL_LINES = 4


def box_name() -> str:
    return f"hops-{uuid.uuid4().hex[:10]}"


def host_entry(base: str, sshd: Sshd, docker: dict[str, object], **extra: object) -> dict:
    """The hosts.yaml entry of a host inside a container, reached ``base``'s way."""
    if base == "local":
        entry: dict[str, object] = {"local": True}
    elif base == "ssh":
        entry = yaml.safe_load(sshd.host_yaml("x"))["x"]
    else:
        sshd.add_container(VMID)
        entry = yaml.safe_load(sshd.pct_host_yaml("x", VMID))["x"]
    return {**entry, "docker": docker, **extra}


def write_hosts(tmp_path: Path, hosts: dict[str, dict]) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text(yaml.safe_dump({"hosts": hosts}, sort_keys=False))
    return path


@pytest.fixture
def docker_everywhere(dockerd: Dockerd, sshd: Sshd) -> Dockerd:
    """The daemon's docker CLI on this process's PATH and in the sshd's sessions' PATH."""
    shutil.copy(dockerd.bin_dir / "docker", sshd.bin_dir / "docker")
    return dockerd


def run_box(dockerd: Dockerd, command: list[str], options: tuple[str, ...] = ()) -> str:
    name = box_name()
    dockerd.run_container(name, command, options=list(options))
    wait_running(dockerd, name)
    return name


def status_of(config: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """The first service's entry in ``babysit status --json``."""
    capsys.readouterr()
    main(["status", "--json", "--config", str(config)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return json.loads(captured.out)["services"][0]


def check_of(config: Path, host: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    capsys.readouterr()
    status = main(["check", host, "--json", "--config", str(config)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, json.loads(captured.out)


# ---------------------------------------------------------------- the agent inside


@pytest.mark.parametrize("base", BASES)
def test_the_agent_probes_and_follows_a_server_inside_the_container(
    base: str,
    docker_everywhere: Dockerd,
    sshd: Sshd,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port()
    logged = ["sh", "-c", f'exec "$@" >> {LOG} 2>&1', "sim", *sim_command("vllm", port)]
    name = run_box(docker_everywhere, logged)
    service = {"engine": "vllm", "log": LOG, "port": port}
    config = write_hosts(
        tmp_path, {"box": host_entry(base, sshd, {"container": name}, services={"sim": service})}
    )

    def live() -> dict[str, object] | None:
        entry = status_of(config, capsys)
        return entry if entry["verdict"] == "live" else None

    entry = wait_until(live, 60, "the sim in the container LIVE")
    assert entry["log"]["path"] == LOG  # type: ignore[index]
    inside = docker_everywhere.docker("exec", name, "cat", LOG).stdout.splitlines()
    capsys.readouterr()
    assert main(["tail", "box/sim", "-n", str(TAIL_LINES), "--config", str(config)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert len(shown) == TAIL_LINES
    assert set(shown) <= set(inside), "the lines are the container's own file's"

    status, report = check_of(config, "box", capsys)
    assert status == 0, report["problems"]
    assert [hop["ok"] for hop in report["hops"]] == [True] * len(report["hops"])
    assert report["hops"][-1]["words"].startswith(
        f"the docker CLI answers; container {name} runs (babysit-test:empty, started "
    )
    assert report["python3"]["ok"] is True
    assert report["logs"][0]["exists"] is True


# ---------------------------------------------------------------- failures in plain words


def hop_failure(config: Path, host: str) -> str:
    """The error of running ``true`` on ``host`` (which must fail at a hop)."""

    async def run() -> str:
        links = SshLinks()
        try:
            transport = open_transport(parse_config(config.read_text()).hosts[host], links)
            with pytest.raises(HopFailed) as failed:
                await transport.run(["true"], timeout=30)
            return failed.value.message
        finally:
            await links.close()

    return asyncio.run(run())


@pytest.mark.parametrize("base", BASES)
def test_a_missing_and_a_stopped_container_say_so(
    base: str,
    docker_everywhere: Dockerd,
    sshd: Sshd,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stopped = run_box(docker_everywhere, ["sleep", "1000"])
    docker_everywhere.docker("stop", "-t", "0", stopped)
    missing = box_name()
    service = {"svc": {"engine": "vllm", "log": LOG}}
    config = write_hosts(
        tmp_path,
        {
            "gone": host_entry(base, sshd, {"container": missing}, services=service),
            "down": host_entry(base, sshd, {"container": stopped}, services=service),
        },
    )
    assert hop_failure(config, "gone").endswith(
        f"docker exec {missing}: No such container: {missing}"
    )
    assert hop_failure(config, "down").endswith(f"container {stopped} is not running")

    capsys.readouterr()
    main(["status", "--config", str(config)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert f"No such container: {missing}" in captured.out
    assert f"container {stopped} is not running" in captured.out

    status, report = check_of(config, "gone", capsys)
    assert (status, report["ok"]) == (3, False)
    assert [hop["ok"] for hop in report["hops"]] == [True] * (len(report["hops"]) - 1) + [False]
    assert f"No such container: {missing}" in report["hops"][-1]["words"]
    assert report["problems"] == [f"docker exec {missing}: " + report["hops"][-1]["words"]]
    status, report = check_of(config, "down", capsys)
    assert status == 3
    assert f"container {stopped} is not running (exited" in report["hops"][-1]["words"]
    capsys.readouterr()
    assert main(["check", "down", "--config", str(config)]) == 3
    text = capsys.readouterr().out
    assert f"NO  docker exec {stopped}: the docker CLI answers, but container" in text


def test_python3_missing_in_the_container_and_the_python_key(
    docker_everywhere: Dockerd, sshd: Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No python3 on the container's PATH (nor sh: the agent needs neither).
    name = run_box(docker_everywhere, ["/usr/bin/sleep", "1000"], ("-e", "PATH=/nowhere"))
    python = os.path.realpath(sys.executable)
    service = {"svc": {"engine": "vllm", "log": LOG}}
    config = write_hosts(
        tmp_path,
        {
            "plain": host_entry("ssh", sshd, {"container": name}, services=service),
            "named": host_entry(
                "ssh", sshd, {"container": name, "python": python}, services=service
            ),
        },
    )
    # A command without stdin runs in the lifeline, which needs the container's sh.
    assert f"container {name} has no sh: babysit needs one there" in hop_failure(config, "plain")
    capsys.readouterr()
    main(["status", "--json", "--config", str(config), "plain"])
    entry = json.loads(capsys.readouterr().out)["services"][0]
    assert entry["verdict"] == "unknown"
    assert f"python3 not found in container {name}" in entry["summary"]
    assert "docker: python:" in entry["summary"]
    main(["status", "--json", "--config", str(config), "named"])
    entry = json.loads(capsys.readouterr().out)["services"][0]
    assert entry["verdict"] != "unknown", entry["summary"]


def test_no_cli_and_no_daemon_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sshd: Sshd
) -> None:
    config = write_hosts(
        tmp_path,
        {
            "podman": host_entry("ssh", sshd, {"container": "x", "runtime": "podman"}),
            "nodaemon": {"local": True, "docker": {"container": "x"}},
        },
    )
    assert "the podman CLI is not installed where `podman exec` runs" in hop_failure(
        config, "podman"
    )
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI here")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "docker").write_text(
        f'#!/bin/sh\nDOCKER_HOST=unix://{tmp_path}/none.sock exec {shutil.which("docker")} "$@"\n'
    )
    (shim / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    words = hop_failure(config, "nodaemon")
    assert "docker exec x: the docker daemon does not answer: Cannot connect to the Docker" in words


# ---------------------------------------------------------------- the transports' contract


@pytest.fixture(params=BASES)
async def through_docker(
    request: pytest.FixtureRequest, docker_everywhere: Dockerd, sshd: Sshd, tmp_path: Path
) -> AsyncIterator[Transport]:
    """A running container reached through the docker hop, from each base."""
    name = run_box(docker_everywhere, ["sleep", "100000"])
    config = write_hosts(tmp_path, {"box": host_entry(request.param, sshd, {"container": name})})
    links = SshLinks()
    try:
        yield open_transport(parse_config(config.read_text()).hosts["box"], links)
    finally:
        await links.close()


async def test_arguments_arrive_byte_for_byte(through_docker: Transport) -> None:
    await contract.test_arguments_arrive_byte_for_byte(through_docker)


async def test_exit_status_stdout_stderr_and_stdin(through_docker: Transport) -> None:
    await contract.test_exit_status_stdout_stderr_and_stdin(through_docker)


async def test_missing_command_is_exit_127_not_an_error(through_docker: Transport) -> None:
    await contract.test_missing_command_is_exit_127_not_an_error(through_docker)
    missing = await through_docker.run(["no-such-command-babysit"], timeout=20, stdin=b"")
    assert missing.exit_status == 127 and b"no-such-command-babysit" in missing.stderr
    assert missing.stdout == b""


async def test_leaving_a_stream_ends_the_command_inside(through_docker: Transport) -> None:
    await contract.test_stream_yields_output_and_leaving_it_ends_the_command(through_docker)


async def test_a_timeout_ends_the_command_inside(through_docker: Transport) -> None:
    await contract.test_timeout_ends_the_remote_command(through_docker)
