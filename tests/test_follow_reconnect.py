"""Following across a dropped SSH connection, a huge log, and the agent's own detection logic."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from support.sshd import Sshd
from test_follow import Collector

from tui.config import parse_config
from tui.core.follow import Start
from tui.core.frames import FrameDecoder
from tui.core.logcursor import EventKind
from tui.remote import SshLinks, open_transport
from tui.remote import agent as agent_module
from tui.remote.follow import Follower


@pytest.mark.parametrize("kind", ["ssh", "pct"])
async def test_lines_written_during_a_reconnect_arrive_exactly_once_in_order(
    sshd: Sshd, tmp_path: Path, kind: str
) -> None:
    sshd.add_container(105)
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
    agent = agent_module.Agent({"path": str(path), "start": start}, agent_module.Output(out), None)
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


def test_agent_anchor_catches_a_rewrite_that_keeps_the_head(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    head = b"same header line that both runs print first\n"
    log.write_bytes(head + b"old line A\nold line B\n")

    def rewrite() -> None:
        log.write_bytes(head + b"new line C\nnew line D\nnew line E\n")

    frames = run_agent_steps(log, {"from_start": True}, [rewrite])
    assert any(f.kind == "truncated" and f.fields["regrown"] for f in frames)


def test_agent_tail_reads_only_the_end(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    with log.open("wb") as out:
        out.truncate(50 * 1024 * 1024)  # a sparse 50 MB start
        out.seek(0, os.SEEK_END)
        out.write(b"".join(b"line %d\n" % i for i in range(100)))
    fd = os.open(log, os.O_RDONLY)
    try:
        offset, read = agent_module.tail_offset(fd, log.stat().st_size, 10)
    finally:
        os.close(fd)
    assert log.read_bytes()[offset:].splitlines() == [b"line %d" % i for i in range(90, 100)]
    assert read <= 64 * 1024 + 1


def test_agent_source_runs_on_python_3_6_syntax() -> None:
    """The agent is sent to hosts with old python3: no syntax newer than 3.6."""
    import ast

    source = Path(agent_module.__file__).read_text()
    tree = ast.parse(source, feature_version=(3, 6))
    assert not any(isinstance(node, ast.NamedExpr) for node in ast.walk(tree))
    assert "from __future__ import annotations" not in source
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_agent_frames_are_json_and_bytes(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"\x00\xff binary\nline\n")
    frames = run_agent_steps(log, {"from_start": True}, [])
    data = next(f for f in frames if f.kind == "data")
    assert data.payload == b"\x00\xff binary\nline\n"
    opened = next(f for f in frames if f.kind == "opened")
    assert json.loads(json.dumps(opened.fields))["inode"] == log.stat().st_ino


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


def test_a_deleted_log_is_called_deleted(tmp_path: Path) -> None:
    from tui.core.follow import FollowState

    log = tmp_path / "a.log"
    log.write_text("one\n")
    frames = run_agent_steps(log, {"from_start": True}, [log.unlink])
    state = FollowState(str(log), "t")
    events = [r.event for f in frames for r in state.handle(f) if hasattr(r, "event")]
    assert events[-1].message.startswith(f"log deleted: {log} is gone; still reading inode")
