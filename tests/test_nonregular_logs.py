"""A log path that is not a regular file: one plain line everywhere, never a hang, and
no agent left behind on the host.

A FIFO, a directory, a device, a socket, a symlink to one of them, or a path whose
folder is a file: `babysit tail` (text and JSON), the probe's log facts and the host
screen's log pane each say what it is in the same words; `tail -f` waits for a
regular file there without repeating itself. Killing the babysit that follows one
(SIGKILL: no cleanup) leaves no agent of that follow on the host, over every
transport, and an agent blocked writing to a reader that stopped reading still ends
when its stdin closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.agent_as import run_agent_as
from support.sshd import Sshd
from support.wait import until, wait_until

from tui.app.app import BabysitApp, HostView
from tui.app.widgets.log_view import LogView
from tui.core.logcursor import EventKind, EventRow
from tui.hostsfile import parse_config
from tui.remote.agentcall import AGENT_MARK, run_agent, stream_agent
from tui.remote.probe import probe_request
from tui.remote.transport import Transport

pytestmark = pytest.mark.integration

VMID = 105
ONLY_REGULAR = "not a regular file; babysit reads only regular files"


# ---------------------------------------------------------------- the paths


def not_regular(kind: str, tmp_path: Path) -> tuple[Path, str, str | None]:
    """A log path of ``kind``, the one line babysit says of it, and its file type."""
    if kind == "fifo":
        path = tmp_path / "serve.log"
        os.mkfifo(path)
        return path, f"{path} is a FIFO (named pipe), {ONLY_REGULAR}", "a FIFO (named pipe)"
    if kind == "directory":
        path = tmp_path / "serve.log"
        path.mkdir()
        return path, f"{path} is a directory, {ONLY_REGULAR}", "a directory"
    if kind == "dev-zero":
        said = f"/dev/zero is a character device, {ONLY_REGULAR}"
        return Path("/dev/zero"), said, "a character device"
    if kind == "socket":
        path = tmp_path / "serve.log"
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))  # the socket file stays after the socket is closed
        return path, f"{path} is a socket, {ONLY_REGULAR}", "a socket"
    if kind == "link-to-device":
        path = tmp_path / "serve.log"
        path.symlink_to("/dev/zero")
        return (
            path,
            f"{path} (a symbolic link to /dev/zero) is a character device, {ONLY_REGULAR}",
            "a character device",
        )
    if kind == "folder-is-a-file":
        folder = tmp_path / "logs"
        folder.write_text("a file where a folder was meant\n")
        path = folder / "serve.log"
        return path, f"{path} cannot exist: {folder} is a regular file, not a directory", None
    raise ValueError(kind)


KINDS = ["fifo", "directory", "dev-zero", "socket", "link-to-device", "folder-is-a-file"]
# Over ssh and pct: the kinds whose opening blocked or said "None" before.
REMOTE_KINDS = ["fifo", "dev-zero", "link-to-device"]


def host_entry(sshd: Sshd, via: str) -> str:
    if via == "pct":
        sshd.add_container(VMID)
        return sshd.pct_host_yaml("here", VMID)
    if via == "ssh":
        return sshd.host_yaml("here")
    return "here:\n  local: true\n"


def write_config(tmp_path: Path, entry: str, log: Path) -> Path:
    config = tmp_path / "hosts.yaml"
    body = entry.rstrip("\n") + f"\n  services:\n    qwen:\n      log: {json.dumps(str(log))}\n"
    config.write_text("hosts:\n" + "".join(f"  {line}\n" for line in body.splitlines()))
    return config


def babysit(*args: str) -> list[str]:
    return [sys.executable, "-m", "tui", *args]


# ---------------------------------------------------------------- tail, text and JSON


@pytest.mark.parametrize(
    ("via", "kind"),
    [("local", kind) for kind in KINDS]
    + [(via, kind) for via in ("ssh", "pct") for kind in REMOTE_KINDS],
)
def test_tail_of_a_log_that_is_not_a_regular_file_says_so_in_one_line(
    sshd: Sshd, tmp_path: Path, via: str, kind: str
) -> None:
    log, said, file_type = not_regular(kind, tmp_path)
    config = write_config(tmp_path, host_entry(sshd, via), log)
    text = subprocess.run(
        babysit("tail", "here/qwen", "--config", str(config)),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (text.returncode, text.stdout) == (1, "")
    assert text.stderr == f"babysit: here/qwen: {said}\n"

    as_json = subprocess.run(
        babysit("tail", "here/qwen", "--json", "--config", str(config)),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    expected: dict[str, object] = {
        "type": "event",
        "event": "error",
        "message": said,
        "path": str(log),
    }
    if file_type is not None:
        expected["file_type"] = file_type
    assert [json.loads(line) for line in as_json.stdout.splitlines()] == [expected]
    assert (as_json.returncode, as_json.stderr) == (1, "")


def test_tail_follow_waits_for_a_regular_file_without_repeating_itself(tmp_path: Path) -> None:
    log, said, _ = not_regular("fifo", tmp_path)
    config = write_config(tmp_path, "here:\n  local: true\n", log)
    proc = subprocess.Popen(
        babysit("tail", "here/qwen", "-f", "--config", str(config)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout and proc.stderr
        assert proc.stderr.readline() == f"babysit: here/qwen: {said}\n"
        # Said once: a few rounds of the agent's loop pass before the FIFO goes.
        regular = tmp_path / "new.log"
        regular.write_text("a regular file at last\n")
        regular.rename(log)
        assert proc.stdout.readline() == "a regular file at last\n"
        assert proc.stderr.readline() == f"babysit: here/qwen: {log} appeared\n"
    finally:
        proc.kill()
        proc.wait()


# ---------------------------------------------------------------- no agent outlives its channel


def agents_watching(folder: Path) -> set[tuple[int, float]]:
    """(pid, create time) of every agent below this test process (locally, and through
    the test's own sshd and pct stand-in) whose inotify watches ``folder``: the agents
    following a log in it, so only this test's."""
    inode = folder.stat().st_ino
    found = set()
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if not any(AGENT_MARK in arg for arg in process.cmdline()):
                continue
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            if watches(process.pid, inode):
                found.add((process.pid, process.create_time()))
    return found


def watches(pid: int, inode: int) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        if any(f" ino:{inode:x} " in line for line in info.splitlines()):
            return True
    return False


def still_running(agents: set[tuple[int, float]]) -> list[int]:
    """The pids of ``agents`` still running (the same processes: create times match)."""
    left = []
    for pid, created in agents:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            if process.create_time() == created and process.status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
    return left


@pytest.mark.parametrize("via", ["local", "ssh", "pct"])
@pytest.mark.parametrize("how", ["fifo", "renamed-to-fifo"])
def test_killing_babysit_that_follows_a_fifo_leaves_no_agent_on_the_host(
    sshd: Sshd, tmp_path: Path, via: str, how: str
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "serve.log"
    if how == "fifo":
        os.mkfifo(log)
    else:
        log.write_text("the first file\n")
    config = write_config(tmp_path, host_entry(sshd, via), log)
    proc = subprocess.Popen(
        babysit("tail", "here/qwen", "-f", "--config", str(config)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout and proc.stderr
        said = f"babysit: here/qwen: {log} is a FIFO (named pipe), {ONLY_REGULAR}\n"
        if how == "renamed-to-fifo":
            assert proc.stdout.readline() == "the first file\n"
            fifo = folder / "fifo"
            os.mkfifo(fifo)
            fifo.rename(log)
            assert proc.stderr.readline().startswith("babysit: here/qwen: log replaced: ")
        assert proc.stderr.readline() == said
        agents = wait_until(lambda: agents_watching(folder), 10, "the follow's agent")
    finally:
        proc.send_signal(signal.SIGKILL)  # no cleanup of any kind
        proc.wait()
    wait_until(lambda: not still_running(agents), 10, f"agents {sorted(agents)} to end")


async def test_an_agent_blocked_writing_ends_when_its_stdin_closes(
    transport: Transport, tmp_path: Path
) -> None:
    """Its reader stopped reading (the pipe and the channel's window are full, so the
    agent is blocked in a write) and then closed the agent's stdin: it ends."""
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "serve.log"
    with log.open("wb") as handle:
        handle.truncate(1 << 30)  # sparse: a GiB to send, and no disk used
    request = {"path": str(log), "follow": True, "start": {"from_start": True}}
    async with stream_agent(transport, request) as process:
        agents = await until(lambda: agents_watching(folder), "the agent", timeout=15)
        await until(lambda: blocked_writing(agents), "the agent blocked writing", timeout=15)
        await process.close_stdin()
        await until(lambda: not still_running(agents), "the agent to end", timeout=10)
        async for _ in process.chunks():  # what it wrote before it ended, then EOF
            pass
        await process.wait()


def blocked_writing(agents: set[tuple[int, float]]) -> bool:
    """Whether each agent is asleep in a write of its stdout (the reader reads nothing)."""
    for pid, _ in agents:
        try:
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_SLEEPING:
                return False
            wchan = Path(f"/proc/{pid}/wchan").read_text()
        except (psutil.Error, OSError):
            return False
        if "pipe_write" not in wchan:
            return False
    return True


# ---------------------------------------------------------------- the probe's log facts


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "folder-is-a-file"])
async def test_the_probe_says_why_the_log_cannot_be_read(
    transport: Transport, tmp_path: Path, kind: str
) -> None:
    log, said, _ = not_regular(kind, tmp_path)
    host = parse_config(
        "hosts:\n  here:\n    local: true\n    services:\n"
        f"      qwen: {{log: {json.dumps(str(log))}}}\n"
    ).hosts["here"]
    result = await run_agent(transport, probe_request(list(host.services.values())), timeout=30)
    assert result.ok, result.completed.stderr
    (facts,) = [s["log"] for s in json.loads(result.completed.stdout)["services"]]
    assert facts["regular"] is False
    assert facts["problem"] == said


def test_the_probe_says_a_log_it_may_not_read_is_denied(tmp_path: Path) -> None:
    """The probe runs as a user who may not enter the test's folder."""
    log = tmp_path / "serve.log"
    log.write_text("written by root\n")
    os.chmod(tmp_path, 0o700)
    host = parse_config(
        "hosts:\n  here:\n    local: true\n    services:\n"
        f"      qwen: {{log: {json.dumps(str(log))}}}\n"
    ).hosts["here"]
    data = run_agent_as("nobody", "nogroup", probe_request(list(host.services.values())))
    (facts,) = [s["log"] for s in data["services"]]
    assert facts["problem"] == f"{log} cannot be read: permission denied to user nobody"


# ---------------------------------------------------------------- the host screen


def pane_events(app: BabysitApp) -> Iterator[str]:
    for row in app.screen.query_one(LogView).buffer:
        if isinstance(row, EventRow) and row.event.kind is EventKind.ERROR:
            yield row.event.message


def screen_text(app: BabysitApp) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(s.text for s in strip) for strip in strips)


async def test_the_host_screen_log_pane_says_what_the_log_is(tmp_path: Path) -> None:
    log, said, _ = not_regular("fifo", tmp_path)
    config = parse_config(
        f"hosts:\n  here:\n    local: true\n    services:\n      svc: {{log: {log}}}\n"
    )
    host = config.hosts["here"]
    app = BabysitApp(HostView(host, host.services["svc"]))
    async with app.run_test(size=(200, 36)) as pilot:
        await until(lambda: said in list(pane_events(app)), repr(said), pilot=pilot)
        await pilot.pause()
        assert list(pane_events(app)) == [said]
        assert ONLY_REGULAR in screen_text(app)
