"""Snapshots of the host screen: fixed rows, fixed file, frozen clock, fixed time zone.

Nothing here reads a real file or connects anywhere: the follower is a stand-in
that yields the same rows every run, and the transport a stand-in that says
``connected``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from support.sessions import StandIns
from support.wait import until
from textual.pilot import Pilot

from tui.app.app import BabysitApp
from tui.app.app import make_app as make_babysit
from tui.app.widgets.log_view import LogView
from tui.core.assess import assess
from tui.core.follow import FileInfo
from tui.core.logcursor import EventKind, EventRow, LogEvent, LogLine, Row
from tui.core.report import ProbeDetails
from tui.core.runs import Assessment, ServiceProbe, unknown
from tui.hostsfile import parse_config
from tui.remote.transport import Completed, RemoteProcess, Transport

pytestmark = pytest.mark.integration

SIZE = (120, 36)
#: 2026-01-12 09:24:31 UTC, shown as the header's clock.
NOW = 1768209871.0
DEV, OLD_INODE, INODE = 64768, 5678, 9012

#: What hosts.yaml asks for; the running command line differs in one value, as when a
#: launch script overrides a flag.
INTENDED = [
    "python3",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "Qwen/Qwen3-32B",
    "--port",
    "30000",
    "--tp",
    "2",
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-num-steps",
    "3",
    "--mem-fraction-static",
    "0.9",
]
HOSTS = f"""\
hosts:
  kpro5:
    ssh: root@10.0.0.15
    services:
      qwen:
        engine: sglang
        log: /root/sglang-serve.log
        port: 30000
        gpus: [0, 1]
        launch: {{cwd: /root, command: {json.dumps(INTENDED)}}}
"""
REPORTED = (
    "[2026-01-12 09:20:06] server_args=ServerArgs(model_path='Qwen/Qwen3-32B', "
    "port=30000, tp_size=2, speculative_algorithm='EAGLE', speculative_num_steps=3, "
    "mem_fraction_static=0.8)"
)
GPU_CSV = {
    "gpus": "0, NVIDIA H100 80GB HBM3, 612.31, 700.00, 97, 71820, 81559, 61\n"
    "1, NVIDIA H100 80GB HBM3, 598.12, 700.00, 96, 71820, 81559, 60\n",
    "gpus_status": 0,
    "apps": "67115, 71820\n67116, 71820\n",
    "apps_status": 0,
}

DECODE = (
    "[2026-01-12 {hms} TP0] Decode batch. #running-req: 1, #token: {tok}, "
    "token usage: 0.01, accept len: 3.{a}, gen throughput (token/s): {tps}, #queue-req: 0"
)
STARTUP = [
    "[2026-01-12 09:20:06] server_args=ServerArgs(model_path='Qwen/Qwen3-32B', tp_size=2, "
    "port=30000, mem_fraction_static=0.9)",
    "[2026-01-12 09:20:41 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, "
    "avail mem=38.12 GB",
    "[2026-01-12 09:21:02 TP0] KV Cache is allocated. #tokens: 412618, K size: 15.74 GB",
    "[2026-01-12 09:21:05] INFO:     Uvicorn running on http://0.0.0.0:30000",
    '[2026-01-12 09:22:01] INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK',
    "[2026-01-12 09:22:03 TP0] Prefill batch. #new-seq: 1, #new-token: 128, #cached-token: 0",
]


def fixed_rows() -> list[Row]:
    """A believable SGLang log: start-up, decode lines, a replaced log, more lines."""
    rows: list[Row] = []
    offset = 0
    at = NOW - 200

    def line(text: str, inode: int) -> None:
        nonlocal offset
        size = len(text.encode()) + 1
        rows.append(LogLine(text, DEV, inode, offset, size, at))
        offset += size

    rows.append(
        EventRow(
            LogEvent(
                EventKind.OPENED,
                f"following /root/sglang-serve.log (inode {OLD_INODE}, 1.21 MiB) "
                "from offset 1265012",
                at,
                {"inode": OLD_INODE},
            )
        )
    )
    for text in STARTUP:
        line(text, OLD_INODE)
    for i in range(40):
        minute, second = divmod(22 * 60 + 5 + 2 * i, 60)
        line(
            DECODE.format(
                hms=f"09:{minute:02d}:{second:02d}",
                tok=272 + 40 * i,
                a=80 + i % 19,
                tps=f"{58 + (i * 7) % 5}.{(i * 13) % 10}2",
            ),
            OLD_INODE,
        )
    rows.append(
        EventRow(
            LogEvent(
                EventKind.REPLACED,
                f"log replaced: now inode {INODE} (old inode {OLD_INODE} was deleted)",
                NOW - 15,
                {"old_inode": OLD_INODE, "new_inode": INODE},
            )
        )
    )
    offset = 0
    for i in range(8):
        line(
            DECODE.format(hms=f"09:24:{20 + i:02d}", tok=1872 + 40 * i, a=81 + i, tps=f"60.{i}1"),
            INODE,
        )
    return rows


class FixedFollower:
    """Yields :func:`fixed_rows` once, then waits like a quiet log."""

    file = FileInfo("/root/sglang-serve.log", DEV, INODE, 1_289_748, NOW)

    async def rows(self) -> AsyncIterator[list[Row]]:
        yield fixed_rows()
        await asyncio.Event().wait()


class ConnectedTransport(Transport):
    """Says it is connected over ssh; runs nothing."""

    chain = ("ssh root@10.0.0.15",)

    async def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> Completed:
        raise NotImplementedError

    def stream(
        self, argv: Sequence[str], *, stdin: bool = False
    ) -> AbstractAsyncContextManager[RemoteProcess]:
        raise NotImplementedError

    def status_text(self) -> str:
        return "connected"


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Clock times drawn in UTC whatever the machine's zone."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


PID = 67115
STARTED = NOW - (4 * 60 + 25)  # 09:20:06, the server_args line
LOG = "/root/sglang-serve.log"
CMDLINE = [*INTENDED[:-1], "0.8"]


def probed(
    *, writes: int | None, ready: bool | None, log_inode: int | None = INODE, mtime: float = NOW - 1
) -> Assessment:
    """A real assessment of a made-up but self-consistent probe of kpro5/qwen."""
    runs = []
    if writes is not None:
        deleted = writes != log_inode
        runs.append(
            {
                "pid": PID,
                "ppid": 1,
                "start_ticks": 123456,
                "start_time": STARTED,
                "user": "root",
                "cmdline": CMDLINE,
                "cwd": "/root",
                "sources": ["command", "port", "writes log"],
                "files": [
                    {
                        "fd": 1,
                        "path": LOG,
                        "dev": DEV,
                        "inode": writes,
                        "deleted": deleted,
                        "write": True,
                        "at_log": True,  # the log, or its deleted former self
                    }
                ],
                "members": [
                    {
                        "pid": PID + 1,
                        "ppid": PID,
                        "start_ticks": 123470,
                        "start_time": STARTED + 1,
                        "user": "root",
                        "cmdline": CMDLINE,
                        "cwd": "/root",
                        "sources": [],
                        "files": [],
                    }
                ],
                "ready": {
                    "seen": ready,
                    "source": "timestamps",
                    "anchor": 0,
                    "at": STARTED + 246 if ready else None,
                },
            }
        )
    log = (
        {
            "path": LOG,
            "regular": True,
            "dev": DEV,
            "inode": log_inode,
            "size": 1_289_748,
            "mtime": mtime,
        }
        if log_inode
        else {"path": LOG, "regular": False}
    )
    data = {"name": "qwen", "log": log, "runs": runs, "unreadable": []}
    top = {"boot_id": "b0e1c2d3", "now": NOW, "utc_offset": 0}
    return assess(ServiceProbe.from_json("kpro5", "sglang", top, data))


def make_app(assessment: Assessment) -> BabysitApp:
    details = (
        ProbeDetails(args_line=REPORTED, gpu_csv=GPU_CSV) if assessment.run else ProbeDetails()
    )
    sessions = StandIns(
        answers=lambda host, services: [(assessment, details)],
        follower=lambda session, cursor, pid: FixedFollower(),
        transport=ConnectedTransport(),
        clock=lambda: NOW,
        interval=3600,  # one probe: the GPU sparkline must not depend on timing
    )
    return make_babysit(parse_config(HOSTS), ["kpro5/qwen"], sessions=sessions, clock=lambda: NOW)


@pytest.fixture
def app(utc: None) -> BabysitApp:
    return make_app(probed(writes=INODE, ready=True))


async def rows_shown(pilot: Pilot[Any]) -> None:
    view = pilot.app.screen.query_one(LogView)
    await until(
        lambda: len(view.buffer) and pilot.app.screen.assessment is not None,
        "log rows and a verdict",
        pilot=pilot,
    )
    await pilot.pause()


def test_host_screen_following(app: BabysitApp, snap_compare: Any) -> None:
    """Following: the newest lines at the bottom, the replaced-log event inline."""
    assert snap_compare(app, terminal_size=SIZE, run_before=rows_shown)


def test_host_screen_paused_on_a_search_match(app: BabysitApp, snap_compare: Any) -> None:
    """Searching 'accept len: 3.9', stepped back twice: paused, matches highlighted."""

    async def search(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await pilot.press("slash", *"accept len: 3.9", "enter", "N", "N")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=search)


@pytest.mark.parametrize(
    "assessment",
    [
        pytest.param(probed(writes=INODE, ready=False), id="starting"),
        pytest.param(probed(writes=OLD_INODE, ready=None), id="stale-writer-elsewhere"),
        pytest.param(probed(writes=None, ready=None, mtime=NOW - 180), id="dead"),
        pytest.param(
            unknown(
                "kpro5",
                "qwen",
                "ssh root@10.0.0.15: connection refused on port 22 (is sshd running there?)",
                NOW - 9,
            ),
            id="unknown-old",
        ),
    ],
)
def test_host_screen_banner_states(utc: None, assessment: Assessment, snap_compare: Any) -> None:
    """The banner for each verdict: colour, the run, the plain line, and its age."""
    assert snap_compare(make_app(assessment), terminal_size=SIZE, run_before=rows_shown)


def test_host_screen_narrow_80x24(app: BabysitApp, snap_compare: Any) -> None:
    """The smallest terminal babysit promises to fit: 80 columns, 24 rows."""
    assert snap_compare(app, terminal_size=(80, 24), run_before=rows_shown)
