"""A ``--rm`` container that exits is DEAD with its exit status, which only the daemon's
events still hold once the container is removed (a real dockerd, the real agent)."""

from __future__ import annotations

import json
import uuid

import pytest
from support.dockerd import Dockerd
from support.wait import wait_until

from tui.cli import main

pytestmark = pytest.mark.integration


def test_a_removed_containers_exit_status_is_said(
    dockerd: Dockerd, write_config, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"rm-{uuid.uuid4().hex[:8]}"
    dockerd.run_container(name, ["sh", "-c", "echo going; exit 7"], options=["--rm"])
    wait_until(lambda: dockerd.docker("inspect", name, check=False).returncode != 0, 20, "removed")
    config = write_config(
        f"here:\n  local: true\n  services:\n    svc: {{engine: vllm, container: {name}}}\n"
    )
    capsys.readouterr()
    status = main(["status", "here/svc", "--config", str(config), "--json"])
    entry = json.loads(capsys.readouterr().out)["services"][0]
    assert (status, entry["verdict"]) == (2, "dead")
    assert entry["container"]["absent"] is True
    assert entry["container"]["last_exit"]["exit_code"] == 7
    assert f"no container {name} on here; its last run (" in entry["summary"]
    assert "exited with status 7 at" in entry["summary"]


def test_another_containers_exit_under_a_longer_name_is_not_taken(
    dockerd: Dockerd, write_config, capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon's event filter matches names by prefix: ``qwen`` must not take the exit
    of ``qwen-2``."""
    name = f"pre-{uuid.uuid4().hex[:8]}"
    dockerd.run_container(f"{name}-2", ["sh", "-c", "exit 5"], options=["--rm"])
    wait_until(
        lambda: dockerd.docker("inspect", f"{name}-2", check=False).returncode != 0,
        20,
        "removed",
    )
    config = write_config(
        f"here:\n  local: true\n  services:\n    svc: {{engine: vllm, container: {name}}}\n"
    )
    capsys.readouterr()
    main(["status", "here/svc", "--config", str(config), "--json"])
    entry = json.loads(capsys.readouterr().out)["services"][0]
    assert entry["verdict"] == "dead"
    assert entry["container"]["last_exit"] is None
    assert entry["summary"] == f"no container {name} on here"
