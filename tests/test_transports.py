"""The three transports behave the same: argv byte-for-byte, status, stdin, timeouts, streams.

Every "remote" here is real: local subprocesses, OpenSSH's sshd on 127.0.0.1, and
the pct stand-in on that sshd's PATH. Because all three end on this machine, the
tests can look at /proc to see that ended commands are really gone.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import psutil
import pytest
from support.wait import until

from tui.errors import CommandTimeout
from tui.remote import Transport
from tui.remote.local import LocalTransport

pytestmark = pytest.mark.integration

# Arguments that break naive quoting somewhere between here and the remote argv.
NASTY_ARGS = [
    "with space",
    "single ' quote",
    'double " quote',
    "$HOME",
    "${PATH}",
    "`id`",
    "$(echo injected)",
    "a;b && c | d",
    "line1\nline2\n",
    "tab\there",
    "back\\slash",
    "ünïcødé ✓ 日本",
    "*",
    "~",
    "",
    "--",
    "-n",
    "'",
    '"',
    "!event",
    "#not a comment",
]


def _marker() -> str:
    return f"babysit-test-{uuid.uuid4().hex[:12]}"


def _processes_with(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if any(marker in part for part in cmdline):
            found.append(proc)
    return found


async def _gone(marker: str, what: str, within: float = 5.0) -> None:
    """Until no process carries ``marker``; ``what`` is said if one still does."""
    await until(lambda: not _processes_with(marker), what, timeout=within)


async def test_arguments_arrive_byte_for_byte(transport: Transport) -> None:
    result = await transport.run(["printf", "%s\\0", *NASTY_ARGS], timeout=20)
    assert result.exit_status == 0, result.stderr
    expected = b"".join(arg.encode() + b"\0" for arg in NASTY_ARGS)
    assert result.stdout == expected


async def test_argv_is_never_reparsed_by_a_shell(transport: Transport, tmp_path: Path) -> None:
    # If any hop re-joined the argv into shell text, this would create the file.
    victim = tmp_path / "pwned"
    result = await transport.run(["echo", f"x; touch {victim}"], timeout=20)
    assert result.stdout == f"x; touch {victim}\n".encode()
    assert not victim.exists()


async def test_exit_status_stdout_stderr_and_stdin(transport: Transport) -> None:
    result = await transport.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=20)
    assert (result.exit_status, result.stdout, result.stderr) == (3, b"out\n", b"err\n")
    assert not result.ok
    data = b"line one\n\x00binary\xff\nlast line without newline"
    echoed = await transport.run(["cat"], timeout=20, stdin=data)
    assert echoed.ok and echoed.stdout == data
    empty = await transport.run(["cat"], timeout=20, stdin=b"")
    assert empty.ok and empty.stdout == b""


async def test_a_command_that_ends_before_its_stdin_is_written_says_its_own_failure(
    transport: Transport,
) -> None:
    """A command that fails at once (as ``docker exec`` of a missing container does) may
    end, and its channel close, before the stdin babysit sends it is written: its stderr
    and exit status are the answer, never a "connection lost". Which comes first is a
    race (won most often when other commands share the connection, as a fleet's probes
    do), so it is run many times, four at once."""
    data = os.urandom(40_000)  # about a probe agent's size, as it travels
    fails = ["sh", "-c", "echo nope >&2; exit 3"]
    for _ in range(30):
        results = await asyncio.gather(
            *(transport.run(fails, timeout=20, stdin=data) for _ in range(4))
        )
        for result in results:
            assert (result.exit_status, result.stderr) == (3, b"nope\n"), result


async def test_missing_command_is_exit_127_not_an_error(transport: Transport) -> None:
    result = await transport.run(["no-such-command-babysit"], timeout=20)
    assert result.exit_status == 127
    assert b"no-such-command-babysit" in result.stderr


async def test_timeout_ends_the_remote_command(transport: Transport) -> None:
    marker = _marker()
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"did not finish within 0\.5 s and was ended"):
        await transport.run(["sh", "-c", f"exec sleep 30 # {marker}", marker], timeout=0.5)
    assert time.monotonic() - started < 10
    await _gone(marker, "the timed-out command to end")


async def test_stream_yields_output_and_leaving_it_ends_the_command(transport: Transport) -> None:
    marker = _marker()
    script = 'i=0; while :; do echo "$i"; i=$((i+1)); sleep 0.02; done'
    received = b""
    async with transport.stream(["sh", "-c", script, marker]) as process:
        async for chunk in process.chunks():
            received += chunk
            if received.count(b"\n") >= 20:
                break
        assert _processes_with(marker), "the streamed command should be running"
    numbers = [int(n) for n in received.split(b"\n")[:20]]
    assert numbers == list(range(20))
    await _gone(marker, "leaving the stream to end the command")


async def test_cancelling_a_stream_reader_ends_the_command(transport: Transport) -> None:
    marker = _marker()
    started = asyncio.Event()

    async def follow() -> None:
        async with transport.stream(
            ["sh", "-c", "while :; do echo tick; sleep 0.05; done", marker]
        ) as process:
            async for _chunk in process.chunks():
                started.set()

    task = asyncio.create_task(follow())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _gone(marker, "cancelling to end the remote command")


async def test_stream_with_stdin_is_a_conversation(transport: Transport) -> None:
    async with transport.stream(["cat"], stdin=True) as process:
        chunks = process.chunks()
        await process.write(b"ping\n")
        assert await anext(chunks) == b"ping\n"
        await process.write(b"second\n")
        assert await anext(chunks) == b"second\n"
        await process.close_stdin()
        assert [c async for c in chunks] == []
        assert await process.wait() == 0


async def test_stream_reports_exit_status_and_stderr(transport: Transport) -> None:
    async with transport.stream(["sh", "-c", "echo a; echo oops >&2; exit 4"]) as process:
        out = b"".join([c async for c in process.chunks()])
        err = await process.read_stderr()
        status = await process.wait()
    assert (out, err, status) == (b"a\n", b"oops\n", 4)


def _pipes_held_here() -> set[str]:
    """The pipes this process holds an fd of, as the kernel names them ("pipe:[inode]")."""
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own fd, or one closed meanwhile
            continue
        if target.startswith("pipe:"):
            held.add(target)
    return held


async def test_a_local_stream_left_while_a_grandchild_holds_its_pipe_leaves_no_fd_open() -> None:
    """asyncio closes a subprocess's pipes only at EOF: a command that exits while a child
    of its own still holds stdout would keep our ends open (and the transport alive past
    its loop, where its finalizer fails) unless leaving the stream closes them.

    The pipe is named by the grandchild's own fd 1, so fds other tests of this worker open
    or close meanwhile do not count. (The command may have exited or not when the stream
    is left: either way our end closes.)"""
    marker = _marker()
    # setsid: the grandchild leaves the command's group, so ending the group spares it
    script = 'setsid sleep 30 & echo "$!"'
    grandchild: psutil.Process | None = None
    try:
        async with LocalTransport().stream(["sh", "-c", script, marker]) as process:
            first = await anext(process.chunks())
            grandchild = held = psutil.Process(int(first.split()[0]))
            # the fork is seen before its exec: until it is the sleep that holds the pipe
            await until(lambda: held.name() == "sleep", "the grandchild's exec", timeout=5)
            its_stdout = os.readlink(f"/proc/{held.pid}/fd/1")
            assert its_stdout in _pipes_held_here()  # the stream reads that very pipe
        assert grandchild.is_running()  # still holding the pipe: no EOF came
        # asyncio closes a pipe's fd on the loop's next turn after its transport is closed
        await until(lambda: its_stdout not in _pipes_held_here(), "our end closed", timeout=5)
    finally:
        if grandchild is not None:
            grandchild.kill()


async def test_leaving_a_local_stream_ends_its_command_though_a_grandchild_holds_its_pipe() -> None:
    """Ending a command waits for the command, not for EOF on its pipes: a grandchild that
    left its group keeps stdout open for 30 s, and leaving must not wait for it, even when
    the command ignores SIGTERM and is killed. (asyncio's wait() returns only at EOF of
    every pipe, unless the exit was seen before the call; an unread, paused pipe never
    gets there either.)"""
    marker = _marker()
    script = 'trap "" TERM; setsid sleep 30 & echo "$!"; sleep 30'
    grandchild: psutil.Process | None = None

    async def leave() -> None:
        nonlocal grandchild
        async with LocalTransport().stream(["sh", "-c", script, marker]) as process:
            first = await anext(process.chunks())
            grandchild = psutil.Process(int(first.split()[0]))

    try:
        await asyncio.wait_for(leave(), 15)  # a guard against the hang, not a timing
        held = grandchild
        assert held is not None
        await until(lambda: held.name() == "sleep", "the grandchild's exec", timeout=5)
        assert held.is_running()  # spared: it left the group we ended
        await _gone(marker, "the command ended")
        its_stdout = os.readlink(f"/proc/{held.pid}/fd/1")
        await until(lambda: its_stdout not in _pipes_held_here(), "our end closed", timeout=5)
    finally:
        if grandchild is not None:
            grandchild.kill()
