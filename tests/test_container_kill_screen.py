"""The host screen's k and r on a container service, against a real dockerd: the
confirm names the container's run, the kill is its ``docker stop``, and r starts the
stopped container again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.dockerd import Dockerd
from support.ports import free_port
from support.wait import until
from test_app_actions import host_screen, modal_of, verdict, with_progress
from test_container_kill import start_sim, state_of

from tui.app.app import BabysitApp, HostView
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.ops.audit import log_path
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration


async def test_k_stops_the_container_and_r_starts_it_again(dockerd: Dockerd) -> None:
    port = free_port()
    first = start_sim(dockerd, "screen-sim", port)
    host = parse_config(
        "hosts:\n  h:\n    local: true\n    services:\n"
        f"      qwen: {{engine: vllm, container: screen-sim, port: {port}, stop_grace: 5}}\n"
    ).hosts["h"]
    app = BabysitApp(HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2))
    async with app.run_test(size=(120, 36)) as pilot:
        await until(lambda: verdict(app) is Verdict.LIVE, with_progress(pilot, "LIVE"), pilot=pilot)
        screen = host_screen(app)
        assert screen.check_action("kill", ()) is True
        await pilot.press("K")
        modal = await modal_of(pilot)
        text = modal.plan.text()
        assert f"container: screen-sim ({first.short_id})" in text
        assert "image: babysit-test:empty" in text
        assert f"stop: docker stop -t 5 {first.id}" in text
        await pilot.press("tab", "enter")
        await until(
            lambda: screen.progress.has_class("-ok"),
            with_progress(pilot, "the stop to finish"),
            pilot=pilot,
        )
        stopped = state_of("screen-sim")
        assert not stopped.running
        assert f"exit code {stopped.exit_code}" in screen.progress.words
        await until(lambda: verdict(app) is Verdict.DEAD, with_progress(pilot, "DEAD"), pilot=pilot)
        assert screen.check_action("relaunch", ()) is True, "a stopped container starts again"

        await pilot.press("r")
        modal = await modal_of(pilot)
        assert f"command: docker start {first.id}" in modal.plan.text()
        await pilot.press("tab", "enter")
        await until(
            lambda: screen.progress.has_class("-ok"),
            with_progress(pilot, "the start to be ready"),
            pilot=pilot,
        )
        again = state_of("screen-sim")
        assert again.running and (again.started_at or 0) > (first.started_at or 0)
    actions = [json.loads(line) for line in Path(log_path()).read_text().splitlines()]
    assert [(a["action"], a["actor"], a["ok"]) for a in actions] == [
        ("kill", "screen", True),
        ("relaunch", "screen", True),
        ("wait", "screen", True),
    ]
