"""Pilot tests of the host screen with a real local follower on a real file.

Each test writes a log file, opens the app on a ``local: true`` host whose
service logs there, and changes the file while the app runs: the agent, the
follower and the screen are all the real ones.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from support.sessions import StandIns
from support.wait import until
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Label

from tui.app.app import BabysitApp
from tui.app.app import make_app as make_babysit
from tui.app.screens.host import HostScreen
from tui.app.widgets.log_view import LogView
from tui.core.follow import FileInfo, Start, file_title
from tui.core.logcursor import EventKind, EventRow, LogEvent, LogLine, Row
from tui.core.units import human_size
from tui.errors import HostKeyError
from tui.hostsfile import parse_config
from tui.remote.follow import Follower
from tui.remote.local import LocalTransport
from tui.session.sessions import Sessions

SIZE = (120, 36)


def make_app(log: Path, **kwargs: Any) -> BabysitApp:
    """The app on the service ``svc`` logging to ``log``; ``kwargs`` go to :class:`StandIns`."""
    config = parse_config(
        f"hosts:\n  here:\n    local: true\n    services:\n      svc: {{log: {log}}}\n"
    )
    return make_babysit(config, ["here/svc"], sessions=StandIns(**kwargs))


def append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def numbered(first: int, last: int, word: str = "line") -> str:
    return "".join(f"{word} {i:04d}\n" for i in range(first, last + 1))


def screen_lines(app: App[object]) -> list[str]:
    """The whole screen as text, one string per terminal row."""
    return ["".join(s.text for s in strip) for strip in app.screen._compositor.render_strips()]


def screen_text(app: App[object]) -> str:
    return "\n".join(screen_lines(app))


def log_view(app: BabysitApp) -> LogView:
    return app.screen.query_one(LogView)


def visible_rows(view: LogView) -> list[str]:
    """The text of the log rows on screen, top to bottom."""
    return ["".join(s.text for s in view.render_line(y)).rstrip() for y in range(view.size.height)]


def holds(view: LogView, text: str) -> Callable[[], bool]:
    return lambda: any(isinstance(r, LogLine) and r.text == text for r in view.buffer)


async def shown(pilot: Pilot, view: LogView, text: str) -> None:
    """Until the log view holds a row of ``text``, and the screen has drawn it."""
    await until(holds(view, text), f"{text!r} in the log view", pilot=pilot)
    await pilot.pause()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "sglang-serve.log"
    path.write_text(numbered(1, 3))
    return path


@pytest.mark.integration
async def test_appended_lines_appear_and_the_title_names_the_file(log: Path) -> None:
    app = make_app(log)
    async with app.run_test(size=SIZE) as pilot:
        view = log_view(app)
        await shown(pilot, view, "line 0003")
        append(log, "line 0004\n")
        await shown(pilot, view, "line 0004")
        await pilot.pause()
        text = screen_text(app)
        # Each line once, in order: every batch was applied exactly once.
        lines = [row.text for row in view.buffer if isinstance(row, LogLine)]
        assert lines == ["line 0001", "line 0002", "line 0003", "line 0004"]
        assert "line 0004" in text
        info = os.stat(log)
        assert f"{log} · inode {info.st_ino} · {human_size(info.st_size)}" in text
        assert "babysit · here (local) · svc" in screen_lines(app)[0]
        assert "local · " in screen_lines(app)[0]
        assert "following" in text


@pytest.mark.integration
async def test_scrolling_up_pauses_and_new_lines_do_not_move_the_view(log: Path) -> None:
    log.write_text(numbered(1, 200))
    app = make_app(log)
    async with app.run_test(size=SIZE) as pilot:
        view = log_view(app)
        await shown(pilot, view, "line 0200")
        assert view.following
        assert visible_rows(view)[-1] == "line 0200"

        await pilot.press("pageup")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        assert not view.following
        assert view.has_class("-paused")
        before_y, before_rows = view.scroll_y, visible_rows(view)
        assert "line 0200" not in before_rows

        append(log, numbered(201, 260))
        await shown(pilot, view, "line 0260")
        assert view.scroll_y == before_y
        assert visible_rows(view) == before_rows
        assert view.new_since_pause == 60
        assert "paused — End/G to follow · 60 new" in screen_text(app)

        await pilot.press("G")
        await pilot.pause()
        assert view.following
        assert view.scroll_y == view.max_scroll_y
        assert visible_rows(view)[-1] == "line 0260"
        assert "paused" not in screen_text(app)

        # Scrolling back down to the end follows again, as End does.
        await pilot.press("up", "up")
        await pilot.wait_for_scheduled_animations()
        assert not view.following
        await pilot.press("down", "down")
        await pilot.wait_for_scheduled_animations()
        assert view.following
        await pilot.press("up")
        await pilot.wait_for_scheduled_animations()
        assert not view.following
        await pilot.press("end")
        await pilot.pause()
        assert view.following
        append(log, "line 0261\n")
        await shown(pilot, view, "line 0261")
        assert visible_rows(view)[-1] == "line 0261"


@pytest.mark.integration
async def test_search_highlights_and_n_N_move_between_matches(log: Path) -> None:
    body = "".join(
        f"[09:22:{i:02d}] {'ERROR cuda oom' if i % 10 == 3 else 'Decode batch'} {i}\n"
        for i in range(60)
    )
    log.write_text(body)
    app = make_app(log)
    async with app.run_test(size=SIZE) as pilot:
        view = log_view(app)
        await shown(pilot, view, "[09:22:59] Decode batch 59")

        await pilot.press("slash")
        await pilot.pause()
        assert app.screen.query_one("#search").has_class("-open")
        await pilot.press(*"error", "enter")
        await pilot.pause()
        assert view.has_focus
        assert view.search is not None
        assert len(view.search.rows) == 6  # smart case: lower-case term ignores case
        # The newest match is already on screen: it is current, and following goes on.
        newest = view.search.rows[-1]
        assert view.search.current == newest
        assert view.following
        assert "/error (6 of 6)" in screen_text(app)

        # The matched words are drawn with the match styles, the rest plainly.
        match = view.get_component_rich_style("log-view--match")
        current = view.get_component_rich_style("log-view--match-current")
        styled = {
            seg.text: seg.style
            for y in range(view.size.height)
            for seg in view.render_line(y)
            if seg.text == "ERROR"
        }
        assert styled
        assert all(style in (match, current) for style in styled.values())
        assert any(style == current for style in styled.values())

        await pilot.press("N")
        await pilot.pause()
        assert not view.following  # n/N pause following
        assert view.search.current == view.search.rows[-2]
        await pilot.press("N", "N")
        await pilot.pause()
        assert view.search.current == view.search.rows[-4]
        current_row = view.buffer[view.search.current - view.buffer.first_index]
        assert isinstance(current_row, LogLine)
        assert current_row.text in "\n".join(visible_rows(view))
        assert "/error (3 of 6)" in screen_text(app)
        await pilot.press("n")
        await pilot.pause()
        assert view.search.current == view.search.rows[-3]

        # New lines that match are counted as they arrive.
        append(log, "[09:23:00] error again\n")
        await shown(pilot, view, "[09:23:00] error again")
        assert len(view.search.rows) == 7

        await pilot.press("escape")
        await pilot.pause()
        assert view.search is None
        text_styles = {seg.style for y in range(view.size.height) for seg in view.render_line(y)}
        assert current not in text_styles


@pytest.mark.integration
async def test_escape_closes_the_search_prompt_without_searching(log: Path) -> None:
    app = make_app(log)
    async with app.run_test(size=SIZE) as pilot:
        view = log_view(app)
        await shown(pilot, view, "line 0003")
        await pilot.press("slash", "l", "i")
        await pilot.press("escape")
        await pilot.pause()
        assert not app.screen.query_one("#search").has_class("-open")
        assert view.search is None
        assert view.has_focus


@pytest.mark.integration
async def test_a_truncated_log_shows_a_separator_row(log: Path) -> None:
    app = make_app(log)
    async with app.run_test(size=SIZE) as pilot:
        view = log_view(app)
        await shown(pilot, view, "line 0003")
        log.write_text("")
        await until(
            lambda: any(
                isinstance(r, EventRow) and r.event.kind is EventKind.TRUNCATED for r in view.buffer
            ),
            "the truncated event",
            pilot=pilot,
        )
        await pilot.pause()
        append(log, "after the truncate\n")
        await shown(pilot, view, "after the truncate")
        rows = visible_rows(view)
        separator = next(row for row in rows if "log truncated" in row)
        assert separator.startswith("── log truncated (was at least 30 B, now 0 B): ")
        assert separator.endswith("─")
        assert rows.index(separator) < rows.index("after the truncate")
        warning = view.get_component_rich_style("log-view--event-warning")
        assert any(
            seg.style == warning
            for y in range(view.size.height)
            for seg in view.render_line(y)
            if "log truncated" in seg.text
        )


@pytest.mark.integration
async def test_escape_sequences_and_markup_never_reach_the_screen(log: Path) -> None:
    app = make_app(log)
    async with app.run_test(size=SIZE) as pilot:
        view = log_view(app)
        await shown(pilot, view, "line 0003")
        with log.open("ab") as f:
            f.write(
                b"\x1b]0;pwned\x07title gone\n\x1b[2Jscreen kept\n"
                b"c1 \xc2\x9b31m bytes\n[bold red]not markup[/]\n"
            )
        await shown(pilot, view, "[bold red]not markup[/]")
        text = screen_text(app)
        assert "title gone" in text
        assert "screen kept" in text
        assert "[bold red]not markup[/]" in text
        assert "pwned" not in text
        for char in ("\x1b", "\x07", "\x9b"):
            assert char not in text
        assert not any(
            seg.style and seg.style.bold
            for y in range(view.size.height)
            for seg in view.render_line(y)
            if "not markup" in seg.text
        )


class StatusTransport(LocalTransport):
    """A local transport whose status the test sets."""

    status = "connected"

    def status_text(self) -> str:
        return self.status


@pytest.mark.integration
async def test_the_header_shows_the_link_state_every_second(log: Path) -> None:
    transport = StatusTransport()
    app = make_app(log, transport=transport)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        state = app.screen.query_one("#link-state", Label)
        assert "connected" in screen_lines(app)[0]
        assert state.has_class("-ok")
        transport.status = "reconnecting in 4 s"
        await until(
            lambda: "reconnecting in 4 s" in screen_lines(app)[0],
            "the header saying reconnecting in 4 s",
            timeout=2.0,
            pilot=pilot,
        )
        await pilot.pause()
        assert state.has_class("-warning")
        assert not state.has_class("-ok")


class FailingFollower:
    file: FileInfo | None = None

    async def rows(self) -> AsyncIterator[list[Row]]:
        raise HostKeyError("the host key of 10.0.0.15 does not match known_hosts")
        yield []  # pragma: no cover - makes this an async generator


@pytest.mark.integration
async def test_a_follower_error_is_told_on_screen_and_the_app_keeps_running(log: Path) -> None:
    app = make_app(log, follower=lambda session, cursor, pid: FailingFollower())
    async with app.run_test(size=SIZE) as pilot:
        await until(
            lambda: app.screen.query_one("#problem").has_class("-shown"),
            "the problem line shown",
            pilot=pilot,
        )
        await pilot.pause()
        text = screen_text(app)
        assert "host-key" in text
        assert "does not match known_hosts" in text
        assert "not following: host-key" in text
        assert log_view(app).has_class("-stopped")
        assert isinstance(app.screen, HostScreen)
        await pilot.press("q")
    assert app.return_code == 0


class CrashingFollower:
    """A follower with a bug: it reads one line, then raises."""

    def __init__(self, log: Path) -> None:
        st = log.stat()
        self.file = FileInfo(str(log), st.st_dev, st.st_ino, st.st_size, st.st_mtime)
        self.line = LogLine("line 0001", st.st_dev, st.st_ino, 0, 10, 0.0)

    async def rows(self) -> AsyncIterator[list[Row]]:
        yield [self.line]
        raise RuntimeError("a bug in the follower")


@pytest.mark.integration
async def test_a_follower_that_crashes_is_said_and_followed_again_from_the_last_line(
    log: Path,
) -> None:
    """A bug in the follower: said in plain words, then a new follower from the end of
    the last line shown, so no line is shown twice."""
    starts: list[object] = []

    def follower(session: object, cursor: object, pid: object) -> object:
        starts.append(cursor)
        if len(starts) == 1:
            return CrashingFollower(log)
        return Sessions.follower(app.sessions, session, cursor=cursor)  # type: ignore[arg-type]

    app = make_app(log, follower=follower, interval=0.1)
    async with app.run_test(size=SIZE) as pilot:
        view = log_view(app)
        await until(lambda: "follower crashed" in screen_text(app), "the crash said", pilot=pilot)
        assert "a bug in the follower; following again in" in screen_text(app)
        await until(lambda: len(starts) == 2, "a second follower", pilot=pilot)
        await shown(pilot, view, "line 0003")
        append(log, numbered(4, 4))
        await shown(pilot, view, "line 0004")
        texts = [r.text for r in view.buffer if isinstance(r, LogLine)]
        assert texts == [f"line {i:04d}" for i in range(1, 5)]
        assert starts[1] is not None and starts[1].offset == 10  # type: ignore[attr-defined]
        assert not app.screen.query_one("#problem").has_class("-shown")


class OneLogView(App[None]):
    """Just a LogView (small buffer), fed by the test."""

    CSS_PATH = str(Path(__file__).parent.parent / "tui" / "app" / "babysit.tcss")

    def compose(self) -> ComposeResult:
        yield LogView("/x.log", max_lines=100)


def lines(first: int, last: int) -> list[Row]:
    return [LogLine(f"row {i}", 1, 2, i * 10, 10, 0.0) for i in range(first, last)]


def event(kind: EventKind, message: str) -> EventRow:
    return EventRow(LogEvent(kind, message, 0.0))


@pytest.mark.integration
async def test_paused_view_keeps_its_rows_when_old_rows_are_dropped() -> None:
    """Rows falling off the front of a full buffer do not move what the user reads."""
    app = OneLogView()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.query_one(LogView)
        view.add_rows(lines(0, 100))
        await pilot.pause()
        view.focus()
        await pilot.press("pageup")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        assert not view.following
        before = visible_rows(view)
        view.add_rows(lines(100, 130))  # 30 rows fall off the front
        await pilot.pause()
        assert view.buffer.first_index == 30
        assert visible_rows(view) == before
        view.add_rows(lines(130, 400))  # everything seen is gone: the view stops at the top
        await pilot.pause()
        assert view.scroll_y == 0
        assert visible_rows(view)[0] == "row 300"


@pytest.mark.integration
async def test_a_lost_link_is_shown_until_the_follower_is_back() -> None:
    app = OneLogView()
    async with app.run_test(size=(80, 12)) as pilot:
        view = app.query_one(LogView)
        view.add_rows(lines(0, 3))
        view.add_rows([event(EventKind.DISCONNECTED, "connection lost: reset; reconnecting")])
        await pilot.pause()
        assert view.has_class("-stale")
        assert "link lost, resumes when it is back" in screen_text(app)
        assert "following" not in screen_text(app)
        view.add_rows([event(EventKind.RECONNECTED, "reconnected after 4 s"), *lines(3, 4)])
        await pilot.pause()
        assert not view.has_class("-stale")
        assert "following" in screen_text(app)


@pytest.mark.unit
def test_file_title() -> None:
    info = FileInfo("/root/sglang-serve.log", 64768, 5678, 1_289_748, 0.0)
    assert file_title(info, "/x") == "/root/sglang-serve.log · inode 5678 · 1.23 MiB"
    gone = FileInfo("/root/a\x1b.log", 1, 9012, 10, 0.0, deleted=True, writer_pid=67115)
    assert file_title(gone, "/x") == (
        "/root/a\\x1b.log (deleted) · inode 9012 · 10 B · following pid 67115"
    )
    assert file_title(None, "/root/x.log") == "/root/x.log · not open yet"


@pytest.mark.unit
def test_default_start_is_the_last_500_lines(log: Path) -> None:
    config = parse_config(
        f"hosts:\n  here:\n    local: true\n    services:\n      svc: {{log: {log}}}\n"
    )
    host = config.hosts["here"]
    sessions = Sessions()
    follower = sessions.follower(sessions.session(host, host.services["svc"]))
    assert isinstance(follower, Follower) and follower.initial == Start(tail=500)
