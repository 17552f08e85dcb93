"""One audit record, whoever acted: the same keys and types for kill, relaunch, replace
and a failed launch, from ``babysit kill`` / ``babysit relaunch`` and from the host
screen's k, r and R.

Real ``babysit sim`` servers on this machine (a ``local:`` host); the CLI verbs run
as ``main([...])``, the screen under Pilot.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.servers import Server
from test_app_actions import READY, host_screen, kill_port, modal_of, real_app, until, verdict
from test_ops import local_config

from tui.app.app import BabysitApp, HostView
from tui.cli import main
from tui.core.sanitize import printable
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

#: Every record's keys, and its identity's.
KEYS = {
    "time",
    "user",
    "host",
    "service",
    "action",
    "actor",
    "identity",
    "command",
    "ok",
    "result",
}
IDENTITY = {"boot_id", "pid", "start_ticks", "run_id"}
#: A launch command that cannot start, with a secret its record must not keep.
SECRET = "sk-audit-0123456789abcdef"  # noqa: S105 - a stand-in, redacted by the test
MISSING = ["/nonexistent/babysit-audit-server", "--api-key", SECRET]

#: The shape (see :func:`shape`) of each end, the same whoever acted.
SEEN = {"boot_id": "str", "pid": "int", "start_ticks": "int", "run_id": "NoneType"}
STARTED = {"boot_id": "str", "pid": "int", "start_ticks": "int", "run_id": "str"}
NONE = dict.fromkeys(IDENTITY, "NoneType")
KILLED = ("kill", True, SEEN, "list")
LAUNCHED = ("relaunch", True, STARTED, "list")
WAITED = ("wait", True, STARTED, "list")
REFUSED = ("relaunch", False, NONE, "list")


def records() -> list[dict[str, Any]]:
    path = Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def start_ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def shape(record: dict[str, Any]) -> tuple[str, bool, dict[str, str], str]:
    """(action, ok, the type of each identity field, the command's type): what must not
    differ by who acted."""
    identity = {k: type(v).__name__ for k, v in record["identity"].items()}
    return record["action"], record["ok"], identity, type(record["command"]).__name__


def check(record: dict[str, Any], actor: str) -> None:
    """Every key there, each of its type."""
    assert set(record) == KEYS, record
    assert set(record["identity"]) == IDENTITY, record
    assert record["actor"] == actor
    assert (record["host"], record["service"]) == ("h", "qwen")
    assert all(isinstance(record[k], str) for k in ("time", "user", "action", "result"))
    assert isinstance(record["ok"], bool)
    command = record["command"]
    assert command is None or (
        isinstance(command, list) and all(isinstance(w, str) for w in command)
    )


def check_killed(record: dict[str, Any], pid: int, ticks: int, argv: list[str]) -> None:
    assert (record["action"], record["ok"]) == ("kill", True), record
    assert record["identity"] == {
        "boot_id": boot_id(),
        "pid": pid,
        "start_ticks": ticks,
        "run_id": None,
    }
    assert record["command"] == [printable(w) for w in argv], "as the probe showed it"
    assert f"pid {pid} and 0 child process(es) are gone" in record["result"]


def alive(pid: int) -> tuple[int, list[str]]:
    """The start ticks and command line of a process that runs now."""
    return start_ticks(pid), cmdline(pid)


def check_launched(
    relaunch: dict[str, Any], wait: dict[str, Any], seen: tuple[int, list[str]]
) -> int:
    """A relaunch and its wait: the same run, as ``seen`` (:func:`alive`) while it ran."""
    assert (relaunch["action"], relaunch["ok"]) == ("relaunch", True), relaunch
    assert (wait["action"], wait["ok"]) == ("wait", True), wait
    identity = relaunch["identity"]
    assert wait["identity"] == identity
    pid = identity["pid"]
    assert identity["boot_id"] == boot_id()
    assert identity["start_ticks"] == seen[0]
    assert isinstance(identity["run_id"], str) and identity["run_id"]
    assert relaunch["command"] == seen[1] == wait["command"]
    assert relaunch["result"] == f"started pid {pid}"
    assert wait["result"].startswith("ready: ") and READY in wait["result"]
    return pid


def check_failed_launch(record: dict[str, Any]) -> None:
    assert (record["action"], record["ok"]) == ("relaunch", False), record
    assert record["identity"] == dict.fromkeys(IDENTITY)
    assert record["command"] == [*MISSING[:2], f"<redacted, {len(SECRET)} chars>"]
    assert "the server did not start" in record["result"] and MISSING[0] in record["result"]


def missing_config(folder: Path) -> str:
    """One service whose launch: cannot start (and no run is there), logging in ``folder``."""
    launch = json.dumps({"command": MISSING})
    log = json.dumps(str(folder / "serve.log"))
    return (
        "hosts:\n  h:\n    local: true\n    services:\n"
        f"      qwen: {{engine: sglang, log: {log}, launch: {launch}}}\n"
    )


# ---------------------------------------------------------------------- the CLI


def test_the_cli_audits_each_action_in_one_shape(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=0.2)
    config = tmp_path / "hosts.yaml"
    config.write_text(local_config(log, server.port, load=0.2))
    cfg = ["--config", str(config)]
    try:
        server.wait_for(READY)
        ticks, argv = alive(server.pid)
        assert main(["kill", "h/qwen", "--pid", str(server.pid), "--grace", "5", *cfg]) == 0
        assert main(["relaunch", "h/qwen", "--wait", "--timeout", "30", *cfg]) == 0
        assert main(["relaunch", "h/qwen", *cfg]) == 2, "a run is there"
        first = records()[1]["identity"]["pid"]
        first_seen = alive(first)
        assert main(["relaunch", "h/qwen", "--replace", "--wait", "--timeout", "30", *cfg]) == 0
        done = records()
        for record in done:
            check(record, "cli")
        assert [shape(r) for r in done] == [
            KILLED, LAUNCHED, WAITED, REFUSED, KILLED, LAUNCHED, WAITED
        ]  # fmt: skip
        kill, relaunch, wait, refused, replaced, again, ready = done
        check_killed(kill, server.pid, ticks, argv)
        assert check_launched(relaunch, wait, first_seen) == first
        assert (refused["action"], refused["ok"]) == ("relaunch", False)
        assert "has a run" in refused["result"]
        assert refused["identity"] == dict.fromkeys(IDENTITY)
        assert refused["command"] == first_seen[1], "the command it would have started"
        check_killed(replaced, first, *first_seen)
        assert check_launched(again, ready, alive(again["identity"]["pid"])) != first
    finally:
        server.kill()
        kill_port(server.port)


def test_the_cli_audits_a_launch_that_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "hosts.yaml"
    config.write_text(missing_config(tmp_path))
    assert main(["relaunch", "h/qwen", "--wait", "--config", str(config)]) == 1
    assert "the server did not start" in capsys.readouterr().err
    (record,) = records()
    check(record, "cli")
    assert shape(record) == REFUSED
    check_failed_launch(record)


# ---------------------------------------------------------------------- the screen


async def confirm(pilot: Any, key: str) -> None:
    await pilot.press(key)
    await modal_of(pilot)
    await pilot.press("tab", "enter")


async def test_the_screen_audits_each_action_in_the_same_shape(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=0.2)
    try:
        server.wait_for(READY)
        ticks, argv = alive(server.pid)
        app = real_app(log, server.port)
        async with app.run_test(size=(120, 36)) as pilot:
            screen_of = lambda: host_screen(app)  # noqa: E731
            await until(lambda: verdict(app) is Verdict.LIVE, "LIVE", pilot=pilot)
            await confirm(pilot, "K")
            await until(lambda: verdict(app) is Verdict.DEAD, "DEAD", timeout=30, pilot=pilot)
            await until(lambda: not screen_of().action_running, "the kill's end", pilot=pilot)
            await confirm(pilot, "r")
            await until(lambda: len(records()) == 3, "the relaunch's wait", timeout=30, pilot=pilot)
            await until(lambda: verdict(app) is Verdict.LIVE, "LIVE again", pilot=pilot)
            await until(lambda: not screen_of().action_running, "the relaunch's end", pilot=pilot)
            first = records()[1]["identity"]["pid"]
            first_seen = alive(first)
            await confirm(pilot, "R")
            await until(lambda: len(records()) == 6, "the replace's wait", timeout=30, pilot=pilot)
        done = records()
        for record in done:
            check(record, "screen")
        assert [shape(r) for r in done] == [KILLED, LAUNCHED, WAITED, KILLED, LAUNCHED, WAITED]
        kill, relaunch, wait, replaced, again, ready = done
        check_killed(kill, server.pid, ticks, argv)
        assert check_launched(relaunch, wait, first_seen) == first
        check_killed(replaced, first, *first_seen)
        assert check_launched(again, ready, alive(again["identity"]["pid"])) != first
    finally:
        server.kill()
        kill_port(server.port)


async def test_the_screen_audits_a_launch_that_fails(tmp_path: Path) -> None:
    host = parse_config(missing_config(tmp_path)).hosts["h"]
    app = BabysitApp(HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2))
    async with app.run_test(size=(120, 36)) as pilot:
        await until(lambda: verdict(app) is Verdict.DEAD, "DEAD", pilot=pilot)
        screen = host_screen(app)
        await confirm(pilot, "r")
        await until(lambda: screen.progress.has_class("-failed"), "the failure", pilot=pilot)
        assert "the server did not start" in screen.progress.words
    (record,) = records()
    check(record, "screen")
    assert shape(record) == REFUSED
    check_failed_launch(record)
