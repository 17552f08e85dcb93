"""Snapshots of WEDGED: the host screen's banner for each cause, at 80x24 and the usual size,
a fleet with a WEDGED row, and the banner and canary line as widgets.

As in test_app_snapshots: fixed rows, a frozen clock, UTC, and nothing that connects
anywhere. A WEDGED for a scheduler's traceback while the process lives, and for a canary
that got no answer, is the service's facts' own decision over a self-consistent LIVE
probe; a stall is given in the words the facts say one with.
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
    CMDLINE,
    DEV,
    GPU_CSV,
    HOSTS,
    INODE,
    LOG,
    NOW,
    REPORTED,
    SIZE,
    STARTED,
    STARTUP,
    ConnectedTransport,
    probed,
    rows_shown,
    utc,  # noqa: F401 - a fixture
)
from textual.app import App, ComposeResult
from textual.pilot import Pilot

import tui.app
from tui.app.app import BabysitApp
from tui.app.app import make_app as make_babysit
from tui.app.widgets.metrics_pane import CanaryLine
from tui.app.widgets.run_banner import RunBanner
from tui.config import Host, Service
from tui.core.assess import assess
from tui.core.canary import CanaryOutcome, CanaryResult
from tui.core.follow import FileInfo
from tui.core.logcursor import LogLine, Row
from tui.core.report import ProbeDetails
from tui.core.runs import Assessment, ServiceProbe
from tui.core.serving import WedgeCause, Wedged
from tui.core.verdicts import Verdict
from tui.core.wedge import wedged_words
from tui.hostsfile import parse_config

#: Clock times drawn in UTC whatever the machine's zone (the ``utc`` fixture).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("utc")]

NARROW = (80, 24)
APP_FOLDER = Path(tui.app.__file__).parent
PID, START_TICKS = 67115, 123456
#: The run's ready line, 09:21:06; its last decode line, 09:21:21 (190 s before the clock).
READY_AT = STARTED + 60
STALLED_AT = NOW - 190
#: The canary that got no answer: sent 09:23:40.
CANARY_SENT = NOW - 51
READY = "[2026-01-12 09:21:06] The server is fired up and ready to roll!"
DECODE = (
    "[2026-01-12 09:21:{s:02d} TP0] Decode batch. #running-req: 2, #token: {tok}, "
    "token usage: 0.01, accept len: 3.81, gen throughput (token/s): 58.{d}2, #queue-req: 1"
)
#: A scheduler's traceback while the API process lives on: 09:23:02.
FATAL = (
    "[2026-01-12 09:23:02 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2417, '
    "in run_scheduler_process",
    "    scheduler.event_loop_overlap()",
    "RuntimeError: NCCL communicator was aborted on rank 1.",
)


def log_texts(cause: str) -> list[str]:
    """Start-up, the ready line, decode lines until 09:21:21, then nothing (or a traceback)."""
    texts = [*STARTUP[:4], READY]
    texts += [DECODE.format(s=7 + 2 * i, tok=900 + 40 * i, d=i) for i in range(8)]
    return texts + list(FATAL) if cause == WedgeCause.FATAL else texts


def log_rows(cause: str) -> list[Row]:
    rows: list[Row] = []
    offset = 0
    for text in log_texts(cause):
        size = len(text.encode()) + 1
        rows.append(LogLine(text, DEV, INODE, offset, size, STALLED_AT))
        offset += size
    return rows


class StalledFollower:
    """Yields the stalled run's rows once, then waits like a log nobody writes."""

    def __init__(self, cause: str) -> None:
        self.rows_of = log_rows(cause)
        last = self.rows_of[-1]
        self.file = FileInfo(LOG, DEV, INODE, last.offset + last.size, STALLED_AT)

    async def rows(self) -> AsyncIterator[list[Row]]:
        yield self.rows_of
        await asyncio.Event().wait()


def answer(cause: str) -> tuple[Assessment, ProbeDetails]:
    """kpro5/qwen's probe: its live run, ready at 09:21:06, and the log's tail from the ready
    line on (its decode lines, and for ``fatal-line`` the traceback)."""
    rows = log_rows(cause)
    ready_row = rows[len(STARTUP[:4])]
    run = {
        "pid": PID,
        "ppid": 1,
        "start_ticks": START_TICKS,
        "start_time": STARTED,
        "user": "root",
        "cmdline": CMDLINE,
        "cwd": "/root",
        "sources": ["command", "port", "writes log"],
        "files": [
            {"fd": 1, "path": LOG, "dev": DEV, "inode": INODE, "deleted": False, "write": True}
        ],
        "members": [],
        "ready": {
            "seen": True,
            "source": "timestamps",
            "anchor": 0,
            "at": READY_AT,
            "offset": ready_row.offset,
            "line": READY,
        },
    }
    size = rows[-1].offset + rows[-1].size
    log = {"path": LOG, "regular": True, "dev": DEV, "inode": INODE, "size": size}
    data = {"name": "qwen", "log": {**log, "mtime": STALLED_AT}, "runs": [run], "unreadable": []}
    top = {"boot_id": "b0e1c2d3", "now": NOW, "utc_offset": 0}
    assessment = assess(ServiceProbe.from_json("kpro5", "sglang", top, data))
    tail = "".join(f"{text}\n" for text in log_texts(cause)[len(STARTUP[:4]) :]).encode()
    details = ProbeDetails(
        tail=tail, tail_offset=ready_row.offset, args_line=REPORTED, gpu_csv=GPU_CSV
    )
    if cause == WedgeCause.STALL:
        assessment = stalled(assessment)
    return assessment, details


def stalled(live: Assessment) -> Assessment:
    """``live`` WEDGED for a stall, in the words the service's facts give one (SGLang's spec
    does not yet say that its log prints progress, so the facts cannot decide it here)."""
    evidence = (
        "3 requests running or queued (the log's latest metric line, byte 1530, 09:21:21), "
        "3 client connections quiet for 10 s or more",
        "3 client requests unanswered, the longest for 3 min (from 127.0.0.1:53312)",
        "the last progress was at 09:21:21 (3 min ago) (log byte 1530)",
    )
    wedged = Wedged(NOW - 188, WedgeCause.STALL, evidence)
    said = wedged_words(wedged, 0, NOW)
    return dataclasses.replace(
        live, verdict=Verdict.WEDGED, wedged=wedged, summary=f"{said}; {live.summary}"
    )


def timed_out_canary() -> CanaryResult:
    return CanaryResult(
        "kpro5",
        "qwen",
        CanaryOutcome.TIMEOUT,
        sent_at=CANARY_SENT,
        run_pid=PID,
        run_start_ticks=START_TICKS,
        run_started_at=STARTED,
        elapsed_s=30.0,
        sampling={"temperature": 0.6, "top_p": 0.95},
        sampling_source="generation_config",
    )


#: The causes; fatal-line and canary-timeout are decided by the service's facts over what
#: they read.
CAUSES = (WedgeCause.STALL, WedgeCause.FATAL, WedgeCause.CANARY)


def make_host_app(cause: str) -> BabysitApp:
    probe = answer(cause)
    sessions = StandIns(
        answers=lambda host, services: [probe],
        follower=lambda session, cursor, pid: StalledFollower(cause),
        transport=ConnectedTransport(),
        clock=lambda: NOW,
        interval=3600,
    )
    config = parse_config(HOSTS)
    if cause == WedgeCause.CANARY:
        host = config.hosts["kpro5"]
        sessions.session(host, host.services["qwen"]).facts.canary_done(timed_out_canary())
    return make_babysit(config, ["kpro5/qwen"], sessions=sessions, clock=lambda: NOW)


async def wedged_shown(pilot: Pilot[Any]) -> None:
    await rows_shown(pilot)
    assessment = pilot.app.screen.assessment
    assert assessment.verdict is Verdict.WEDGED, assessment.summary


@pytest.mark.parametrize("cause", CAUSES)
@pytest.mark.parametrize("size", [SIZE, NARROW], ids=["120x36", "80x24"])
def test_the_banner_says_since_when_and_on_what_evidence(
    cause: str, size: tuple[int, int], snap_compare: Any
) -> None:
    """WEDGED: the verdict, since when and why first, the summary, then the evidence."""
    assert snap_compare(make_host_app(cause), terminal_size=size, run_before=wedged_shown)


def wedged_answers(host: Host, services: list[Service]) -> list[Any]:
    """The fleet's fixed answers, with kpro5/dp-6 (its decode lines stopped 3 minutes ago)
    stalled."""
    answers = fixed_answers(host, services)
    for index, service in enumerate(services):
        if service.name == "dp-6":
            assessment, details = answers[index]
            evidence = (
                "9 requests running or queued (the log's latest metric line, byte 3999412, "
                "09:21:31), 3 client connections quiet for 10 s or more",
                "the last progress was at 09:21:31 (3 min ago) (log byte 3999412)",
            )
            wedged = Wedged(NOW - 180, WedgeCause.STALL, evidence)
            said = wedged_words(wedged, 0, NOW)
            answers[index] = (
                dataclasses.replace(
                    assessment,
                    verdict=Verdict.WEDGED,
                    wedged=wedged,
                    summary=f"{said}; {assessment.summary}",
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
        assert banner.has_class("-wedged") and not banner.has_class("-dead")
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
