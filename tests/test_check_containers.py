"""``babysit check`` says whether each container service's container is there, the way
every probe asks (the agent's ``docker inspect`` on the host), against a real daemon."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from support.dockerd import Dockerd, wait_running

from tui.cli import main

pytestmark = pytest.mark.integration


def test_check_names_each_container_and_says_which_is_missing(
    dockerd: Dockerd, write_config, capsys: pytest.CaptureFixture[str]
) -> None:
    present, missing = f"chk-{uuid.uuid4().hex[:8]}", f"chk-{uuid.uuid4().hex[:8]}"
    dockerd.run_container(present, ["sleep", "1000"])
    wait_running(dockerd, present)
    config: Path = write_config(
        "here:\n  local: true\n  services:\n"
        f"    up: {{engine: vllm, container: {present}}}\n"
        f"    gone: {{engine: vllm, container: {missing}}}\n"
    )
    capsys.readouterr()
    status = main(["check", "here", "--config", str(config), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1  # reached, with a problem
    by_service = {c["service"]: c for c in report["containers"]}
    assert by_service["up"]["ok"] is True
    assert by_service["up"]["words"].startswith(f"container {present} (")
    assert by_service["up"]["words"].endswith(": running")
    assert by_service["gone"]["ok"] is False
    assert f"no container {missing}" in by_service["gone"]["words"]
    assert any(p.startswith("gone: ") for p in report["problems"])

    assert main(["check", "here", "--config", str(config)]) == 1
    text = capsys.readouterr().out
    assert f"    up: container {present} (" in text
    assert "NOT USABLE" in text and "Traceback" not in text
