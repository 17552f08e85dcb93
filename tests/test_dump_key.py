"""The host screen's ``d`` key against a real sim: the dump runs off the event loop, its
path is on the progress line, in the log pane and in a notification; without a verified
run ``d`` is greyed out and says why."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from support.servers import REPO, Server, free_port, service_yaml
from support.wait import until
from textual.pilot import Pilot

from tui.app.app import BabysitApp, HostView
from tui.app.screens.help import HelpScreen
from tui.app.screens.host import HostScreen
from tui.core.logcursor import EventRow
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"
SIZE = (80, 24)


@pytest.fixture(autouse=True)
def tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """py-spy (the venv's) and the nvidia-smi stand-in on the local agent's PATH."""
    path = os.pathsep.join([str(REPO / "tui" / "sim"), str(Path(sys.executable).parent)])
    monkeypatch.setenv("PATH", f"{path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BABYSIT_SIM_PYTHON", sys.executable)


def app_on(log: Path, port: int) -> BabysitApp:
    body = "h:\n  local: true\n" + service_yaml(log, port)
    host = parse_config("hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())).hosts["h"]
    return BabysitApp(HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2))


def host_screen(app: BabysitApp) -> HostScreen:
    screen = app.screen_stack[1]
    assert isinstance(screen, HostScreen)
    return screen


def verdict(app: BabysitApp) -> Verdict | None:
    a = host_screen(app).assessment
    return a.verdict if a else None


def said(pilot: Pilot[Any], what: str):
    def words() -> str:
        return f"{what} (progress: {host_screen(pilot.app).progress.words!r})"

    return words


async def test_d_writes_the_bundle_and_says_its_path(
    tmp_path: Path, state_dirs: dict[str, Path]
) -> None:
    log = tmp_path / "serve.log"
    server = Server(log)
    try:
        server.wait_for(READY)
        app = app_on(log, server.port)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: verdict(app) is Verdict.LIVE, said(pilot, "LIVE"), pilot=pilot)
            screen = host_screen(app)
            assert screen.check_action("dump", ()) is True
            await pilot.press("d")
            await until(
                lambda: screen.progress.words.startswith("dump written: "),
                said(pilot, "the bundle's path"),
                pilot=pilot,
                timeout=90,
            )
            path = Path(screen.progress.words.removeprefix("dump written: "))
            assert path.parent == state_dirs["local"] / "dumps"
            assert path.is_file()
            text = path.read_text()
            assert f"process {server.pid} (parent " in text
            assert "SimServer._loop (tui/sim/server.py" in text
            assert READY in text
            assert screen.progress.has_class("-ok")
            notes = [r.event.message for r in screen.log_view.buffer if isinstance(r, EventRow)]
            assert screen.progress.words in notes
            await until(lambda: app._notifications, "the path's notification", pilot=pilot)
            await pilot.pause()
            # one notification: the path (``d`` ran the dump once, and said nothing else)
            assert [(n.title, n.message) for n in app._notifications] == [
                ("dump written", str(path))
            ]
    finally:
        server.kill()


async def test_d_without_a_run_is_greyed_out_and_says_why(
    tmp_path: Path, state_dirs: dict[str, Path]
) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-05-09 09:22:05] {READY}\n")
    app = app_on(log, free_port())
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: verdict(app) is Verdict.DEAD, "DEAD", pilot=pilot)
        screen = host_screen(app)
        assert screen.check_action("dump", ()) is None, "greyed out"
        await pilot.press("d")
        await until(lambda: app._notifications, "a notification", pilot=pilot)
        (note,) = list(app._notifications)
        assert note.title == "dump"
        assert note.message.startswith("no verified run to dump (DEAD: ")
        assert not screen.progress.has_class("-shown")
        assert not (state_dirs["local"] / "dumps").exists()


async def test_d_is_in_the_help(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-05-09 09:22:05] {READY}\n")
    app = app_on(log, free_port())
    async with app.run_test(size=(120, 30)) as pilot:
        await until(lambda: verdict(app) is not None, "an answer", pilot=pilot)
        await pilot.press("question_mark")
        await until(lambda: isinstance(app.screen, HelpScreen), "the help", pilot=pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = {k.key: k for k in help_screen.keys}
        assert keys["d"].description.startswith("dump: ")
        assert keys["d"].enabled is False
