"""`babysit tail` as a script would run it: stdout lines, stderr events, JSON lines."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.servers import Server
from support.sshd import Sshd


def config_for(tmp_path: Path, host_entry: str, log: Path) -> Path:
    path = tmp_path / "hosts.yaml"
    body = (
        host_entry.rstrip("\n") + f"\n  services:\n    qwen:\n      log: {json.dumps(str(log))}\n"
    )
    path.write_text("hosts:\n" + "".join(f"  {line}\n" for line in body.splitlines()))
    return path


def babysit(*args: str) -> list[str]:
    return [sys.executable, "-m", "tui", *args]


@pytest.mark.integration
def test_tail_prints_the_last_lines_over_ssh(sshd: Sshd, tmp_path: Path) -> None:
    log = tmp_path / "serve log.txt"
    log.write_text("".join(f"line {i}\n" for i in range(50)))
    config = config_for(tmp_path, sshd.host_yaml("gpu"), log)
    result = subprocess.run(
        babysit("tail", "gpu/qwen", "-n", "3", "--config", str(config)),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "line 47\nline 48\nline 49\n"
    assert result.stderr == ""


@pytest.mark.integration
def test_tail_json_lines_carry_inode_and_offset(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("alpha\nbeta\n")
    config = config_for(tmp_path, "here:\n  local: true\n", log)
    result = subprocess.run(
        babysit("tail", "here", "--from-start", "--json", "--config", str(config)),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[0]["type"] == "event" and records[0]["event"] == "opened"
    inode = log.stat().st_ino
    assert records[1:] == [
        {"type": "line", "dev": log.stat().st_dev, "inode": inode, "offset": 0, "text": "alpha"},
        {"type": "line", "dev": log.stat().st_dev, "inode": inode, "offset": 6, "text": "beta"},
    ]


@pytest.mark.integration
def test_tail_follow_reports_events_on_stderr(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("x" * 2000 + "\nfirst\n")
    config = config_for(tmp_path, "here:\n  local: true\n", log)
    proc = subprocess.Popen(
        babysit("tail", "here/qwen", "-f", "-n", "1", "--config", str(config)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout and proc.stderr
        assert proc.stdout.readline() == "first\n"
        log.write_text("")
        assert proc.stderr.readline() == (
            "babysit: here/qwen: log truncated (was at least 1.96 KiB, now 0 B): no copy "
            "beside it; anything after byte 2,007 is lost\n"
        )
        time.sleep(0.2)
        with log.open("a") as handle:
            handle.write("second run\n")
        assert proc.stdout.readline() == "second run\n"
        log.unlink()
        assert proc.stderr.readline().startswith(
            f"babysit: here/qwen: log deleted: {log} is gone; still reading inode"
        )
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.integration
def test_tail_missing_log_without_follow_says_so(tmp_path: Path) -> None:
    config = config_for(tmp_path, "here:\n  local: true\n", tmp_path / "nope.log")
    result = subprocess.run(
        babysit("tail", "here", "--config", str(config)),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"babysit: here/qwen: {tmp_path / 'nope.log'} does not exist" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
def test_tail_on_a_stale_service_says_who_writes_what_and_how_to_follow_it(
    sshd: Sshd, tmp_path: Path, kind: str
) -> None:
    """The log was deleted and made again: nothing writes the file at the path."""
    log = tmp_path / "serve.log"
    server = Server(log)
    try:
        server.wait_for("fired up and ready")
        log.unlink()
        log.write_text("")  # the file at the path now; the server writes the deleted one
        sshd.add_container(105)
        entry = {
            "local": "here:\n  local: true\n",
            "ssh": sshd.host_yaml("here"),
            "pct": sshd.pct_host_yaml("here", 105),
        }[kind]
        config = tmp_path / "hosts.yaml"
        body = entry.rstrip("\n") + (
            f"\n  services:\n    qwen:\n      engine: sglang\n      log: {json.dumps(str(log))}\n"
            f"      port: {server.port}\n"
        )
        config.write_text("hosts:\n" + "".join(f"  {line}\n" for line in body.splitlines()))
        result = subprocess.run(
            babysit("tail", "here/qwen", "--config", str(config)),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == ""
        said = result.stderr
        assert said.startswith(f"babysit: here/qwen: STALE — pid {server.pid} "), said
        assert f"writes {log} (deleted, inode " in said
        assert "and nothing writes it" in said
        # the command to type, as babysit was run (python -m tui here): it works as printed
        follow = shlex.join(babysit("tail", "here/qwen", "--pid", str(server.pid)))
        assert f"to follow what pid {server.pid} writes: {follow}" in said

        as_json = subprocess.run(
            babysit("tail", "here/qwen", "--json", "--config", str(config)),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        records = [json.loads(line) for line in as_json.stdout.splitlines()]
        (note,) = [r for r in records if r.get("event") == "verdict"]
        assert note["verdict"] == "STALE" and note["pid"] == server.pid
        assert note["writer_deleted"] is True
        assert f"--pid {server.pid}" in note["message"]
        assert as_json.stderr == ""

        followed = subprocess.run(
            babysit("tail", "here/qwen", "--pid", str(server.pid), "--config", str(config)),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert "fired up and ready" in followed.stdout, "--pid follows what the server writes"
    finally:
        server.kill()
