"""``canary.every``: while a service is watched its host's probe loop sends it a canary each
period, one at a time, none while the host does not answer or no run is there, and the
service's report carries the last."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.ports import free_port
from support.servers import Server
from support.wait import until

from tui.engines import spec
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

#: Seconds between canaries (the loop asks every INTERVAL).
EVERY = 5.0
INTERVAL = 0.2


class Clock:
    """This machine's clock, moved on by :meth:`advance` (to pass a canary's period
    without waiting for it)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


def hosts_yaml(host: str, log: Path, port: int) -> str:
    return (
        f"hosts:\n{host}    services:\n      qwen:\n        engine: sglang\n"
        f"        log: {json.dumps(str(log))}\n        port: {port}\n"
        f"        match: {json.dumps(f'tui sim .*--port {port} ')}\n"
        f"        canary: {{every: {EVERY}, max_tokens: 8, timeout: 30}}\n"
    )


def canaries_sent(log: Path) -> int:
    """The canaries the sim's access log says it answered."""
    api = spec("sglang").canary
    assert api is not None
    return log.read_text(errors="replace").count(f'"POST {api.path} ')


async def test_a_watched_service_gets_a_canary_each_period_and_the_report_carries_the_last(
    tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(tmp_path / "serve.log")
    servers.append(server)
    server.wait_for("The server is fired up and ready to roll!")
    host = parse_config(hosts_yaml("  here:\n    local: true\n", server.log, server.port)).hosts[
        "here"
    ]
    clock = Clock()
    sessions = Sessions(clock=clock, interval=INTERVAL)
    session = sessions.session(host, host.services["qwen"])
    watch = session.watch
    assert watch is not None
    try:
        watch.want("test", ["qwen"])
        watch.start()
        first = await until(lambda: session.facts.canary, "the first canary's result", timeout=60)
        assert first.ok, first
        assert first.run_pid == server.pid
        report = session.report(clock())
        assert report.canary == first
        # Within the period no other canary goes, however often the host is asked.
        asked = watch.answers
        await until(lambda: watch.answers >= asked + 5, "five more answers")
        assert session.facts.canary is first
        assert canaries_sent(server.log) == 1
        clock.advance(EVERY)
        second = await until(
            lambda: session.facts.canary if session.facts.canary is not first else None,
            "the next period's canary",
            timeout=60,
        )
        assert second.ok, second
        assert session.report(clock()).canary == second
        assert canaries_sent(server.log) == 2
    finally:
        await sessions.close()


async def test_no_canary_goes_to_a_host_that_does_not_answer(tmp_path: Path) -> None:
    text = hosts_yaml(f"  down:\n    ssh: root@127.0.0.1:{free_port()}\n", tmp_path / "l", 8000)
    host = parse_config(text).hosts["down"]
    sessions = Sessions(interval=0.05)
    session = sessions.session(host, host.services["qwen"])
    watch = session.watch
    assert watch is not None
    try:
        watch.want("test", ["qwen"])
        watch.start()
        await until(lambda: watch.answers >= 3, "three failed round trips")
        assert watch.state.failure is not None
        assert session.facts.canary is None
        assert not session.canary_running
    finally:
        await sessions.close()


async def test_no_canary_goes_to_a_service_without_a_run(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text("[2026-12-01 09:20:06] The server is fired up and ready to roll!\n")
    host = parse_config(hosts_yaml("  here:\n    local: true\n", log, free_port())).hosts["here"]
    sessions = Sessions(interval=INTERVAL)
    session = sessions.session(host, host.services["qwen"])
    watch = session.watch
    assert watch is not None
    try:
        watch.want("test", ["qwen"])
        watch.start()
        await until(lambda: watch.answers >= 3, "three answers")
        assert watch.state.failure is None
        assert session.report(time.time()).assessment.run is None
        assert session.facts.canary is None
    finally:
        await sessions.close()
