"""The host screen's ``c`` key against a real sim: the canary's result in a small modal
that fits 80x24, on the progress line and in the log pane; without a run, why not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.servers import Server, free_port, service_yaml
from support.wait import until
from test_app_host_screen import screen_lines
from textual.pilot import Pilot

from tui.app.app import BabysitApp, HostView
from tui.app.screens.canary_result import CanaryResultScreen
from tui.app.screens.help import HelpScreen
from tui.app.screens.host import HostScreen
from tui.core.canary import CanaryOutcome
from tui.core.logcursor import EventRow
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"
SIZE = (80, 24)


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


async def test_c_sends_a_canary_and_shows_its_result(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    server = Server(log)
    try:
        server.wait_for(READY)
        app = app_on(log, server.port)
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: verdict(app) is Verdict.LIVE, said(pilot, "LIVE"), pilot=pilot)
            screen = host_screen(app)
            assert screen.check_action("canary", ()) is True
            await pilot.press("c")
            await until(
                lambda: isinstance(app.screen, CanaryResultScreen),
                said(pilot, "the canary's result"),
                pilot=pilot,
                timeout=60,
            )
            await pilot.pause()
            modal = app.screen
            assert isinstance(modal, CanaryResultScreen)
            result = modal.result
            assert result.outcome is CanaryOutcome.OK, result
            assert result.run_pid == server.pid
            drawn = "\n".join(screen_lines(app))
            assert "canary · h/qwen · ok" in drawn
            for line in result.lines()[:3]:
                assert line[:40] in drawn.replace("\n", " ") or len(line) > 70
            assert screen.progress.has_class("-ok")
            assert screen.progress.words == result.lines()[0]
            notes = [r.event.message for r in screen.log_view.buffer if isinstance(r, EventRow)]
            assert result.lines()[0] in notes
            assert screen.session.report(screen.clock()).canary == result
            await pilot.press("escape")
            await until(lambda: app.screen is screen, "the modal to close", pilot=pilot)
    finally:
        server.kill()


async def test_c_without_a_run_says_why_and_sends_nothing(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-05-09 09:22:05] {READY}\n")
    app = app_on(log, free_port())
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: verdict(app) is Verdict.DEAD, "DEAD", pilot=pilot)
        screen = host_screen(app)
        await pilot.press("c")
        await until(lambda: app._notifications, "a notification", pilot=pilot)
        (note,) = list(app._notifications)
        assert note.title == "canary"
        assert note.message.startswith("no run ready to ask (DEAD: ")
        assert app.screen is screen
        assert screen.session.facts.canary is None
        assert not screen.progress.has_class("-shown")


async def test_c_is_in_the_help_and_the_palette(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(f"[2026-05-09 09:22:05] {READY}\n")
    app = app_on(log, free_port())
    async with app.run_test(size=(120, 30)) as pilot:
        await until(lambda: verdict(app) is not None, "an answer", pilot=pilot)
        await pilot.press("question_mark")
        await until(lambda: isinstance(app.screen, HelpScreen), "the help", pilot=pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        keys = {k.key: k.description for k in help_screen.keys}
        assert keys["c"].startswith("canary: send the run one small completion")
        await pilot.press("escape")
        commands = [c.title for c in app.get_system_commands(host_screen(app))]
        assert "Send a canary" in commands
