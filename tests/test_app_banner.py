"""The banner on a real run: real probes, verdict changes in the log, `w` follows the writer."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.servers import Server
from support.wait import until
from textual.pilot import Pilot

from tui.app.app import BabysitApp, HostView
from tui.app.screens.host import HostScreen
from tui.app.widgets.log_view import LogView
from tui.app.widgets.run_banner import RunBanner
from tui.core.logcursor import EventKind, EventRow, LogLine
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"


def app_for(log: Path, server: Server) -> BabysitApp:
    host = parse_config(
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      qwen:\n        engine: sglang\n        log: {json.dumps(str(log))}\n"
        f"        match: 'tui sim .*--port {server.port} '\n"
    ).hosts["gpu"]
    return BabysitApp(HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2))


def screen_of(pilot: Pilot[Any]) -> HostScreen:
    screen = pilot.app.screen
    assert isinstance(screen, HostScreen)
    return screen


def verdict_of(screen: HostScreen) -> Verdict | None:
    return screen.assessment.verdict if screen.assessment else None


@contextlib.asynccontextmanager
async def live_screen(tmp_path: Path) -> AsyncIterator[tuple[Server, Path, Pilot[Any], HostScreen]]:
    """A sim's run on its host screen, once the banner says LIVE; the sim ends after."""
    log = tmp_path / "serve.log"
    server = Server(log)
    try:
        server.wait_for(READY)
        app = app_for(log, server)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = screen_of(pilot)
            await until(lambda: verdict_of(screen) is Verdict.LIVE, "LIVE", pilot=pilot)
            yield server, log, pilot, screen
    finally:
        server.kill()


async def test_banner_follows_the_run_and_w_follows_the_writer(tmp_path: Path) -> None:
    async with live_screen(tmp_path) as (server, log, pilot, screen):

        def verdict() -> Verdict | None:
            return verdict_of(screen)

        banner = screen.query_one(RunBanner)
        assert banner.has_class("-live")
        assert f"pid {server.pid}" in str(banner.render())

        old_inode = log.stat().st_ino
        log.unlink()
        log.write_text("an impostor wrote this\n")
        await until(lambda: verdict() is Verdict.STALE, "STALE", pilot=pilot)
        view = screen.query_one(LogView)
        await until(
            lambda: view.file is not None and view.file.inode != old_inode,
            "the pane to switch to the new file",
            pilot=pilot,
        )
        assert "press w to follow the writer" in str(banner.render())
        changes = [
            r for r in view.buffer if isinstance(r, EventRow) and r.event.kind is EventKind.VERDICT
        ]
        assert changes and changes[-1].event.message.startswith(
            "LIVE → STALE: log replaced: it writes deleted inode "
        )  # why, first, as the banner says it

        await pilot.press("w")
        await until(
            lambda: view.file is not None and view.file.inode == old_inode,
            "the pane to follow the writer's deleted file",
            pilot=pilot,
        )
        assert view.file is not None and view.file.writer_pid == server.pid
        writer_rows = [
            r for r in view.buffer if isinstance(r, EventRow) and r.event.kind is EventKind.WRITER
        ]
        assert writer_rows[-1].event.message == (
            f"following pid {server.pid}'s stdout: {log} (deleted)"
        )
        assert any(isinstance(r, LogLine) and READY in r.text for r in view.buffer)

        server.kill()
        await until(lambda: verdict() is Verdict.DEAD, "DEAD", pilot=pilot)
        assert banner.has_class("-dead")


async def test_a_probe_that_raises_turns_the_banner_unknown_and_the_loop_comes_back(
    tmp_path: Path,
) -> None:
    """The real probe of a real run, made to raise once: said, then asked again."""
    log = tmp_path / "serve.log"
    server = Server(log)
    try:
        server.wait_for(READY)
        app = app_for(log, server)
        sessions = app.sessions
        real = sessions.probe
        fail = {"armed": False, "raised": 0}

        async def flaky(*args: Any) -> Any:
            """The session's probe, made to raise once when armed."""
            if fail["armed"]:
                fail["armed"] = False
                fail["raised"] += 1
                raise RuntimeError("the probe broke")
            return await real(*args)

        sessions.probe = flaky  # type: ignore[method-assign]
        async with app.run_test(size=(120, 36)) as pilot:
            screen = screen_of(pilot)

            def verdict() -> Verdict | None:
                return screen.assessment.verdict if screen.assessment else None

            await until(lambda: verdict() is Verdict.LIVE, "LIVE", pilot=pilot)
            fail["armed"] = True
            await until(lambda: verdict() is Verdict.UNKNOWN, "UNKNOWN", pilot=pilot)
            banner = screen.query_one(RunBanner)
            assert banner.has_class("-unknown") and not banner.has_class("-live")
            shown = str(banner.render())
            assert "UNKNOWN" in shown
            assert "cannot tell: the probe crashed: RuntimeError: the probe broke" in shown
            assert "asking again in " in shown
            await until(lambda: verdict() is Verdict.LIVE, "LIVE again", pilot=pilot)
            assert fail["raised"] == 1
            assert banner.has_class("-live")
            changes = [
                r.event.message
                for r in screen.log_view.buffer
                if isinstance(r, EventRow) and r.event.kind is EventKind.VERDICT
            ]
            assert any(
                m.startswith("LIVE → UNKNOWN: cannot tell: the probe crashed") for m in changes
            )
            assert changes[-1].startswith("UNKNOWN → LIVE: ")
    finally:
        server.kill()


async def test_the_host_screen_shows_a_death_line_hint_as_status_does(tmp_path: Path) -> None:
    """The hint comes from the report (one place), not from the screen's own series."""
    from tui.app.widgets.metrics_pane import HintsLine

    line = "Subprocess scheduler_0"
    log = tmp_path / "serve.log"
    server = Server(log, load=0.3, scenario="killed-after:0.3", version="0.5.21")
    try:
        server.wait_for("crashed with exit code")
        app = app_for(log, server)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = screen_of(pilot)
            hints_line = screen.query_one(HintsLine)
            await until(
                lambda: any(h.rule.value == "death-line" for h in hints_line._shown or ()),
                "the death-line hint",
                pilot=pilot,
            )
            [death] = [h for h in hints_line._shown or () if h.rule.value == "death-line"]
            assert any(line in e and "crashed with exit code -9" in e for e in death.evidence)
    finally:
        server.kill()


async def test_a_steady_live_run_is_redrawn_without_a_new_layout(tmp_path: Path) -> None:
    """Each probe of an unchanged run brings the same launch diff and banner rows (only
    ages move): the launch pane is not drawn again, and the banner is drawn in place,
    never asking the screen for a new layout."""
    from tui.app.widgets.launch_pane import LaunchPane

    async with live_screen(tmp_path) as (_, _, pilot, screen):
        banner, pane = screen.query_one(RunBanner), screen.query_one(LaunchPane)
        await until(lambda: "--port" in str(pane.render()), "the launch pane", pilot=pilot)
        await pilot.pause(0.5)
        layouts: list[str] = []
        updates: list[str] = []
        for name, widget in (("banner", banner), ("pane", pane)):

            def spy(*regions: Any, _real: Any = widget.refresh, _name: str = name, **kw: Any):
                if kw.get("layout"):
                    layouts.append(_name)
                return _real(*regions, **kw)

            widget.refresh = spy  # type: ignore[method-assign]
        real_update = pane.update

        def update(*args: Any, **kw: Any) -> None:
            updates.append("pane")
            real_update(*args, **kw)

        pane.update = update  # type: ignore[method-assign]
        seen: set[float] = set()

        def probed() -> bool:
            assert screen.assessment is not None
            seen.add(screen.assessment.checked_at)
            return len(seen) >= 6

        await until(probed, "five more probes", pilot=pilot)
        await pilot.pause(1.1)  # the banner's age ticks at least once
        assert screen.assessment.verdict is Verdict.LIVE
        assert layouts == [] and updates == []
