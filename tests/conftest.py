"""Shared fixtures: a real sshd on loopback, simulated servers that are always
stopped, and helpers to write hosts.yaml files."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from support.dockerd import Dockerd, DockerUnavailable, start_dockerd
from support.servers import Server
from support.serving import Running
from support.sshd import Sshd, start_sshd

from tui.hostsfile import parse_config
from tui.remote import SshLinks, Transport, open_transport

VMID = 105

# Hypothesis's deadline is a wall-clock assertion: on a loaded machine a slow example
# fails a test that is right. Tests never assert wall-clock times, so none has one.
settings.register_profile("babysit", deadline=None)
settings.load_profile("babysit")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def state_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Run records, the audit log and the sims' GPU registry go to the test's own
    folders, never the user's nor another test's (tests may run side by side)."""
    dirs = {
        "host": tmp_path / "host-state",
        "local": tmp_path / "local-state",
        "sim": tmp_path / "sim-state",
    }
    monkeypatch.setenv("BABYSIT_HOST_STATE", str(dirs["host"]))
    monkeypatch.setenv("BABYSIT_STATE", str(dirs["local"]))
    monkeypatch.setenv("BABYSIT_SIM_STATE", str(dirs["sim"]))
    return dirs


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Sims a test starts (append them); each is killed when the test ends."""
    started: list[Server] = []
    try:
        yield started
    finally:
        for server in started:
            server.kill()


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One OpenSSH sshd for the whole run; every test makes its own connections to it."""
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def write_config(tmp_path: Path):
    """Write hosts.yaml text (a ``hosts:`` block is added) and return its path."""

    def write(hosts_text: str, name: str = "hosts.yaml") -> Path:
        body = "hosts:\n" + "".join(f"  {line}\n" for line in hosts_text.splitlines())
        path = tmp_path / name
        path.write_text(body)
        return path

    return write


def _transport_kinds() -> list[str]:
    return ["local", "ssh", "pct"]


@pytest.fixture(params=_transport_kinds())
async def transport(
    request: pytest.FixtureRequest, sshd: Sshd, tmp_path: Path
) -> AsyncIterator[Transport]:
    """The same host reached three ways: locally, over ssh, and through pct on that sshd."""
    kind = request.param
    sshd.add_container(VMID)
    text = "hosts:\n" + "".join(
        "  " + line + "\n"
        for line in (
            "here:\n  local: true\n" + sshd.host_yaml("viassh") + sshd.pct_host_yaml("viapct", VMID)
        ).splitlines()
    )
    config = parse_config(text)
    links = SshLinks()
    name = {"local": "here", "ssh": "viassh", "pct": "viapct"}[kind]
    try:
        yield open_transport(config.hosts[name], links)
    finally:
        await links.close()


@pytest.fixture(scope="session")
def dockerd_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dockerd]:
    """One real dockerd per test process (see tests/support/dockerd.py); the docker tests
    skip, with the daemon's own words, where it cannot run."""
    try:
        daemon = start_dockerd(tmp_path_factory.mktemp("dockerd"))
    except DockerUnavailable as error:
        pytest.skip(str(error))
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def dockerd(dockerd_daemon: Dockerd, monkeypatch: pytest.MonkeyPatch) -> Iterator[Dockerd]:
    """The daemon, with its ``docker`` shim first on this process's PATH (so a local
    agent's docker CLI reaches it); the test's containers are removed at its end."""
    monkeypatch.setenv("PATH", f"{dockerd_daemon.bin_dir}:{os.environ.get('PATH', '')}")
    try:
        yield dockerd_daemon
    finally:
        dockerd_daemon.remove_all()


@pytest.fixture
def running() -> Iterator[Running]:
    """Sims and load clients a test starts, ended when it ends (tests/support/serving.py)."""
    started = Running()
    try:
        yield started
    finally:
        started.end()
