"""A container's own log followed through a real dockerd: its json-file through docker's
rotation, from a run's cursor after a restart, and ``docker logs`` where the file cannot
be read (the ``local`` log driver), locally and through the real sshd."""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import shutil
import signal
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from support.dockerd import Dockerd, wait_running
from support.sshd import Sshd
from support.wait import until
from test_follow import Collector

from tui.commands.tail import Printer, _tail
from tui.config import ContainerRef, Host, Service
from tui.core.follow import Start
from tui.core.lines import NANOSECONDS, rfc3339_ns
from tui.core.logcursor import STREAM_DEV, EventKind, LogCursor, LogLine
from tui.hostsfile import parse_config
from tui.remote import SshLinks, Transport, open_transport
from tui.remote.follow import Follower

pytestmark = pytest.mark.integration

COUNT = 2000


#: Lines written between two pauses of :data:`PAUSE` seconds: 2,000 lines in about
#: two seconds, a rotation of a 20 KiB file every ~0.15 s. (At docker's full speed on a
#: loaded machine, a file made and deleted within the few ms the follower is not
#: scheduled cannot be read by anyone.)
BURST = 25
PAUSE = 0.02


def numbers_script(count: int, prefix: str = "line") -> list[str]:
    """A shell that waits for /trigger/go, then prints ``count`` numbered lines quickly."""
    return [
        "sh",
        "-c",
        "while [ ! -e /trigger/go ]; do sleep 0.05; done; "
        f'i=0; while [ $i -lt {count} ]; do echo "{prefix} $i"; i=$((i+1)); '
        f"[ $((i % {BURST})) -eq 0 ] && sleep {PAUSE}; done; "
        "exec sleep 600",
    ]


def follower(transport: Transport, name: str, start: Start | None = None) -> Collector:
    return Collector(
        Follower(
            transport,
            None,
            label="test/ctr",
            start=start or Start(from_start=True),
            container=(name, "docker"),
        )
    )


def numbers(c: Collector, prefix: str = "line") -> list[int]:
    return [int(t.split()[1]) for t in c.texts if t.startswith(prefix + " ")]


@pytest.fixture(params=["local", "ssh"])
async def docker_host(
    request: pytest.FixtureRequest, sshd: Sshd, dockerd: Dockerd
) -> AsyncIterator[Transport]:
    """The docker host reached locally, or over the real sshd with the daemon's docker shim
    on the session's PATH."""
    if request.param == "local":
        yield await local_transport()
        return
    shutil.copy(dockerd.bin_dir / "docker", sshd.bin_dir / "docker")
    text = "hosts:\n" + "".join(f"  {line}\n" for line in sshd.host_yaml("viassh").splitlines())
    links = SshLinks()
    try:
        yield open_transport(parse_config(text).hosts["viassh"], links)
    finally:
        await links.close()
        (sshd.bin_dir / "docker").unlink(missing_ok=True)


async def local_transport() -> Transport:
    text = "hosts:\n  here:\n    local: true\n"
    return open_transport(parse_config(text).hosts["here"], SshLinks())


async def follow_numbers_through_rotation(
    dockerd: Dockerd, transport: Transport, tmp_path: Path, max_file: int, name: str
) -> None:
    trigger = tmp_path / "trigger"
    trigger.mkdir()
    dockerd.run_container(
        name,
        numbers_script(COUNT),
        options=[
            "-v",
            f"{trigger}:/trigger:ro",
            "--log-opt",
            "max-size=20k",
            "--log-opt",
            f"max-file={max_file}",
        ],
    )
    wait_running(dockerd, name)
    c = follower(transport, name)
    try:
        await c.until(lambda: bool(c.events(EventKind.OPENED)))
        (trigger / "go").touch()
        await c.until(lambda: len(numbers(c)) >= COUNT, timeout=60)
        assert numbers(c) == list(range(COUNT)), "every number once, in order"
        assert c.events(EventKind.SOURCE), "the screen says it follows the json-file"
        rotations = [e for e in c.events(EventKind.REPLACED) if "rotated" in e.event.message]
        assert len(rotations) >= 3, c.describe()
        lines = [r for r in c.rows if isinstance(r, LogLine)]
        assert all(line.stamp is not None and line.stream == "stdout" for line in lines)
        # Offsets are the files' own: each file read from its start, record after record.
        groups: list[list[LogLine]] = [[]]
        for row in c.rows:
            if isinstance(row, LogLine):
                groups[-1].append(row)
            elif row.event.kind is EventKind.REPLACED:
                groups.append([])
        for group in filter(None, groups):
            assert group[0].offset == 0
            assert all(a.offset + a.size == b.offset for a, b in itertools.pairwise(group))
    finally:
        await c.stop()


@pytest.mark.parametrize("max_file", [3, 2])
async def test_every_line_once_in_order_through_dockers_rotation(
    dockerd: Dockerd, docker_host: Transport, tmp_path: Path, max_file: int
) -> None:
    name = f"rotating-{max_file}-{docker_host.chain_text.split()[0]}"
    await follow_numbers_through_rotation(dockerd, docker_host, tmp_path, max_file, name)


def first_record_since(log_path: str, started_ns: int) -> LogCursor:
    """The cursor at the first record written at or after ``started_ns``."""
    with open(log_path, "rb") as handle:
        data = handle.read()
    st = os.stat(log_path)
    offset = 0
    for raw in data.splitlines(keepends=True):
        stamp = rfc3339_ns(json.loads(raw)["time"])
        if stamp is not None and stamp >= started_ns:
            break
        offset += len(raw)
    anchor = data[max(0, offset - 64) : offset]
    return LogCursor(st.st_dev, st.st_ino, offset, head=data[:64], anchor=anchor)


async def test_a_follower_at_the_runs_cursor_after_a_restart_shows_only_the_new_run(
    dockerd: Dockerd, tmp_path: Path
) -> None:
    name = "restarting"
    script = 'sleep 0.3; echo "run $(cat /proc/uptime)"; i=0; '
    script += 'while [ $i -lt 20 ]; do echo "line $i"; i=$((i+1)); done; exec sleep 600'
    dockerd.run_container(name, ["sh", "-c", script])
    wait_running(dockerd, name)
    log_path = dockerd.inspect(name, "{{.LogPath}}")
    await until(lambda: Path(log_path).read_text().count("line 19") == 1, "run 1", timeout=20)
    dockerd.docker("restart", "-t", "1", name)
    started = rfc3339_ns(dockerd.inspect(name, "{{.State.StartedAt}}"))
    assert started is not None
    await until(lambda: Path(log_path).read_text().count("line 19") == 2, "run 2", timeout=20)
    cursor = first_record_since(log_path, started)
    assert cursor.offset > 0
    c = follower(await local_transport(), name, Start(cursor=cursor))
    try:
        await c.until(lambda: "line 19" in c.texts)
        assert len([t for t in c.texts if t.startswith("run ")]) == 1, c.describe()
        assert numbers(c) == list(range(20)), "the new run's lines, each once"
        lines = [r for r in c.rows if isinstance(r, LogLine)]
        assert all(line.stamp is not None and line.stamp >= started / NANOSECONDS for line in lines)
    finally:
        await c.stop()


async def test_docker_logs_where_the_json_file_is_not_there_stamps_and_no_double_after_reconnect(
    dockerd: Dockerd, docker_host: Transport, tmp_path: Path
) -> None:
    name = f"local-driver-{docker_host.chain_text.split()[0]}"
    trigger = tmp_path / "trigger"
    trigger.mkdir()
    script = (
        'sleep 0.5; i=0; while [ $i -lt 50 ]; do echo "line $i"; i=$((i+1)); done; '
        "while [ ! -e /trigger/go ]; do sleep 0.05; done; "
        'while [ $i -lt 100 ]; do echo "line $i"; i=$((i+1)); done; exec sleep 600'
    )
    dockerd.run_container(
        name,
        ["sh", "-c", script],
        options=["--log-driver", "local", "-v", f"{trigger}:/trigger:ro"],
    )
    wait_running(dockerd, name)
    c = follower(docker_host, name)
    try:
        await c.until(lambda: len(numbers(c)) >= 50)
        source = c.events(EventKind.SOURCE)
        assert source and f"following docker logs of {name} since" in source[0].event.message
        assert "log driver is local" in source[0].event.message
        # Kill the stream: the docker logs CLI the follower runs.
        container_id = dockerd.inspect(name, "{{.Id}}")
        logs = [pid for pid, argv in _processes() if _streams_logs(argv, container_id)]
        assert logs, "a docker logs process runs"
        for pid in logs:
            os.kill(pid, signal.SIGKILL)
        (trigger / "go").touch()
        await c.until(lambda: len(numbers(c)) >= 100, timeout=30)
        assert numbers(c) == list(range(100)), "every line once across the reconnect"
        lines = [r for r in c.rows if isinstance(r, LogLine)]
        assert all(line.from_stream and line.dev == STREAM_DEV for line in lines)
        assert all(line.stamp is not None for line in lines)
        assert [line.offset for line in lines] == sorted(line.offset for line in lines)
    finally:
        await c.stop()


def _processes() -> list[tuple[int, list[str]]]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        found.append((int(entry), [a.decode(errors="replace") for a in argv if a]))
    return found


def _streams_logs(argv: list[str], container_id: str) -> bool:
    return "logs" in argv and "--follow" in argv and argv[-1] == container_id


def container_service(name: str) -> tuple[Host, Service]:
    """A local host with one service in container ``name`` (no ``log:``)."""
    text = "hosts:\n  here:\n    local: true\n    services:\n      qwen:\n"
    text += "        engine: vllm\n        log: /unused.log\n"
    host = parse_config(text).hosts["here"]
    service = replace(host.services["qwen"], log="", container=ContainerRef(name))
    return replace(host, services={"qwen": service}), service


@pytest.mark.parametrize("driver", ["json-file", "local"])
async def test_babysit_tail_of_a_container_service(
    dockerd: Dockerd, tmp_path: Path, driver: str
) -> None:
    name = f"tailed-{driver}"
    script = 'sleep 0.3; i=0; while [ $i -lt 30 ]; do echo "line $i"; i=$((i+1)); done; '
    dockerd.run_container(
        name, ["sh", "-c", script + "exec sleep 600"], options=["--log-driver", driver]
    )
    wait_running(dockerd, name)
    await until(lambda: "line 29" in dockerd.docker("logs", name).stdout, "the last line logged")
    host, service = container_service(name)

    async def tail(json_out: bool) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        printer = Printer(service.label, json_out=json_out, out=out, err=err)
        args = argparse.Namespace(pid=None, follow=False)
        assert await _tail(host, service, Start(tail=3), args, printer)
        return out.getvalue(), err.getvalue()

    out, err = await tail(json_out=False)
    assert out == "line 27\nline 28\nline 29\n"
    if driver == "json-file":
        assert "following the json-file of container" in err
    else:
        assert f"following docker logs of {name} since" in err
    out, _ = await tail(json_out=True)
    lines = [r for r in map(json.loads, out.splitlines()) if r["type"] == "line"]
    assert [r["text"] for r in lines] == ["line 27", "line 28", "line 29"]
    assert all(isinstance(r["stamp"], float) for r in lines)


async def test_a_container_made_again_under_its_name_is_followed_from_its_first_line(
    dockerd: Dockerd,
) -> None:
    name = "made-again"
    first = 'sleep 0.3; echo "first one"; exec sleep 600'
    dockerd.run_container(name, ["sh", "-c", first])
    wait_running(dockerd, name)
    c = follower(await local_transport(), name)
    try:
        await c.until(lambda: "first one" in c.texts)
        old_id = dockerd.inspect(name, "{{.Id}}")
        dockerd.remove(name)
        dockerd.run_container(name, ["sh", "-c", 'sleep 0.3; echo "second one"; exec sleep 600'])
        await c.until(lambda: "second one" in c.texts, timeout=30)
        assert c.texts == ["first one", "second one"]
        sources = [e.event.data.get("container") for e in c.events(EventKind.SOURCE)]
        assert sources[0] == old_id and sources[-1] == dockerd.inspect(name, "{{.Id}}")
    finally:
        await c.stop()


async def test_lines_written_while_the_ssh_link_is_down_arrive_once_through_a_rotation(
    dockerd: Dockerd, sshd: Sshd, tmp_path: Path
) -> None:
    name = "away-and-back"
    trigger = tmp_path / "trigger"
    trigger.mkdir()
    script = numbers_script(600)
    script[-1] = 'echo "line 0"; ' + script[-1].replace("i=0;", "i=1;")
    dockerd.run_container(
        name,
        script,
        options=[
            *("-v", f"{trigger}:/trigger:ro"),
            *("--log-opt", "max-size=20k", "--log-opt", "max-file=4"),
        ],
    )
    wait_running(dockerd, name)
    shutil.copy(dockerd.bin_dir / "docker", sshd.bin_dir / "docker")
    text = "hosts:\n" + "".join(f"  {line}\n" for line in sshd.host_yaml("viassh").splitlines())
    links = SshLinks()
    c = follower(open_transport(parse_config(text).hosts["viassh"], links), name)
    try:
        await c.until(lambda: numbers(c) == [0])
        with sshd.down():
            await c.until(lambda: bool(c.events(EventKind.DISCONNECTED)))
            (trigger / "go").touch()
            log_path = dockerd.inspect(name, "{{.LogPath}}")
            await until(lambda: "line 599" in Path(log_path).read_text(), "all written")
        await c.until(lambda: len(numbers(c)) >= 600, timeout=60)
        assert numbers(c) == list(range(600))
        said = " ".join(e.event.message for e in c.events())
        assert "resumed at inode" in said and "log rotated" in said, c.describe()
    finally:
        await c.stop()
        await links.close()
        (sshd.bin_dir / "docker").unlink(missing_ok=True)
