"""The host screen of a container service: its log pane shows the container's own lines
and says which source they come from (the json-file, or ``docker logs``), with a real
dockerd, the real agent and the real follower."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.dockerd import Dockerd, wait_running
from support.sessions import StandIns
from support.wait import until
from test_app_host_screen import SIZE, log_view, screen_text

from tui.app.app import make_app
from tui.config import Config, ContainerRef
from tui.core.logcursor import EventKind, EventRow, LogLine
from tui.hostsfile import parse_config

pytestmark = pytest.mark.integration


def container_config(name: str) -> Config:
    """A local host whose service ``svc`` runs in container ``name`` (no ``log:``)."""
    config = parse_config("hosts:\n  here:\n    local: true\n    services:\n      svc: {log: /x}\n")
    host = config.hosts["here"]
    service = replace(host.services["svc"], log="", container=ContainerRef(name))
    return replace(config, hosts={"here": replace(host, services={"svc": service})})


@pytest.mark.parametrize("driver", ["json-file", "local"])
async def test_the_log_pane_shows_the_containers_lines_and_their_source(
    dockerd: Dockerd, driver: str
) -> None:
    name = f"screened-{driver}"
    script = 'sleep 0.3; i=0; while [ $i -lt 5 ]; do echo "line $i"; i=$((i+1)); done; '
    dockerd.run_container(
        name, ["sh", "-c", script + "exec sleep 600"], options=["--log-driver", driver]
    )
    wait_running(dockerd, name)
    app = make_app(container_config(name), ["here/svc"], sessions=StandIns())
    async with app.run_test(size=SIZE) as pilot:
        view = log_view(app)

        def lines() -> list[str]:
            return [r.text for r in view.buffer if isinstance(r, LogLine)]

        await until(lambda: "line 4" in lines(), "the container's lines", pilot=pilot)
        await pilot.pause()
        assert lines() == [f"line {i}" for i in range(5)]
        sources = [
            r.event.message
            for r in view.buffer
            if isinstance(r, EventRow) and r.event.kind is EventKind.SOURCE
        ]
        expected = (
            f"following the json-file of container {name}"
            if driver == "json-file"
            else f"following docker logs of {name} since"
        )
        assert sources and sources[0].startswith(expected)
        assert "line 4" in screen_text(app)
        assert expected in screen_text(app), "the pane says where its lines come from"
        # The pane's title names the container, not the runtime's long folder; a stream
        # shows no inode or size it does not have.
        title = str(view.border_title)
        if driver == "json-file":
            assert title.startswith(f"container {name} · json-file · inode ")
        else:
            assert title == f"container docker logs {name}"
