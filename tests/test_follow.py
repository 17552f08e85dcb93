"""Following a real log through local, ssh and pct: every trap that loses lines elsewhere.

Each test writes a real file (sometimes from a real writer process that keeps
its file descriptor open), follows it through the agent, and checks that every
line arrives exactly once, in order, with the event that explains any switch.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.wait import until, wait_until

from tui.core.follow import Start
from tui.core.logcursor import EventKind, EventRow, LogLine, Row
from tui.remote.follow import Follower
from tui.remote.transport import Transport

pytestmark = pytest.mark.integration


class Collector:
    """Runs a follower in the background and keeps every row it yields."""

    def __init__(self, follower: Follower) -> None:
        self.follower = follower
        self.rows: list[Row] = []
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for batch in self.follower.rows():
            self.rows.extend(batch)

    @property
    def texts(self) -> list[str]:
        return [r.text for r in self.rows if isinstance(r, LogLine)]

    def events(self, kind: EventKind | None = None) -> list[EventRow]:
        return [
            r
            for r in self.rows
            if isinstance(r, EventRow) and (kind is None or r.event.kind is kind)
        ]

    async def until(self, check: Callable[[], bool], timeout: float = 15.0) -> None:
        """Until ``check()`` holds; the follower ending first fails at once."""

        def holds() -> bool:
            if check():
                return True
            if self.task.done():
                self.task.result()
                raise AssertionError(f"follower ended early; rows: {self.rows}")
            return False

        await until(holds, lambda: f"rows so far: {self.describe()}", timeout=timeout)

    def describe(self) -> list[str]:
        return [
            r.text if isinstance(r, LogLine) else f"<{r.event.kind.value}: {r.event.message}>"
            for r in self.rows
        ]

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def follow(transport: Transport, path: Path, **kwargs: object) -> Collector:
    kwargs.setdefault("start", Start(from_start=True))
    return Collector(Follower(transport, str(path), label="test/svc", **kwargs))  # type: ignore[arg-type]


def append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


class Writer:
    """A separate process that holds the log open (O_APPEND) like a server does."""

    SCRIPT = (
        "import sys\n"
        "out = open(sys.argv[1], 'a', buffering=1)\n"
        "for line in sys.stdin:\n"
        "    out.write(line)\n"
        "    print('ok', flush=True)\n"
    )

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self.SCRIPT, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def write(self, text: str) -> None:
        assert self.proc.stdin and self.proc.stdout
        for line in text.splitlines(keepends=True):
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
            assert self.proc.stdout.readline() == "ok\n"

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(5)


def numbered(prefix: str, start: int, stop: int) -> str:
    return "".join(f"{prefix} {i}\n" for i in range(start, stop))


def names(prefix: str, start: int, stop: int) -> list[str]:
    return [f"{prefix} {i}" for i in range(start, stop)]


async def test_append_and_a_partial_line_completed_later(
    transport: Transport, tmp_path: Path
) -> None:
    log = tmp_path / "server log.txt"
    log.write_text(numbered("old", 0, 3))
    c = follow(transport, log)
    try:
        await c.until(lambda: len(c.texts) == 3)
        append(log, "half of a li")
        # The partial line has arrived (and is held), so its absence from the lines says something.
        splitter = c.follower.state.splitter
        await c.until(lambda: splitter.pending_bytes == len("half of a li"))
        assert c.texts == names("old", 0, 3), "a partial line must not be shown as a line"
        append(log, "ne, now whole\nnext\n")
        await c.until(lambda: len(c.texts) == 5)
        assert c.texts[3:] == ["half of a line, now whole", "next"]
        whole = [r for r in c.rows if isinstance(r, LogLine)][3]
        assert whole.offset == len(numbered("old", 0, 3).encode())
        assert whole.inode == log.stat().st_ino
    finally:
        await c.stop()


async def test_tail_starts_with_the_last_lines(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(numbered("l", 0, 1000))
    c = follow(transport, log, start=Start(tail=5))
    try:
        await c.until(lambda: len(c.texts) == 5)
        assert c.texts == names("l", 995, 1000)
    finally:
        await c.stop()


async def test_truncate_to_zero_then_regrow_past_the_old_size(
    transport: Transport, tmp_path: Path
) -> None:
    log = tmp_path / "a.log"
    log.write_text(numbered("first", 0, 5))
    c = follow(transport, log)
    try:
        await c.until(lambda: len(c.texts) == 5)
        # One open("w") + write: the agent may never see the file at size 0.
        log.write_text(numbered("second run", 0, 20))
        await c.until(lambda: len(c.texts) == 25)
        assert c.texts[5:] == names("second run", 0, 20)
        assert len(c.events(EventKind.TRUNCATED)) == 1
    finally:
        await c.stop()


async def test_copytruncate(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    writer = Writer(log)
    c = follow(transport, log)
    try:
        writer.write(numbered("before", 0, 10))
        await c.until(lambda: len(c.texts) == 10)
        # logrotate's copytruncate: copy the file away, then cut it to zero in place.
        (tmp_path / "a.log.1").write_bytes(log.read_bytes())
        os.truncate(log, 0)
        await c.until(lambda: bool(c.events(EventKind.TRUNCATED)))
        writer.write(numbered("after", 0, 10))
        await c.until(lambda: len(c.texts) == 20)
        assert c.texts == names("before", 0, 10) + names("after", 0, 10)
    finally:
        writer.close()
        await c.stop()


async def test_rename_and_create_like_logrotate(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    writer = Writer(log)
    c = follow(transport, log)
    try:
        writer.write(numbered("old", 0, 5))
        await c.until(lambda: len(c.texts) == 5)
        old_inode = log.stat().st_ino
        log.rename(tmp_path / "a.log.1")
        writer.write(numbered("old", 5, 8))  # still writing the renamed file
        log.write_text("")  # logrotate `create`
        new_writer = Writer(log)
        new_writer.write(numbered("new", 0, 5))
        await c.until(lambda: len(c.texts) == 13)
        assert sorted(c.texts) == sorted(names("old", 0, 8) + names("new", 0, 5))
        assert c.texts[:5] == names("old", 0, 5)
        assert [t for t in c.texts if t.startswith("new")] == names("new", 0, 5)
        replaced = c.events(EventKind.REPLACED)
        assert len(replaced) == 1
        assert replaced[0].event.data["old_inode"] == old_inode
        assert replaced[0].event.data["old_state"] == "renamed"
        new_writer.close()
    finally:
        writer.close()
        await c.stop()


async def test_rm_and_recreate_while_the_old_writer_still_writes(
    transport: Transport, tmp_path: Path
) -> None:
    """The trap: `rm -f server.log` while the dying server still writes the old inode."""
    log = tmp_path / "server.log"
    dying = Writer(log)
    c = follow(transport, log)
    try:
        dying.write(numbered("dying", 0, 5))
        await c.until(lambda: len(c.texts) == 5)
        log.unlink()
        dying.write(numbered("dying", 5, 8))  # written to a deleted file
        fresh = Writer(log)
        fresh.write(numbered("fresh", 0, 4))
        await c.until(lambda: len(c.texts) == 12)
        dying.write(numbered("dying", 8, 10))  # the old server is still talking
        await c.until(lambda: len(c.texts) == 14)
        assert [t for t in c.texts if t.startswith("dying")] == names("dying", 0, 10)
        assert [t for t in c.texts if t.startswith("fresh")] == names("fresh", 0, 4)
        rows = c.describe()
        switch = next(i for i, r in enumerate(rows) if r.startswith("<replaced"))
        assert rows.index("fresh 0") > switch
        assert all(rows.index(f"dying {i}") < switch for i in range(5))
        assert c.events(EventKind.REPLACED)[0].event.data["old_state"] == "deleted"
        fresh.close()
    finally:
        dying.close()
        await c.stop()


async def test_path_missing_then_appearing(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    c = follow(transport, log)
    try:
        await c.until(lambda: bool(c.events(EventKind.MISSING)))
        assert "does not exist; waiting for it" in c.events(EventKind.MISSING)[0].event.message
        log.write_text(numbered("born", 0, 3))
        await c.until(lambda: len(c.texts) == 3)
        assert c.texts == names("born", 0, 3)
        assert c.events(EventKind.APPEARED)
    finally:
        await c.stop()


async def test_follow_the_writer_of_a_deleted_log(transport: Transport, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "for line in sys.stdin:\n"
            "    sys.stdout.write(line); sys.stdout.flush()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=log.open("w"),
        text=True,
    )
    try:
        assert server.stdin
        server.stdin.write("hello from the server\n")
        server.stdin.flush()
        wait_until(lambda: log.read_text() == "hello from the server\n", 10, "the server's line")
        log.unlink()
        log.write_text("an impostor\n")
        c = follow(transport, log, pid=server.pid)
        await c.until(lambda: len(c.texts) == 1)
        assert c.texts == ["hello from the server"]
        writer_event = c.events(EventKind.WRITER)[0].event
        assert writer_event.message == (f"following pid {server.pid}'s stdout: {log} (deleted)")
        server.stdin.write("still writing\n")
        server.stdin.flush()
        await c.until(lambda: len(c.texts) == 2)
        await c.stop()
    finally:
        server.kill()
        server.wait()


async def test_escape_sequences_and_binary_never_come_through(
    transport: Transport, tmp_path: Path
) -> None:
    log = tmp_path / "evil.log"
    log.write_bytes(
        b"\x1b]0;pwned\x07title\n"
        b"\x1b[2Jcleared \x1b[31mred\x1b[0m\n"
        b"c1 \xc2\x9b31m csi \xc2\x9d8;;http://x\xc2\x9c link\n"
        b"raw \x9b\x90\xff\xfe bytes\x00\x07\x08\r\n"
        b"tab\tkept\n"
    )
    c = follow(transport, log)
    try:
        await c.until(lambda: len(c.texts) == 5)
        assert c.texts[0] == "title"
        assert c.texts[1] == "cleared red"
        assert c.texts[2] == "c1  csi  link"
        assert c.texts[3] == "raw \ufffd\ufffd\ufffd\ufffd bytes"
        assert c.texts[4] == "tab\tkept"
        for text in c.texts:
            assert not any((ord(ch) < 32 and ch != "\t") or 0x7F <= ord(ch) <= 0x9F for ch in text)
    finally:
        await c.stop()


async def test_a_10_mb_line_without_newline_is_cut_not_held(
    transport: Transport, tmp_path: Path
) -> None:
    log = tmp_path / "huge.log"
    log.write_bytes(b"start\n" + b"x" * (10 * 1024 * 1024))
    follower = Follower(transport, str(log), label="t", start=Start(from_start=True))
    c = Collector(follower)
    try:
        await c.until(lambda: len(c.texts) == 2)
        # Every byte of the long line has been read (and skipped past the cut).
        size = log.stat().st_size
        splitter = follower.state.splitter
        await c.until(lambda: (cur := splitter.resume_cursor) is not None and cur.offset == size)
        assert c.texts[0] == "start"
        cut = [r for r in c.rows if isinstance(r, LogLine)][1]
        assert cut.cut and cut.text.endswith("[… line cut at 64 KiB]")
        assert len(cut.text) < 64 * 1024 + 40
        assert follower.state.splitter.pending_bytes == 0, "the rest must be skipped, not held"
        append(log, "y\nafter\n")
        await c.until(lambda: "after" in c.texts)
        assert c.texts == ["start", cut.text, "after"]
    finally:
        await c.stop()
