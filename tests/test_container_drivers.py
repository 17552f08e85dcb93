"""A container whose log driver writes no json-file (``--log-driver local``) is judged by
its container and /health, never NO-LOG; a real dockerd, the real agent."""

from __future__ import annotations

import json
import uuid

import pytest
from support.dockerd import Dockerd, sim_command, wait_running
from support.ports import free_port
from support.wait import wait_until

from tui.cli import main

pytestmark = pytest.mark.integration


def test_a_container_logging_through_the_local_driver_is_live_by_health(
    dockerd: Dockerd, write_config, capsys: pytest.CaptureFixture[str]
) -> None:
    name, port = f"drv-{uuid.uuid4().hex[:8]}", free_port()
    dockerd.run_container(
        name, sim_command("sglang", port, load=0.5), options=["--log-driver", "local"]
    )
    wait_running(dockerd, name)
    config = write_config(
        "here:\n  local: true\n  services:\n"
        f"    svc: {{engine: sglang, container: {name}, port: {port}}}\n"
    )

    def status() -> dict:
        capsys.readouterr()
        main(["status", "here/svc", "--config", str(config), "--json"])
        return json.loads(capsys.readouterr().out)["services"][0]

    entry = wait_until(lambda: (e := status())["verdict"] == "live" and e, 30, "live")
    assert "/health" in entry["summary"]
    assert "local driver" in entry["summary"] and "docker logs" in entry["summary"]
    assert entry["container"]["id"]
