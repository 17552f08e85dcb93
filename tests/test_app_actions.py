"""k kill, r relaunch, R replace on the host screen, against real simulated servers.

The Pilot tests run real ``babysit sim`` processes on this machine (a ``local:``
host): the probe, the agent's kill and launch, the readiness wait and the
follower are all the real ones. The snapshots use fixed rows, a fixed
assessment, a stand-in for the host's answers and a frozen clock, so they draw
the same every run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from support.servers import REPO, Server, free_port, service_yaml
from support.sessions import StandIns
from support.wait import until
from test_app_host_screen import screen_lines
from test_app_snapshots import (
    DEV,
    INODE,
    NOW,
    PID,
    SIZE,
    ConnectedTransport,
    FixedFollower,
    probed,
    rows_shown,
    utc,  # noqa: F401 (a fixture)
)
from textual.command import CommandList
from textual.pilot import Pilot
from textual.widgets import Button

from tui.app.app import BabysitApp, HostView, make_app
from tui.app.screens.action_words import KillWords, WaitWords
from tui.app.screens.confirm import ConfirmAction, gpu_text
from tui.app.screens.help import HelpScreen
from tui.app.screens.host import HostScreen
from tui.app.widgets.action_progress import ActionProgress
from tui.app.widgets.log_view import LogView
from tui.core.assess import assess
from tui.core.follow import FileInfo
from tui.core.logcursor import EventKind, EventRow, LogCursor, LogLine, Row
from tui.core.runs import Assessment, ServiceProbe
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.ops.kill import KillTarget
from tui.ops.kill_outcome import KillEvent
from tui.ops.relaunch import Launched, WaitProgress, WaitResult
from tui.session.sessions import Sessions

READY = "The server is fired up and ready to roll!"


# ---------------------------------------------------------------------- real servers


def real_app(log: Path, port: int, **kwargs: Any) -> BabysitApp:
    body = "h:\n  local: true\n" + service_yaml(log, port, stop_grace=5)
    host = parse_config("hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())).hosts["h"]
    return BabysitApp(
        HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2), **kwargs
    )


def kill_port(port: int) -> None:
    """Stop whatever sim a test launched on ``port`` (it outlives the app on purpose)."""
    for proc in psutil.process_iter(["cmdline"]):
        if f"--port {port} " in " ".join(proc.info["cmdline"] or []):
            proc.kill()


def with_progress(pilot: Pilot[Any], what: str) -> Callable[[], str]:
    """``what``, and the action progress's words if one is shown: a timeout's message."""

    def said() -> str:
        progress = [w for s in pilot.app.screen_stack for w in s.query(ActionProgress)]
        return f"{what} (progress: {progress[0].words!r})" if progress else what

    return said


def host_screen(app: BabysitApp) -> HostScreen:
    screen = app.screen_stack[1]
    assert isinstance(screen, HostScreen)
    return screen


def verdict(app: BabysitApp) -> Verdict | None:
    a = host_screen(app).assessment
    return a.verdict if a else None


async def later_refreshes(pilot: Pilot[Any], app: BabysitApp, count: int = 2) -> None:
    """Until ``count`` more verdicts have landed, so that the last one looked at the host
    after this was called (what a test waits for before saying something did not happen)."""
    for _ in range(count):
        seen = host_screen(app).assessment
        since = seen.checked_at if seen else 0.0

        def newer(since: float = since) -> bool:
            now = host_screen(app).assessment
            return now is not None and now.checked_at > since

        await until(newer, with_progress(pilot, "a later refresh"), pilot=pilot)


def footer_text(app: BabysitApp) -> str:
    """The bottom row of the host screen as drawn."""
    lines = screen_lines(app)
    assert app.screen is host_screen(app)
    return lines[-1]


def audit_lines() -> list[dict[str, Any]]:
    path = Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def assert_new_run_shown_once(screen: HostScreen, inode: int) -> None:
    """The new run's marker line and its "following …" row each once; search finds one."""
    view = screen.log_view
    markers = [
        r for r in view.buffer if isinstance(r, LogLine) and r.text.startswith("babysit run=")
    ]
    opened = [
        r.event.message
        for r in view.buffer
        if isinstance(r, EventRow)
        and r.event.kind is EventKind.OPENED
        and r.event.data.get("inode") == inode
    ]
    assert len(markers) == 1, [r.text for r in markers]
    assert len(opened) == 1, opened
    assert len({(r.inode, r.offset) for r in view.buffer if isinstance(r, LogLine)}) == sum(
        isinstance(r, LogLine) for r in view.buffer
    ), "no line of the file shown twice"
    view.start_search("babysit run=")
    assert view.search is not None and len(view.search.rows) == 1


async def modal_of(pilot: Pilot[Any]) -> ConfirmAction:
    await until(
        lambda: isinstance(pilot.app.screen, ConfirmAction),
        with_progress(pilot, "the modal"),
        pilot=pilot,
    )
    await pilot.pause()
    modal = pilot.app.screen
    assert isinstance(modal, ConfirmAction)
    return modal


@pytest.mark.integration
async def test_k_asks_first_cancel_leaves_it_running_confirm_kills_it(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=0.2)
    try:
        server.wait_for(READY)
        app = real_app(log, server.port)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(
                lambda: verdict(app) is Verdict.LIVE, with_progress(pilot, "LIVE"), pilot=pilot
            )
            screen = host_screen(app)
            assert screen.check_action("kill", ()) is True
            assert screen.check_action("replace", ()) is True
            assert screen.check_action("relaunch", ()) is None, "a run is there"

            await pilot.press("K")
            modal = await modal_of(pilot)
            text = modal.plan.text()
            assert f"pid: {server.pid}" in text
            assert shlex.join(psutil.Process(server.pid).cmdline()) in text
            assert "children: none" in text
            assert app.focused is not None and app.focused.id == "cancel"
            await until(
                lambda: "checking" not in modal.plan.text(),
                with_progress(pilot, "the GPU fact"),
                pilot=pilot,
            )
            await pilot.press("enter")  # on Cancel
            await until(
                lambda: app.screen is screen,
                with_progress(pilot, "the modal to close"),
                pilot=pilot,
            )
            await later_refreshes(pilot, app)
            assert server.proc.poll() is None, "Cancel signals nothing"
            assert verdict(app) is Verdict.LIVE
            assert not screen.progress.has_class("-shown")

            await pilot.press("K")
            await modal_of(pilot)
            await pilot.press("tab")
            assert app.focused is not None and app.focused.id == "confirm"
            await pilot.press("enter")
            await until(
                lambda: screen.progress.has_class("-ok"),
                with_progress(pilot, "the kill to finish"),
                pilot=pilot,
            )
            assert server.proc.wait(5) is not None
            assert f"pid {server.pid} and 0 child process(es) are gone" in screen.progress.words
            await until(
                lambda: verdict(app) is Verdict.DEAD, with_progress(pilot, "DEAD"), pilot=pilot
            )
            assert "DEAD" in str(screen.query_one("#banner").render())
            assert screen.check_action("kill", ()) is None
            events = [r.event.message for r in screen.log_view.buffer if isinstance(r, EventRow)]
            assert any(m.startswith(f"kill: stopping pid {server.pid}") for m in events)
        (entry,) = audit_lines()
        assert (entry["action"], entry["ok"]) == ("kill", True)
        assert entry["identity"]["pid"] == server.pid
    finally:
        server.kill()


@pytest.mark.integration
async def test_r_relaunches_follows_the_new_inode_and_reaches_ready(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-05-09 09:22:05] {READY}\n")  # a previous run's ready line
    old_inode = log.stat().st_ino
    port = free_port()
    app = real_app(log, port)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await until(
                lambda: verdict(app) is Verdict.DEAD, with_progress(pilot, "DEAD"), pilot=pilot
            )
            screen = host_screen(app)
            assert screen.check_action("relaunch", ()) is True
            assert screen.check_action("kill", ()) is None
            assert screen.check_action("replace", ()) is None

            await pilot.press("r")
            modal = await modal_of(pilot)
            text = modal.plan.text()
            spec = screen.service.launch
            assert spec is not None
            # The full command line, quoted; the newline in an argument shown as \n.
            assert shlex.join(spec.command).replace("\n", "\\n") in text
            assert f"cwd: {REPO}" in text
            assert f"env: PYTHONPATH={REPO}" in text
            assert f"{log}.<YYYYmmdd-HHMMSS>" in text
            assert app.focused is not None and app.focused.id == "cancel"
            await pilot.click("#confirm")

            await until(
                lambda: screen.progress.has_class("-ok"),
                with_progress(pilot, "ready"),
                timeout=30,
                pilot=pilot,
            )
            words = screen.progress.words
            assert " is ready after " in words and READY in words, words
            new_inode = log.stat().st_ino
            assert new_inode != old_inode
            view = screen.query_one(LogView)
            await until(
                lambda: view.file is not None, with_progress(pilot, "the new file"), pilot=pilot
            )
            assert view.file is not None and view.file.inode == new_inode
            fresh = [r for r in view.buffer if isinstance(r, LogLine) and r.inode == new_inode]
            assert fresh[0].text.startswith("babysit run="), "from the anchor: the marker first"
            assert any(READY in r.text for r in fresh)
            rotated = [p for p in tmp_path.iterdir() if p.name.startswith("serve.log.")]
            assert len(rotated) == 1 and READY in rotated[0].read_text()
            await until(
                lambda: verdict(app) is Verdict.LIVE, with_progress(pilot, "LIVE"), pilot=pilot
            )
            assert_new_run_shown_once(screen, new_inode)
        actions = [(e["action"], e["ok"]) for e in audit_lines()]
        assert actions == [("relaunch", True), ("wait", True)]
    finally:
        kill_port(port)


@pytest.mark.integration
async def test_capital_r_kills_then_relaunches(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=0.2)
    try:
        server.wait_for(READY)
        app = real_app(log, server.port)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(
                lambda: verdict(app) is Verdict.LIVE, with_progress(pilot, "LIVE"), pilot=pilot
            )
            screen = host_screen(app)
            await pilot.press("R")
            modal = await modal_of(pilot)
            text = modal.plan.text()
            assert f"1 · stop pid {server.pid}" in text and "2 · start again" in text
            await pilot.press("tab", "enter")
            await until(
                lambda: screen.progress.has_class("-ok") and "ready" in screen.progress.words,
                with_progress(pilot, "ready"),
                timeout=30,
                pilot=pilot,
            )
            assert server.proc.poll() is not None
            await until(
                lambda: verdict(app) is Verdict.LIVE,
                with_progress(pilot, "LIVE again"),
                pilot=pilot,
            )
            a = screen.assessment
            assert a is not None and a.run is not None and a.run.root.pid != server.pid
            new_inode = log.stat().st_ino
            await until(
                lambda: any(
                    isinstance(r, LogLine) and r.inode == new_inode and READY in r.text
                    for r in screen.log_view.buffer
                ),
                with_progress(pilot, "the new run's ready line"),
                pilot=pilot,
            )
            assert_new_run_shown_once(screen, new_inode)
        actions = [(e["action"], e["ok"]) for e in audit_lines()]
        assert actions == [("kill", True), ("relaunch", True), ("wait", True)]
    finally:
        server.kill()
        kill_port(server.port)


@pytest.mark.integration
async def test_a_relaunch_refused_after_confirming_is_told_in_plain_words(
    tmp_path: Path,
) -> None:
    """A run appears while the modal is open: the launch is refused, said plainly, no crash."""
    log = tmp_path / "serve.log"
    port = free_port()
    app = real_app(log, port)
    server: Server | None = None
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await until(
                lambda: verdict(app) is Verdict.DEAD, with_progress(pilot, "DEAD"), pilot=pilot
            )
            screen = host_screen(app)
            await pilot.press("r")
            await modal_of(pilot)
            server = Server(log, port=port, load=0.2)  # someone started it by hand meanwhile
            server.wait_for(READY)
            await pilot.press("tab", "enter")
            await until(
                lambda: screen.progress.has_class("-failed"),
                with_progress(pilot, "the refusal"),
                pilot=pilot,
            )
            words = screen.progress.words
            assert words.startswith("not done: h/qwen has a run: LIVE — pid"), words
            assert "use --replace (R) to stop it first" in words
            errors = [
                r.event.message
                for r in screen.log_view.buffer
                if isinstance(r, EventRow) and r.event.kind is EventKind.ERROR
            ]
            assert any("relaunch: not done: h/qwen has a run" in m for m in errors)
            assert app.is_running and screen.check_action("kill", ()) is True
            assert server.proc.poll() is None
        (entry,) = audit_lines()
        assert (entry["action"], entry["ok"]) == ("relaunch", False)
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("serve.log")] == [
            "serve.log"
        ], "no log renamed: nothing was launched"
    finally:
        if server is not None:
            server.kill()


@pytest.mark.integration
async def test_read_only_offers_and_runs_no_action(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, load=0.2)
    try:
        server.wait_for(READY)
        app = real_app(log, server.port, read_only=True)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(
                lambda: verdict(app) is Verdict.LIVE, with_progress(pilot, "LIVE"), pilot=pilot
            )
            screen = host_screen(app)
            for action in ("kill", "relaunch", "replace"):
                assert screen.check_action(action, ()) is False
            await pilot.press("K", "r", "R")
            await later_refreshes(pilot, app)
            assert app.screen is screen, "no modal"
            await until(
                lambda: footer_text(app).strip(), with_progress(pilot, "the footer"), pilot=pilot
            )
            footer = footer_text(app)
            assert "search" in footer
            assert "kill" not in footer and "relaunch" not in footer and "replace" not in footer
            screen.action_kill()  # even asked directly, it refuses
            await pilot.pause()
            assert app.screen is screen and not screen.action_running
            assert server.proc.poll() is None
        assert not (Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl").exists()
    finally:
        server.kill()


@pytest.mark.integration
async def test_keys_are_disabled_without_a_run_or_a_launch(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text("an old line\n")
    config = parse_config(
        "hosts:\n  h:\n    local: true\n    services:\n"
        f"      qwen: {{engine: sglang, log: {json.dumps(str(log))}, "
        "match: 'tui sim .*--port 1 '}\n"
    )
    host = config.hosts["h"]
    app = BabysitApp(HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2))
    async with app.run_test(size=(120, 36)) as pilot:
        await until(lambda: verdict(app) is Verdict.DEAD, with_progress(pilot, "DEAD"), pilot=pilot)
        screen = host_screen(app)
        for action in ("kill", "relaunch", "replace"):
            assert screen.check_action(action, ()) is None, action
        await until(
            lambda: footer_text(app).strip(), with_progress(pilot, "the footer"), pilot=pilot
        )
        assert " K kill " in footer_text(app), "shown, greyed out"
        await pilot.press("K", "r", "R")
        await later_refreshes(pilot, app)
        assert app.screen is screen and not screen.action_running


# ---------------------------------------------------------------------- words


@pytest.mark.unit
def test_kill_words_count_the_grace_then_say_what_is_checked() -> None:
    target = KillTarget("b", ((PID, 1), (PID + 1, 2)), 30000)
    words = KillWords(target, 30)
    assert words.text(0) == f"stopping pid {PID}: checking each pid's identity … 0 s"
    for pid in (PID, PID + 1):
        words.add(KillEvent("signalled", pid, "", {"signal": "SIGTERM"}))
    assert words.text(3.2) == f"stopping pid {PID}: SIGTERM sent to 2 · 3 s of 30 …"
    words.add(KillEvent("exited", PID + 1, ""))
    words.add(KillEvent("signalled", PID, "", {"signal": "SIGKILL"}))
    assert words.text(30.4) == (
        f"stopping pid {PID}: SIGTERM sent to 2, SIGKILL sent to 1, 1 of 2 gone · 30 s …"
    )
    words.add(KillEvent("exited", PID, ""))
    assert words.text(31).endswith("2 of 2 gone; checking the port and GPU memory … 31 s")


@pytest.mark.unit
def test_wait_words_carry_phase_and_the_last_fresh_line() -> None:
    launched = Launched("r", 70001, 1, "b", "/l", 1, 2, 0, (), None)
    words = WaitWords(launched)
    assert words.text(0.4) == "relaunched pid 70001 · 0 s · starting"
    words.add(WaitProgress(12.0, "loading weights", "Load weight begin \x1b[2J"), 12.0)
    assert words.text(13.0) == (
        "relaunched pid 70001 · 13 s · loading weights — Load weight begin \\x1b[2J"
    )


@pytest.mark.unit
def test_gpu_fact_names_the_pids_or_says_why_not() -> None:
    apps = [
        {"pid": PID, "used_mib": 38912, "gpu_uuid": "GPU-a"},
        {"pid": 4242, "used_mib": 100, "gpu_uuid": "GPU-a"},
    ]
    assert gpu_text({"gpu_apps": apps}, [PID, PID + 1]) == (
        f"38.00 GiB in all: pid {PID} 38.00 GiB"
    )
    assert gpu_text({"gpu_apps": None}, [PID]).startswith("unknown")
    assert gpu_text({"gpu_apps": []}, [PID]).startswith("none")


# ---------------------------------------------------------------------- snapshots

SNAP_HOSTS = """\
hosts:
  kpro5:
    ssh: root@10.0.0.15
    services:
      qwen:
        engine: sglang
        log: /root/sglang-serve.log
        port: 30000
        gpus: [0, 1]
        stop_grace: 30
        launch:
          cwd: /root
          env: {HF_HOME: /data/hf, HF_TOKEN: hf_abcdefghijklmnopqrstuvwxyz012345}
          command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen3-32B,
                    --tp, "2", --port, "30000", --mem-fraction-static, "0.9"]
"""
NEW_INODE = 9345
NEW_PID = 70001
LAUNCHED = Launched(
    "5f2c9d1e0a7b",
    NEW_PID,
    987654,
    "b0e1c2d3",
    "/root/sglang-serve.log",
    DEV,
    NEW_INODE,
    0,
    (
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "Qwen/Qwen3-32B",
        "--tp",
        "2",
        "--port",
        "30000",
        "--mem-fraction-static",
        "0.9",
    ),
    "/root/sglang-serve.log.20260112-092431",
)
NEW_LINES = [
    'babysit run=5f2c9d1e0a7b pid=70001 start=2026-01-12T09:24:31+0000 argv=["python3", …]',
    "[2026-01-12 09:24:36] server_args=ServerArgs(model_path='Qwen/Qwen3-32B', tp_size=2, "
    "port=30000, mem_fraction_static=0.9)",
    "[2026-01-12 09:24:41 TP0] Init torch distributed begin.",
    "[2026-01-12 09:24:43 TP0] Load weight begin. avail mem=78.50 GB",
]


class StandInOps:
    """The host's answers, fixed: GPU memory of the run, a launch, a wait in progress."""

    def __init__(self) -> None:
        self.killed: list[KillTarget] = []

    async def preflight(self) -> dict[str, object]:
        return {
            "port_owners": [],
            "gpus": {},
            "gpu_apps": [
                {"pid": PID, "used_mib": 71680, "gpu_uuid": "GPU-0"},
                {"pid": PID + 1, "used_mib": 71680, "gpu_uuid": "GPU-1"},
            ],
        }

    async def kill(self, target: KillTarget, *, grace: float) -> AsyncIterator[KillEvent]:
        self.killed.append(target)
        yield KillEvent("signalled", target.root_pid, "", {"signal": "SIGTERM"})
        await asyncio.Event().wait()

    async def launch(self) -> Launched:
        return LAUNCHED

    async def wait_ready(self, launched: Launched) -> AsyncIterator[WaitProgress | WaitResult]:
        yield WaitProgress(12.0, "loading weights", NEW_LINES[-1])
        await asyncio.Event().wait()


class NewRunFollower:
    """The new run's first lines, from its anchor; ``shown`` once the pane has them."""

    file = FileInfo("/root/sglang-serve.log", DEV, NEW_INODE, 412, NOW)

    def __init__(self) -> None:
        self.shown = False

    async def rows(self) -> AsyncIterator[list[Row]]:
        rows: list[Row] = []
        offset = 0
        for text in NEW_LINES:
            size = len(text.encode()) + 1
            rows.append(LogLine(text, DEV, NEW_INODE, offset, size, NOW))
            offset += size
        yield rows
        self.shown = True  # the screen asked for more: it has added these rows
        await asyncio.Event().wait()


def new_run_starting() -> Assessment:
    """What the probe sees once the stand-in launch happened: pid 70001 loading."""
    cmdline = list(LAUNCHED.argv)
    run = {
        "pid": NEW_PID, "ppid": 1, "start_ticks": 987654, "start_time": NOW, "user": "root",
        "cmdline": cmdline, "cwd": "/root", "sources": ["command", "writes log"],
        "files": [{"fd": 1, "path": LAUNCHED.log, "dev": DEV, "inode": NEW_INODE,
                   "deleted": False, "write": True, "at_log": True}],
        "members": [],
        "ready": {"seen": False, "source": "timestamps", "anchor": 0, "at": None},
    }  # fmt: skip
    log = {"path": LAUNCHED.log, "regular": True, "dev": DEV, "inode": NEW_INODE, "size": 412,
           "mtime": NOW}  # fmt: skip
    data = {"name": "qwen", "log": log, "runs": [run], "unreadable": []}
    top = {"boot_id": "b0e1c2d3", "now": NOW, "utc_offset": 0}
    return assess(ServiceProbe.from_json("kpro5", "sglang", top, data))


def snap_app(
    assessment: Assessment, *, read_only: bool = False, probe_interval: float = 2.0
) -> BabysitApp:
    """The snapshot app on ``assessment``; once the new run's lines are shown (after the
    stand-in launch), the probe sees it starting — always in that order."""
    new_run = NewRunFollower()

    def answers(host: object, services: object) -> list[Assessment]:
        return [new_run_starting() if new_run.shown else assessment]

    def follower(session: object, cursor: LogCursor | None, pid: int | None) -> Any:
        return new_run if cursor is not None else FixedFollower()

    config = parse_config(SNAP_HOSTS)
    sessions = StandIns(
        answers=answers,
        follower=follower,
        ops=lambda host, service: StandInOps(),
        transport=ConnectedTransport(),
        clock=lambda: NOW,
        interval=probe_interval,
    )
    return make_app(
        config, ["kpro5/qwen"], sessions=sessions, read_only=read_only, clock=lambda: NOW
    )


async def modal_drawn(pilot: Pilot[Any]) -> None:
    modal = await modal_of(pilot)
    await until(
        lambda: "checking" not in modal.plan.text(),
        with_progress(pilot, "the GPU fact"),
        pilot=pilot,
    )
    await pilot.pause()


@pytest.mark.integration
def test_kill_modal(utc: None, snap_compare: Any) -> None:  # noqa: F811
    """k on a live run: pid, start time and age, command, children, GPU memory; Cancel focused."""

    async def press_k(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await pilot.press("K")
        await modal_drawn(pilot)
        assert isinstance(pilot.app.focused, Button) and pilot.app.focused.id == "cancel"

    app = snap_app(probed(writes=INODE, ready=True))
    assert snap_compare(app, terminal_size=SIZE, run_before=press_k)


@pytest.mark.integration
def test_relaunch_modal(utc: None, snap_compare: Any) -> None:  # noqa: F811
    """r with no run: the full command, cwd, env (token hidden), the log's rename."""

    async def press_r(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await pilot.press("r")
        await modal_of(pilot)
        await pilot.pause()

    app = snap_app(probed(writes=None, ready=None, mtime=NOW - 180))
    assert snap_compare(app, terminal_size=SIZE, run_before=press_r)


@pytest.mark.integration
def test_relaunch_progress(utc: None, snap_compare: Any) -> None:  # noqa: F811
    """Confirmed: the progress line under the banner, the pane on the new run's file."""

    async def relaunch(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await pilot.press("r")
        await modal_of(pilot)
        await pilot.press("tab", "enter")
        screen = host_screen(pilot.app)  # type: ignore[arg-type]
        progress = screen.query_one(ActionProgress)
        await until(
            lambda: "loading weights" in progress.words,
            with_progress(pilot, "the progress"),
            pilot=pilot,
        )
        view = screen.query_one(LogView)
        await until(
            lambda: view.file is not None and view.file.inode == NEW_INODE,
            with_progress(pilot, "pane"),
            pilot=pilot,
        )
        await until(
            lambda: verdict(pilot.app) is Verdict.STARTING,
            with_progress(pilot, "STARTING"),
            pilot=pilot,
        )  # type: ignore[arg-type]
        await pilot.pause()

    app = snap_app(probed(writes=None, ready=None, mtime=NOW - 180), probe_interval=0.1)
    assert snap_compare(app, terminal_size=SIZE, run_before=relaunch)


@pytest.mark.integration
def test_read_only(utc: None, snap_compare: Any) -> None:  # noqa: F811
    """--read-only on a live run: no k, r or R in the footer, and pressing them does nothing."""

    async def press_keys(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await pilot.press("K", "r", "R")
        await pilot.pause()
        assert host_screen(pilot.app).check_action("kill", ()) is False  # type: ignore[arg-type]

    app = snap_app(probed(writes=INODE, ready=True), read_only=True)
    assert snap_compare(app, terminal_size=SIZE, run_before=press_keys)


@pytest.mark.integration
def test_help_lists_the_keys(utc: None, snap_compare: Any) -> None:  # noqa: F811
    """? on a live run: every key, those not usable now (relaunch: a run is there) dimmed."""

    async def press_help(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await pilot.press("question_mark")
        await until(
            lambda: isinstance(pilot.app.screen, HelpScreen),
            with_progress(pilot, "help"),
            pilot=pilot,
        )
        await pilot.pause()

    app = snap_app(probed(writes=INODE, ready=True))
    assert snap_compare(app, terminal_size=SIZE, run_before=press_help)


@pytest.mark.integration
async def test_the_command_palette_offers_each_allowed_action(utc: None) -> None:  # noqa: F811
    app = snap_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        screen = host_screen(app)
        titles = {c.title for c in app.get_system_commands(screen)}
        assert {"Kill the run", "Replace the run", "Help"} <= titles
        assert "Relaunch" not in titles, "a run is there"
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"kill the")

        def kill_offered() -> bool:
            hits = app.screen.query(CommandList)
            return bool(hits) and any(
                "Kill the run" in str(hits.first().get_option_at_index(i).prompt)
                for i in range(hits.first().option_count)
            )

        await until(kill_offered, "the palette offering Kill the run", pilot=pilot)
        await pilot.press("enter")
        modal = await modal_of(pilot)
        assert modal.plan.title == "Kill kpro5/qwen?"
        await pilot.press("escape")
        await until(
            lambda: app.screen is screen, with_progress(pilot, "the modal to close"), pilot=pilot
        )

    read_only = snap_app(probed(writes=INODE, ready=True), read_only=True)
    async with read_only.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        titles = {c.title for c in read_only.get_system_commands(host_screen(read_only))}
        assert "Help" in titles
        assert not titles & {"Kill the run", "Relaunch", "Replace the run"}
