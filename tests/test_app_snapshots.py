"""Snapshots of the host screen: fixed rows, fixed file, frozen clock, fixed time zone.

Nothing here reads a real file or connects anywhere: the follower is a stand-in
that yields the same rows every run, and the transport a stand-in that says
``connected``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from textual.pilot import Pilot

from tui.app.app import BabysitApp
from tui.app.widgets.log_view import LogView
from tui.config import parse_config
from tui.core.follow import FileInfo
from tui.core.logcursor import EventKind, EventRow, LogEvent, LogLine, Row
from tui.remote.transport import Completed, RemoteProcess, Transport

SIZE = (120, 36)
#: 2026-01-12 09:24:31 UTC, shown as the header's clock.
NOW = 1768209871.0
DEV, OLD_INODE, INODE = 64768, 5678, 9012

HOSTS = """\
hosts:
  kpro5:
    ssh: root@10.0.0.15
    services:
      qwen: {engine: sglang, log: /root/sglang-serve.log, port: 30000}
"""

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
    "[2026-01-12 09:22:01] INFO:     127.0.0.1:51234 - \"POST /generate HTTP/1.1\" 200 OK",
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

    rows.append(EventRow(LogEvent(
        EventKind.OPENED,
        f"following /root/sglang-serve.log (inode {OLD_INODE}, 1.21 MiB) from offset 1265012",
        at, {"inode": OLD_INODE},
    )))
    for text in STARTUP:
        line(text, OLD_INODE)
    for i in range(40):
        minute, second = divmod(22 * 60 + 5 + 2 * i, 60)
        line(DECODE.format(hms=f"09:{minute:02d}:{second:02d}", tok=272 + 40 * i,
                           a=80 + i % 19, tps=f"{58 + (i * 7) % 5}.{(i * 13) % 10}2"), OLD_INODE)
    rows.append(EventRow(LogEvent(
        EventKind.REPLACED,
        f"log replaced: now inode {INODE} (old inode {OLD_INODE} was deleted)",
        NOW - 15, {"old_inode": OLD_INODE, "new_inode": INODE},
    )))
    offset = 0
    for i in range(8):
        line(DECODE.format(hms=f"09:24:{20 + i:02d}", tok=1872 + 40 * i, a=81 + i,
                           tps=f"60.{i}1"), INODE)
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


@pytest.fixture
def app(utc: None) -> BabysitApp:
    host = parse_config(HOSTS).hosts["kpro5"]
    return BabysitApp(host, host.services["qwen"],
                      transport_factory=lambda host, links: ConnectedTransport(),
                      follower_factory=lambda transport: FixedFollower(), clock=lambda: NOW)


async def rows_shown(pilot: Pilot[Any]) -> None:
    view = pilot.app.screen.query_one(LogView)
    for _ in range(100):
        if len(view.buffer):
            break
        await pilot.pause(0.01)
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
