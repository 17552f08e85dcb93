"""The test harness's own Docker daemon works as the docker tests need it to."""

from __future__ import annotations

import json
import urllib.request

import pytest
from support.dockerd import Dockerd, sim_command, wait_running
from support.ports import free_port
from support.wait import wait_until

pytestmark = pytest.mark.integration


def test_a_sim_serves_from_a_container_on_the_host_network(dockerd: Dockerd) -> None:
    port = free_port()
    dockerd.run_container("harness-sim", sim_command("vllm", port, load=0.2))
    wait_running(dockerd, "harness-sim")

    def serving() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    wait_until(serving, 30, "the containerised sim to answer /health")
    state = json.loads(dockerd.docker("inspect", "harness-sim").stdout)[0]
    assert state["HostConfig"]["NetworkMode"] == "host"
    assert state["LogPath"].endswith("-json.log")
    # Its json-file log holds the sim's lines, each a JSON record with a time.
    with open(state["LogPath"], "rb") as log:
        first = json.loads(log.readline())
    assert set(first) == {"log", "stream", "time"}


def test_the_daemon_makes_no_bridge(dockerd: Dockerd) -> None:
    networks = dockerd.docker("network", "ls", "--format", "{{.Driver}}").stdout.split()
    assert "bridge" not in networks
