"""One fact, one home: the host screen, the fleet row and ``status --json`` agree.

Three real sims on this machine: one live with speculative decoding, one whose
hosts.yaml asks for speculative decoding that the running server lacks (a hint),
and one dead. The app's fleet row and the host screen of each service, and a
``babysit status --json`` run in its own process, must say the same verdict, the
same hints and the same latest metric values. The sims are idle when the three
are read (after a burst of requests), so no line is written between the readings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.ports import free_port
from support.servers import REPO, sim_argv
from support.wait import until, wait_until

from tui.app.app import BabysitApp
from tui.app.fleet_rows import Fleet
from tui.app.screens.fleet import FleetScreen
from tui.app.screens.host import HostScreen
from tui.app.widgets.metrics_pane import HintsLine
from tui.commands.status import select
from tui.core.metrics.model import Metric
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

SPEC = ("--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3")
QUIET = ("--decode-log-interval", "5")
METRICS = (Metric.GEN_THROUGHPUT, Metric.ACCEPT_LEN, Metric.RUNNING, Metric.TOKEN_USAGE)


class Sim:
    def __init__(self, log: Path, port: int, extra: tuple[str, ...]) -> None:
        self.log, self.port = log, port
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                sim_argv("sglang", port, load=0.3, extra=extra),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )

    def wait_ready(self) -> None:
        wait_until(
            lambda: "fired up and ready" in self.log.read_text(errors="replace"),
            30,
            f"the sim on port {self.port} ready",
        )

    def burst(self, requests: int = 4) -> None:
        """A few requests at once, answered before this returns: decode lines, then quiet."""
        body = json.dumps({"text": "hi", "sampling_params": {"max_new_tokens": 120}}).encode()

        def one() -> None:
            request = urllib.request.Request(
                f"http://127.0.0.1:{self.port}/generate",
                data=body,
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - http to a sim on 127.0.0.1
                answer.read()

        threads = [threading.Thread(target=one) for _ in range(requests)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(40)

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


def service(name: str, log: Path, port: int, intended: tuple[str, ...]) -> str:
    launch = {"cwd": str(REPO), "command": sim_argv("sglang", port, load=0.3, extra=intended)}
    return (
        f"      {name}:\n"
        f"        engine: sglang\n        log: {json.dumps(str(log))}\n        port: {port}\n"
        f"        match: {json.dumps(f'tui sim .*--port {port} ')}\n"
        f"        launch: {json.dumps(launch)}\n"
    )


@pytest.fixture
def three(tmp_path: Path) -> Iterator[Path]:
    """hosts.yaml of ``here``: live (spec on), specoff (asked for, not running), dead."""
    ports = {name: free_port() for name in ("live", "specoff", "dead")}
    logs = {name: tmp_path / f"{name}.log" for name in ports}
    running = {"live": (*SPEC, *QUIET), "specoff": QUIET, "dead": QUIET}
    intended = {"live": (*SPEC, *QUIET), "specoff": (*SPEC, *QUIET), "dead": QUIET}
    sims = {name: Sim(logs[name], ports[name], running[name]) for name in ports}
    try:
        for sim in sims.values():
            sim.wait_ready()
        # Enough decode lines for the spec hint (it wants several throughput points).
        for _ in range(3):
            for sim in sims.values():
                sim.burst()
        sims["dead"].kill()
        config = tmp_path / "hosts.yaml"
        config.write_text(
            "hosts:\n  here:\n    local: true\n    services:\n"
            + "".join(service(n, logs[n], ports[n], intended[n]) for n in ports)
        )
        yield config
    finally:
        for sim in sims.values():
            sim.kill()


def status_json(config: Path) -> dict[str, dict[str, Any]]:
    """``babysit status --json`` in a process of its own, by service name."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "tui", "status", "--json", "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    return {s["service"]: s for s in json.loads(done.stdout)["services"]}


def latest(metrics: Any, metric: Metric) -> float | None:
    value = metrics.latest_of(metric) if metrics is not None else None
    return None if value is None else round(value.value, 6)


async def test_the_host_screen_the_fleet_row_and_status_json_agree(three: Path) -> None:
    config = parse_config(three.read_text(), str(three))
    fleet = Fleet.of(select(config, []), "all hosts")
    app = BabysitApp(fleet, sessions=Sessions(interval=0.5))
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        wanted = {"here/live": "LIVE", "here/specoff": "LIVE", "here/dead": "DEAD"}
        await until(
            lambda: {k: screen.rows[k].verdict for k in wanted if k in screen.rows} == wanted,
            "the three rows' first answers",
            timeout=30,
            pilot=pilot,
        )
        # the spec hint needs the first (long) tail: wait for it to be read
        await until(
            lambda: "hint" in screen.rows["here/specoff"].detail,
            "the spec-off hint",
            timeout=30,
            pilot=pilot,
        )
        printed = await asyncio.to_thread(status_json, three)
        for name, word in (("live", "LIVE"), ("specoff", "LIVE"), ("dead", "DEAD")):
            host = config.hosts["here"]
            session = app.sessions.session(host, host.services[name])
            row = screen.rows[f"here/{name}"]
            screen.table.focus()
            await pilot.press(*(["up"] * 5))
            # open this service's host screen as a user would: select its row, Enter
            order = list(screen.table.keys)
            for _ in range(order.index(f"here/{name}")):
                await pilot.press("down")
            await pilot.press("enter")
            await until(
                lambda: isinstance(app.screen, HostScreen),
                "the host screen",
                timeout=10,
                pilot=pilot,
            )
            host_screen = app.screen
            assert isinstance(host_screen, HostScreen)
            await until(
                lambda s=host_screen: s.assessment is not None,
                "the host screen's verdict",
                timeout=10,
                pilot=pilot,
            )
            report = session.report(app.clock())
            entry = printed[name]
            # the verdict
            assert row.verdict == word
            assert host_screen.assessment is not None
            assert host_screen.assessment.verdict.word == word
            assert entry["verdict"] == Verdict[word.replace("-", "_")].value
            # the hints
            shown = [h.rule.value for h in host_screen.query_one(HintsLine)._shown or ()]
            assert (
                shown == [h["rule"] for h in entry["hints"]] == [h.rule.value for h in report.hints]
            )
            assert ("hint" in row.detail) == bool(shown)
            # the latest metric values: the row's (its last answer), the screen's, status's
            row_report = screen.hosts["here"].reports[name]
            for metric in METRICS:
                assert latest(row_report.metrics, metric) == latest(report.metrics, metric)
                said = entry["metrics"].get(metric.value) if entry["metrics"] else None
                value = None if said is None else round(said["value"], 6)
                assert latest(report.metrics, metric) == value, (name, metric)
            await pilot.press("escape")
            await until(lambda: app.screen is screen, "the fleet again", timeout=10, pilot=pilot)
        assert [h["rule"] for h in printed["specoff"]["hints"]] == ["spec-no-accept-metrics"]
        assert printed["live"]["hints"] == []
