"""Following across a dropped SSH connection, a huge log, and the agent's own detection logic."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.sshd import Sshd
from support.wait import until
from test_follow import Collector, append, names, numbered

from tui.agent.follow import LogFollower
from tui.agent.locate import tail_offset
from tui.agent.output import Output
from tui.core.follow import Start
from tui.core.frames import FrameDecoder
from tui.core.logcursor import EventKind
from tui.hostsfile import parse_config
from tui.remote import SshLinks, Transport, open_transport
from tui.remote.follow import Follower

VMID = 105


def open_kind(kind: str, sshd: Sshd, links: SshLinks) -> Transport:
    """The same host reached locally, over the real sshd, or through pct on it."""
    sshd.add_container(VMID)
    entry = {
        "local": "h:\n  local: true\n",
        "ssh": sshd.host_yaml("h"),
        "pct": sshd.pct_host_yaml("h", VMID),
    }[kind]
    host = parse_config("hosts:\n" + "".join(f"  {x}\n" for x in entry.splitlines())).hosts["h"]
    return open_transport(host, links)


@contextlib.asynccontextmanager
async def away(kind: str, sshd: Sshd, c: Collector) -> AsyncIterator[None]:
    """babysit cannot reach the host while the body runs; then the follower resumes.

    Over ssh and pct the sshd (listener and sessions) is down meanwhile; locally the
    follower is ended and started again on the cursor it kept.
    """
    if kind == "local":
        await c.stop()
        yield
        c.task = asyncio.create_task(c._run())
        return
    with sshd.down():
        await c.until(lambda: bool(c.events(EventKind.DISCONNECTED)))
        yield


def holders(path: Path) -> list[int]:
    """Pids that hold ``path`` open."""
    st = path.stat()
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    fst = os.stat(f"/proc/{pid}/fd/{fd}")
                    if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino):
                        found.append(int(pid))
    return found


def made_again(path: Path, inode: int, text: str, tries: int = 5000) -> None:
    """Create ``path`` anew with ``text`` on the inode number just freed, as ext4 does
    when no lower number is free in the folder's group (files are made until one gets
    it; the others are removed)."""
    fillers = []
    try:
        for n in range(tries):
            candidate = path.with_name(f".{path.name}.{n}")
            candidate.write_text(text)
            if candidate.stat().st_ino == inode:
                candidate.rename(path)
                return
            fillers.append(candidate)
        # Another process (a parallel test) made a file on the freed number first: the
        # case cannot be set up this time, which says nothing of babysit.
        pytest.skip(f"inode {inode} was taken by another file before it could be reused")
    finally:
        for filler in fillers:
            filler.unlink()


def never_shown(c: Collector, *files: Path) -> list[str]:
    """The lines in ``files`` (as they are on disk now) that were never shown."""
    shown = set(c.texts)
    return [line for f in files for line in f.read_text().splitlines() if line not in shown]


def reconnected_said(c: Collector, kind: str) -> str:
    if kind == "local":
        return ""
    (row,) = c.events(EventKind.RECONNECTED)
    return row.event.message


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
async def test_truncate_and_regrow_while_away_is_read_again_from_the_start(
    sshd: Sshd, tmp_path: Path, kind: str
) -> None:
    log = tmp_path / "a.log"
    log.write_text(numbered("old", 0, 200))
    links = SshLinks()
    c = Collector(
        Follower(open_kind(kind, sshd, links), str(log), label="h/s", start=Start(from_start=True))
    )
    try:
        await c.until(lambda: len(c.texts) == 200)
        async with away(kind, sshd, c):
            append(log, numbered("old", 200, 300))  # cut before it could be read
            log.write_text(numbered("new", 0, 600))  # same inode, longer than before
        await c.until(lambda: "new 599" in c.texts, timeout=40)
        assert never_shown(c, log) == []
        assert c.texts == names("old", 0, 200) + names("new", 0, 600)
        (cut,) = c.events(EventKind.TRUNCATED)
        assert cut.event.message.startswith(
            "log truncated and rewritten, or deleted and made again with the same inode "
            "number, while babysit was not connected (was at least "
        ), cut.event.message
        read = len(numbered("old", 0, 200))
        assert cut.event.message.endswith(
            f": no copy beside it; anything after byte {read:,} is lost"
        )
        said = reconnected_said(c, kind)
        assert "nothing lost" not in said
        if kind != "local":
            assert "could not resume at inode" in said
            assert "its first bytes are not those read before" in said
    finally:
        await c.stop()
        await links.close()


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
async def test_rm_and_recreate_with_the_freed_inode_while_away_is_not_the_same_file(
    sshd: Sshd, tmp_path: Path, kind: str
) -> None:
    """ext4 gives a new file the inode number just freed: (dev, inode) alone lies."""
    log = tmp_path / "server.log"
    log.write_text(numbered("first run", 0, 200))
    old_inode = log.stat().st_ino
    links = SshLinks()
    c = Collector(
        Follower(open_kind(kind, sshd, links), str(log), label="h/s", start=Start(from_start=True))
    )
    try:
        await c.until(lambda: len(c.texts) == 200)
        async with away(kind, sshd, c):
            # The agent that held it open has ended: the inode is freed by the unlink.
            await until(lambda: not holders(log), "the old agent to end")
            log.unlink()
            made_again(log, old_inode, numbered("second run", 0, 600))
        assert log.stat().st_ino == old_inode
        await c.until(lambda: "second run 599" in c.texts, timeout=40)
        assert never_shown(c, log) == []
        assert c.texts == names("first run", 0, 200) + names("second run", 0, 600)
        (cut,) = c.events(EventKind.TRUNCATED)
        assert "or deleted and made again with the same inode number" in cut.event.message
        assert "nothing lost" not in reconnected_said(c, kind)
    finally:
        await c.stop()
        await links.close()


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
async def test_copytruncate_while_away_reads_the_unread_part_from_the_copy(
    sshd: Sshd, tmp_path: Path, kind: str
) -> None:
    log = tmp_path / "a.log"
    log.write_text(numbered("old", 0, 200))
    links = SshLinks()
    c = Collector(
        Follower(open_kind(kind, sshd, links), str(log), label="h/s", start=Start(from_start=True))
    )
    try:
        await c.until(lambda: len(c.texts) == 200)
        read = log.stat().st_size
        async with away(kind, sshd, c):
            append(log, numbered("old", 200, 300))  # written after babysit's last read
            shutil.copyfile(log, tmp_path / "a.log.1")  # logrotate's copytruncate
            os.truncate(log, 0)
            append(log, numbered("new", 0, 50))
        await c.until(lambda: "new 49" in c.texts, timeout=40)
        assert never_shown(c, tmp_path / "a.log.1", log) == []
        assert c.texts == names("old", 0, 300) + names("new", 0, 50), "each line once, in order"
        (cut,) = c.events(EventKind.TRUNCATED)
        copy_size = (tmp_path / "a.log.1").stat().st_size
        assert cut.event.data["old_size"] == copy_size
        assert cut.event.data["unread"] == copy_size - read
        assert f"its copy {tmp_path / 'a.log.1'} holds the " in cut.event.message
        assert "nothing lost" not in reconnected_said(c, kind)
    finally:
        await c.stop()
        await links.close()


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["ssh", "pct"])
async def test_lines_written_during_a_reconnect_arrive_exactly_once_in_order(
    sshd: Sshd, tmp_path: Path, kind: str
) -> None:
    sshd.add_container(VMID)
    entry = sshd.host_yaml("h") if kind == "ssh" else sshd.pct_host_yaml("h", 105)
    host = parse_config("hosts:\n" + "".join(f"  {x}\n" for x in entry.splitlines())).hosts["h"]
    links = SshLinks()
    log = tmp_path / "numbered.log"
    log.write_text("")
    total = 600
    stop = threading.Event()

    def write_numbers() -> None:
        with log.open("a", buffering=1) as out:
            for i in range(total):
                out.write(f"n {i}\n")
                time.sleep(0.004)
                if stop.is_set():
                    return

    c = Collector(
        Follower(open_transport(host, links), str(log), label="h/s", start=Start(from_start=True))
    )
    writer = threading.Thread(target=write_numbers)
    try:
        await c.until(lambda: bool(c.events(EventKind.OPENED)))
        writer.start()
        await c.until(lambda: len(c.texts) >= 100)
        assert sshd.kill_sessions() >= 1
        await c.until(lambda: bool(c.events(EventKind.RECONNECTED)), timeout=30)
        await c.until(lambda: len(c.texts) >= total, timeout=30)
        writer.join()
        # A line written after all the others: once it is shown, anything shown twice
        # would have come before it.
        with log.open("a") as out:
            out.write("end\n")
        await c.until(lambda: "end" in c.texts)
        assert c.texts == [*(f"n {i}" for i in range(total)), "end"]
        assert c.events(EventKind.DISCONNECTED)
        assert "nothing lost or repeated" in c.events(EventKind.RECONNECTED)[0].event.message
    finally:
        stop.set()
        if writer.is_alive():
            writer.join()
        await c.stop()
        await links.close()


@pytest.mark.integration
async def test_last_500_lines_of_a_300_mb_log_read_under_1_mib(tmp_path: Path, sshd: Sshd) -> None:
    log = tmp_path / "big.log"
    line = (
        b"[2026-05-09 09:22:05 TP0] Decode batch, #running-req: 1, #token: 272, "
        b"gen throughput (token/s): 60.50, #queue-req: 0, \n"
    )
    tail_block = b"".join(line.replace(b"#queue-req: 0", b"#queue-req: %d" % i) for i in range(600))
    with log.open("wb") as out:
        # 300 MB of log lines, written as a few large blocks.
        block = line * (8 * 1024 * 1024 // len(line))
        while out.tell() < 300 * 1024 * 1024:
            out.write(block)
        out.write(tail_block)
    host = parse_config(
        "hosts:\n" + "".join(f"  {x}\n" for x in sshd.host_yaml("h").splitlines())
    ).hosts["h"]
    links = SshLinks()
    try:
        follower = Follower(
            open_transport(host, links), str(log), label="h/s", start=Start(tail=500), follow=False
        )
        c = Collector(follower)
        await asyncio.wait_for(c.task, 30)
        assert len(c.texts) == 500
        assert c.texts[-1].endswith("#queue-req: 599, ")
        assert c.texts[0].endswith("#queue-req: 100, ")
        assert follower.state.bytes_read < 1024 * 1024
    finally:
        await links.close()


# ---------------------------------------------------------------- the agent, in-process


def run_agent_steps(path: Path, start: dict, steps: list) -> list:
    """Drive the agent's own loop body by hand: deterministic, with real files."""
    out = io.BytesIO()
    agent = LogFollower({"path": str(path), "start": start}, Output(out), None)
    agent.start()
    frames = []
    decoder = FrameDecoder()
    for step in [None, *steps]:
        if step is not None:
            step()
        if agent.cur is not None:
            agent.pump(agent.cur)
        agent.check_path()
        frames.extend(decoder.feed(out.getvalue()))
        out.seek(0)
        out.truncate()
    return frames


@pytest.mark.unit
def test_agent_sees_truncate_and_regrow_between_two_polls(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"[09:00:00] run one started\n" + b"[09:00:01] decode\n" * 3)

    def regrow() -> None:
        # Same kind of lines, longer than before: size alone cannot tell.
        log.write_bytes(b"[09:05:00] run two started\n" + b"[09:05:01] decode\n" * 10)

    frames = run_agent_steps(log, {"from_start": True}, [regrow])
    kinds = [f.kind for f in frames]
    assert kinds[:2] == ["opened", "data"]
    truncated = next(f for f in frames if f.kind == "truncated")
    assert truncated.fields["regrown"] is True
    data_after = [f for f in frames[kinds.index("truncated") :] if f.kind == "data"]
    assert data_after[0].fields["offset"] == 0
    assert data_after[0].payload.startswith(b"[09:05:00] run two started")


@pytest.mark.unit
def test_agent_anchor_catches_a_rewrite_that_keeps_the_head(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    head = b"same header line that both runs print first\n"
    log.write_bytes(head + b"old line A\nold line B\n")

    def rewrite() -> None:
        log.write_bytes(head + b"new line C\nnew line D\nnew line E\n")

    frames = run_agent_steps(log, {"from_start": True}, [rewrite])
    assert any(f.kind == "truncated" and f.fields["regrown"] for f in frames)


@pytest.mark.unit
def test_agent_tail_reads_only_the_end(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    with log.open("wb") as out:
        out.truncate(50 * 1024 * 1024)  # a sparse 50 MB start
        out.seek(0, os.SEEK_END)
        out.write(b"".join(b"line %d\n" % i for i in range(100)))
    fd = os.open(log, os.O_RDONLY)
    try:
        offset, read = tail_offset(fd, log.stat().st_size, 10)
    finally:
        os.close(fd)
    assert log.read_bytes()[offset:].splitlines() == [b"line %d" % i for i in range(90, 100)]
    assert read <= 64 * 1024 + 1


@pytest.mark.unit
def test_agent_copytruncate_sends_the_unread_part_from_the_copy(tmp_path: Path) -> None:
    """Lines written between the last read and the cut are read from logrotate's copy."""
    from tui.core.follow import FollowState

    log = tmp_path / "a.log"
    copy = tmp_path / "a.log.1"
    log.write_bytes(numbered("before", 0, 10).encode())
    read = log.stat().st_size

    def copytruncate() -> None:
        append(log, numbered("unread", 0, 20))
        shutil.copyfile(log, copy)
        os.truncate(log, 0)
        append(log, numbered("after", 0, 3))

    frames = run_agent_steps(log, {"from_start": True}, [copytruncate])
    cut = next(f for f in frames if f.kind == "truncated")
    assert cut.fields["read"] == read
    assert cut.fields["old_size"] == copy.stat().st_size
    assert cut.fields["unread"] == copy.stat().st_size - read
    assert cut.fields["copy"] == str(copy)
    state = FollowState(str(log), "t")
    rows = [row for frame in frames for row in state.handle(frame)]
    texts = [r.text for r in rows if hasattr(r, "text")]
    assert texts == names("before", 0, 10) + names("unread", 0, 20) + names("after", 0, 3)
    (event,) = [r.event for r in rows if hasattr(r, "event") and r.event.kind.value == "truncated"]
    assert event.message.startswith(f"log truncated (was {copy.stat().st_size} B, now ")
    assert f"its copy {copy} holds the {copy.stat().st_size - read} B not read yet" in (
        event.message
    )


@pytest.mark.unit
def test_the_copy_is_found_among_many_old_ones_and_a_fifo_never_blocks(tmp_path: Path) -> None:
    """dateext rotation leaves dozens of older copies; a FIFO named like the log is no copy."""
    log = tmp_path / "a.log"
    log.write_bytes(numbered("before", 0, 10).encode())
    for day in range(1, 80):  # older copies, whose names sort before the new one
        old = tmp_path / f"a.log-2026{day:04d}"
        old.write_bytes(b"an older run\n")
        os.utime(old, (1_700_000_000 + day, 1_700_000_000 + day))
    os.mkfifo(tmp_path / "a.log.pipe")
    copy = tmp_path / "a.log-20991231"

    def copytruncate() -> None:
        append(log, numbered("unread", 0, 5))
        shutil.copyfile(log, copy)
        os.truncate(log, 0)
        append(log, numbered("after", 0, 2))

    frames = run_agent_steps(log, {"from_start": True}, [copytruncate])
    cut = next(f for f in frames if f.kind == "truncated")
    assert cut.fields["copy"] == str(copy)


@pytest.mark.unit
def test_a_cut_without_a_copy_says_the_old_size_is_not_known(tmp_path: Path) -> None:
    """babysit's own offset is how much it read, not how big the file was when cut."""
    from tui.core.follow import FollowState

    log = tmp_path / "a.log"
    log.write_bytes(numbered("before", 0, 10).encode())

    def cut() -> None:
        append(log, numbered("lost", 0, 20))
        os.truncate(log, 0)

    frames = run_agent_steps(log, {"from_start": True}, [cut])
    state = FollowState(str(log), "t")
    rows = [row for frame in frames for row in state.handle(frame)]
    (event,) = [r.event for r in rows if hasattr(r, "event") and r.event.kind.value == "truncated"]
    read = len(numbered("before", 0, 10))
    assert event.message == (
        f"log truncated (was at least {read} B, now 0 B): no copy beside it; "
        f"anything after byte {read} is lost"
    )
    assert event.data["old_size"] is None


@pytest.mark.unit
def test_agent_frames_are_json_and_bytes(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"\x00\xff binary\nline\n")
    frames = run_agent_steps(log, {"from_start": True}, [])
    data = next(f for f in frames if f.kind == "data")
    assert data.payload == b"\x00\xff binary\nline\n"
    opened = next(f for f in frames if f.kind == "opened")
    assert json.loads(json.dumps(opened.fields))["inode"] == log.stat().st_ino


@pytest.mark.unit
def test_a_renamed_log_is_not_called_deleted(tmp_path: Path) -> None:
    from tui.core.follow import FollowState

    log = tmp_path / "a.log"
    log.write_text("one\n")
    frames = run_agent_steps(log, {"from_start": True}, [lambda: log.rename(tmp_path / "a.1")])
    state = FollowState(str(log), "t")
    rows = [row for frame in frames for row in state.handle(frame)]
    events = [r.event for r in rows if hasattr(r, "event")]
    assert events[-1].kind is EventKind.DELETED
    assert events[-1].message.startswith(f"log renamed away: {log} no longer names inode")
    assert state.file is not None and not state.file.deleted


@pytest.mark.unit
def test_a_deleted_log_is_called_deleted(tmp_path: Path) -> None:
    from tui.core.follow import FollowState

    log = tmp_path / "a.log"
    log.write_text("one\n")
    frames = run_agent_steps(log, {"from_start": True}, [log.unlink])
    state = FollowState(str(log), "t")
    events = [r.event for f in frames for r in state.handle(f) if hasattr(r, "event")]
    assert events[-1].message.startswith(f"log deleted: {log} is gone; still reading inode")
