"""Snapshots of WEDGED: the host screen's banner for each cause, at 80x24 and the usual size,
a fleet with a WEDGED row, and the banner and canary line as widgets.

As in test_app_snapshots: fixed rows, a frozen clock, UTC, and nothing that connects
anywhere. The WEDGED assessment is a real LIVE one of a self-consistent probe, with
the verdict, the summary and the evidence a stalled, fatal or timed-out run is given.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import test_wedged_views as views
from support.sessions import StandIns
from test_app_fleet import SIZE as FLEET_SIZE
from test_app_fleet import answered, fixed_answers
from test_app_fleet import make_app as make_fleet
from test_app_snapshots import (
    DEV,
    GPU_CSV,
    HOSTS,
    INODE,
    LOG,
    NOW,
    REPORTED,
    SIZE,
    STARTUP,
    ConnectedTransport,
    probed,
    rows_shown,
    utc,  # noqa: F401 - a fixture
)
from textual.app import App, ComposeResult

import tui.app
from tui.app.app import BabysitApp
from tui.app.app import make_app as make_babysit
from tui.app.widgets.metrics_pane import CanaryLine
from tui.app.widgets.run_banner import RunBanner
from tui.config import Host, Service
from tui.core.canary import CanaryOutcome, CanaryResult
from tui.core.follow import FileInfo
from tui.core.logcursor import LogLine, Row
from tui.core.report import ProbeDetails
from tui.core.runs import Assessment
from tui.core.serving import WedgeCause, Wedged
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config

#: Clock times drawn in UTC whatever the machine's zone (the ``utc`` fixture).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("utc")]

NARROW = (80, 24)
APP_FOLDER = Path(tui.app.__file__).parent
#: The last decode line of the stalled run: 09:21:21, 190 s before the frozen clock.
STALLED_AT = NOW - 190
DECODE = (
    "[2026-01-12 09:{m:02d}:{s:02d} TP0] Decode batch. #running-req: 2, #token: {tok}, "
    "token usage: 0.01, accept len: 3.81, gen throughput (token/s): 58.{d}2, #queue-req: 1"
)
NCCL = (
    "[rank0]:[E112 09:23:02.418220 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=2211, OpType=ALLREDUCE, NumelIn=4096, "
    "NumelOut=4096, Timeout(ms)=600000) ran for 600031 milliseconds before timing out."
)


def stalled_rows(*, fatal: bool) -> list[Row]:
    """Start-up, decode lines until 09:21:21, then nothing (or the NCCL watchdog's line)."""
    texts = list(STARTUP)
    for i in range(24):
        minute, second = divmod(int(STALLED_AT) % 3600 - 2 * (23 - i), 60)
        texts.append(DECODE.format(m=minute, s=second, tok=900 + 40 * i, d=i % 10))
    if fatal:
        texts.append(NCCL)
    rows: list[Row] = []
    offset = 0
    for text in texts:
        size = len(text.encode()) + 1
        rows.append(LogLine(text, DEV, INODE, offset, size, STALLED_AT))
        offset += size
    return rows


class StalledFollower:
    """Yields the stalled run's rows once, then waits like a log nobody writes."""

    file = FileInfo(LOG, DEV, INODE, 1_289_748, STALLED_AT)

    def __init__(self, *, fatal: bool) -> None:
        self.fatal = fatal

    async def rows(self) -> AsyncIterator[list[Row]]:
        yield stalled_rows(fatal=self.fatal)
        await asyncio.Event().wait()


#: Each cause: since when, the summary (it begins with what made it WEDGED), the evidence.
CAUSES: dict[str, tuple[float, str, tuple[str, ...]]] = {
    WedgeCause.STALL: (
        STALLED_AT,
        "no progress for 3 min while 2 requests are running and 1 is queued: pid 67115 "
        "(started 09:20:06, 4 min ago) is alive and writes this log (inode 9012)",
        (
            "2 requests running, 1 queued (the log's latest metric line, byte 1289612, 09:21:21)",
            "no progress since 09:21:21 (3 min ago): the last progress line, byte 1289612",
            "3 clients wait for an answer, the longest for 3 min (the kernel's tcp_info)",
            "the generation counters did not grow since 09:21:21",
        ),
    ),
    WedgeCause.FATAL: (
        NOW - 89,
        "a fatal line of this run at 09:23:02 while pid 67115 (started 09:20:06, 4 min ago) "
        "lives on: the engine stopped serving",
        (
            f"byte 1289700, 09:23:02: {NCCL}",
            "pid 67115 is alive and owns the log; /health answers 200",
        ),
    ),
    WedgeCause.CANARY: (
        NOW - 51,
        "the canary sent at 09:23:40 timed out while pid 67115 (started 09:20:06, 4 min ago) "
        "lives on",
        (
            "the canary sent at 09:23:40 got no answer in 30 s",
            "no progress since 09:21:21 (3 min ago): the last progress line, byte 1289612",
        ),
    ),
}


def wedged(cause: str) -> Assessment:
    """kpro5/qwen WEDGED for ``cause``: a real assessment of a live probe, wedged."""
    since, summary, evidence = CAUSES[cause]
    live = probed(writes=INODE, ready=True, mtime=STALLED_AT)
    return dataclasses.replace(
        live, verdict=Verdict.WEDGED, summary=summary, wedged=Wedged(since, cause, evidence)
    )


def timed_out_canary() -> CanaryResult:
    return CanaryResult(
        "kpro5",
        "qwen",
        CanaryOutcome.TIMEOUT,
        sent_at=NOW - 51,
        run_pid=67115,
        elapsed_s=30.0,
        sampling={"temperature": 0.6, "top_p": 0.95},
        sampling_source="generation_config",
    )


def make_host_app(cause: str) -> BabysitApp:
    assessment = wedged(cause)
    sessions = StandIns(
        answers=lambda host, services: [
            (assessment, ProbeDetails(args_line=REPORTED, gpu_csv=GPU_CSV))
        ],
        follower=lambda session, cursor, pid: StalledFollower(fatal=cause == WedgeCause.FATAL),
        transport=ConnectedTransport(),
        clock=lambda: NOW,
        interval=3600,
    )
    if cause == WedgeCause.CANARY:
        config = parse_config(HOSTS)
        host = config.hosts["kpro5"]
        sessions.session(host, host.services["qwen"]).facts.canary_done(timed_out_canary())
    return make_babysit(parse_config(HOSTS), ["kpro5/qwen"], sessions=sessions, clock=lambda: NOW)


@pytest.mark.parametrize("cause", list(CAUSES))
@pytest.mark.parametrize("size", [SIZE, NARROW], ids=["120x36", "80x24"])
def test_the_banner_says_since_when_and_on_what_evidence(
    cause: str, size: tuple[int, int], snap_compare: Any
) -> None:
    """WEDGED: the verdict, since when and why first, the summary, then the evidence."""
    assert snap_compare(make_host_app(cause), terminal_size=size, run_before=rows_shown)


def wedged_answers(host: Host, services: list[Service]) -> list[Any]:
    """The fleet's fixed answers, with kpro5/dp-6 (its decode lines stopped 3 minutes ago)
    stalled."""
    answers = fixed_answers(host, services)
    for index, service in enumerate(services):
        if service.name == "dp-6":
            assessment, details = answers[index]
            evidence = (
                "9 requests running (the log's latest metric line, byte 3998906, 09:21:31)",
                "no progress since 09:21:31 (3 min ago): the last progress line, byte 3998906",
            )
            answers[index] = (
                dataclasses.replace(
                    assessment,
                    verdict=Verdict.WEDGED,
                    summary="no progress for 3 min while 9 requests are running",
                    wedged=Wedged(NOW - 180, WedgeCause.STALL, evidence),
                ),
                details,
            )
    return answers


def test_a_fleet_with_a_wedged_row(snap_compare: Any) -> None:
    """The WEDGED row sorts by its severity and its note says since when and why."""
    app = make_fleet(answers=wedged_answers)
    assert snap_compare(app, terminal_size=FLEET_SIZE, run_before=answered)


# --------------------------------------------------------------------------- the widgets


class Widgets(App[None]):
    """The banner and the canary line alone, styled as the host screen styles them."""

    CSS_PATH = APP_FOLDER / "babysit.tcss"

    def compose(self) -> ComposeResult:
        yield RunBanner(lambda: NOW, id="banner")
        yield CanaryLine(id="canary")


async def test_the_banner_is_wedged_and_bad_and_cuts_the_evidence_to_its_width() -> None:
    long = (f"{views.EVIDENCE[0]} " * 4, views.EVIDENCE[1])
    async with Widgets().run_test(size=(80, 24)) as pilot:
        banner = pilot.app.query_one(RunBanner)
        banner.show(views.wedged(evidence=long), None)
        await pilot.pause()
        assert banner.has_class("-wedged") and banner.has_class("-bad")
        evidence = str(banner.render()).splitlines()[2:]  # the facts and summary wrap
        assert evidence[0].endswith("…") and evidence[1].startswith(f"· {views.EVIDENCE[1][:40]}")
        assert max(len(line) for line in evidence) <= banner.content_size.width
        banner.show(probed(writes=INODE, ready=True), None)
        await pilot.pause()
        assert not banner.has_class("-wedged") and banner.has_class("-live")


async def test_the_canary_line_is_hidden_before_any_and_bad_when_not_ok() -> None:
    async with Widgets().run_test(size=(80, 24)) as pilot:
        line = pilot.app.query_one(CanaryLine)
        line.show(None, 0, NOW)
        await pilot.pause()
        assert not line.display
        line.show(views.canary(), 0, NOW)
        await pilot.pause()
        assert line.display and not line.has_class("-bad")
        assert str(line.render()) == "canary 09:22:21 (2 min ago): ok, TTFT 0.21 s, 61.8 tok/s"
        line.show(views.canary(CanaryOutcome.TIMEOUT, elapsed_s=30.0), 0, NOW + 60)
        await pilot.pause()
        assert line.has_class("-bad")
        assert str(line.render()) == "canary 09:22:21 (3 min ago): timed out after 30 s"
