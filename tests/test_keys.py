"""The keys people's hands already know (less, k9s, htop), and what they reach for first.

In the log: ``j``/``k`` move the selected line, ``g``/``G``/``End``, ``Space``/``b`` and
``Ctrl-F``/``Ctrl-B`` a page, ``/`` ``n`` ``N`` saying when a search wraps, ``e``
warnings and errors only, ``z`` wrap, ``t`` times as ages, ``y`` copy. In the fleet:
``j``/``k``, ``s`` sort. ``Ctrl+C`` quits, asking only while an action runs; a greyed
key says why; ``?`` lists exactly the keys the screen answers to, and the palette
offers each usable one. The palette's screenshot says where it saved.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.wait import until
from test_app_actions import snap_app
from test_app_fleet import answered, fleet_of
from test_app_fleet import make_app as fleet_app
from test_app_snapshots import INODE, probed, rows_shown, utc  # noqa: F401 (a fixture)
from test_app_snapshots import make_app as host_app
from textual.pilot import Pilot
from textual.widgets import Static

from tui.app.app import BabysitApp, key_commands
from tui.app.screens.fleet import FleetScreen
from tui.app.screens.help import HelpScreen, key_names
from tui.app.screens.host import HostScreen
from tui.app.screens.quit import ConfirmQuit
from tui.app.widgets.log_view import LogView, display_text
from tui.core.log_levels import is_problem
from tui.core.logcursor import EventRow, LogLine

pytestmark = pytest.mark.usefixtures("utc")

SIZE = (120, 36)


def log_of(app: BabysitApp) -> LogView:
    return app.screen.query_one(LogView)


@pytest.fixture(autouse=True)
def lasting_notifications(monkeypatch: pytest.MonkeyPatch) -> None:
    """Notifications stay while a test counts them (on a loaded machine a test takes more
    than their 5 s, and one that went would read as one never said)."""
    monkeypatch.setattr(BabysitApp, "NOTIFICATION_TIMEOUT", 3600)


def said(app: BabysitApp) -> list[str]:
    return [n.message for n in app._notifications]


def line_text(view: LogView, absolute: int) -> str:
    row = view.buffer[absolute - view.buffer.first_index]
    assert isinstance(row, LogLine)
    return display_text(row.text)


# ---------------------------------------------------------------------- pure


@pytest.mark.unit
@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[2026-01-12 09:20:06] WARNING: cuda graph capture is slow", True),
        ("ERROR 06-01 10:00:00 engine.py:12] EngineCore failed to start", True),
        ("Traceback (most recent call last):", True),
        ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static", True),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", True),
        ("2026-01-12T09:20:06Z  WARN text_generation_router: no chat template", True),
        ("error: model file not found", True),
        ("Segmentation fault", True),  # llama.cpp's death line, from its spec
        ("[2026-01-12 09:20:06] Scheduler hit an exception: boom", True),  # SGLang's
        ("[2026-01-12 09:22:05 TP0] Decode batch. #running-req: 1, gen throughput: 60.1", False),
        ('INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK', False),
        ("num_errors=0 error_rate=0.0", False),
    ],
)
def test_which_lines_are_warnings_or_errors(line: str, problem: bool) -> None:
    assert is_problem(line) is problem


# ---------------------------------------------------------------------- the log's keys


@pytest.mark.integration
async def test_j_k_g_g_and_pages_move_the_selected_line_as_in_less() -> None:
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        view = log_of(app)
        newest = view.buffer.appended - 1
        assert view.following and view.cursor is None
        await pilot.press("j")  # at the end already: nothing moves
        assert view.following and view.cursor is None
        await pilot.press("k")
        assert not view.following and view.cursor == newest
        await pilot.press("k", "k", "up")
        assert view.cursor == newest - 3
        await pilot.press("j", "down")
        assert view.cursor == newest - 1
        await pilot.press("g")
        assert view.cursor == view.buffer.first_index and view.scroll_offset.y == 0
        page = view.size.height - 1
        await pilot.press("space")
        assert view.cursor == view.buffer.first_index + page
        await pilot.press("ctrl+f")
        assert view.cursor == view.buffer.first_index + 2 * page
        await pilot.press("b")
        assert view.cursor == view.buffer.first_index + page
        await pilot.press("ctrl+b")
        assert view.cursor == view.buffer.first_index
        assert "paused — End/G to follow" in str(view.border_subtitle)
        await pilot.press("G")
        assert view.following and view.cursor is None
        await pilot.press("b")
        assert not view.following
        await pilot.press("end")
        assert view.following and view.scroll_offset.y == view.max_scroll_y


@pytest.mark.integration
async def test_n_and_shift_n_wrap_around_and_say_so() -> None:
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        view = log_of(app)
        await pilot.press("slash", *"Prefill batch", "enter")
        await pilot.pause()
        assert view.search is not None and len(view.search.rows) == 1
        only = view.search.rows[0]
        await pilot.press("n")
        assert view.search.current == only and view.cursor == only
        assert view.said == "search wrapped to the top"
        await pilot.press("N")
        assert view.said == "search wrapped to the bottom"
        assert "search wrapped to the bottom" in said(app)
        await pilot.press("slash", *"no such words", "enter")
        await pilot.pause()
        await pilot.press("n")
        assert view.said == "no match for 'no such words'"


@pytest.mark.integration
async def test_e_shows_only_warnings_and_errors_and_says_so_then_all_again() -> None:
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        view = log_of(app)
        rows = list(view.buffer)
        kept = [r for r in rows if isinstance(r, EventRow) or is_problem(r.text)]
        assert len(kept) < len(rows)
        await pilot.press("e")
        assert view.problems_only and view.line_count == len(kept)
        assert "warnings and errors only — e shows all" in str(view.border_subtitle)
        assert view.has_class("-filtered")
        # New lines go through the same filter.
        last = rows[-1]
        assert isinstance(last, LogLine)
        warning = LogLine("WARNING: KV cache is nearly full", last.dev, last.inode, 0, 1, 0.0)
        quiet = LogLine("Decode batch. #running-req: 1", last.dev, last.inode, 0, 1, 0.0)
        view.add_rows([warning, quiet])
        assert view.line_count == len(kept) + 1
        await pilot.press("e")
        assert not view.problems_only and view.line_count == len(rows) + 2
        assert "warnings and errors" not in str(view.border_subtitle)


@pytest.mark.integration
async def test_z_wraps_long_lines_at_the_edge_and_back() -> None:
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await rows_shown(pilot)
        view = log_of(app)
        rows = len(view.buffer)
        width = view.size.width
        longest = max(len(display_text(r.text)) for r in view.buffer if isinstance(r, LogLine))
        assert longest > width, "the decode lines run past the right edge"
        await pilot.press("z")
        assert view.wrap and view.line_count > rows
        assert view.virtual_size.width == 0, "nothing to scroll sideways"
        assert view.check_action("scroll_right", ()) is False
        await pilot.pause()
        drawn = [view.render_line(y).text for y in range(view.size.height)]
        assert all(len(text) <= width for text in drawn)
        assert any("gen throughput" in text for text in drawn), "the end of a line is shown"
        await pilot.press("z")
        assert not view.wrap and view.line_count == rows


@pytest.mark.integration
async def test_t_shows_event_times_as_ages() -> None:
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        view = log_of(app)
        replaced = next(
            y for y in range(view.size.height) if "log replaced" in view.render_line(y).text
        )
        assert "(09:24:16)" in view.render_line(replaced).text
        await pilot.press("t")
        assert "(15s ago)" in view.render_line(replaced).text
        await pilot.press("t")
        assert "(09:24:16)" in view.render_line(replaced).text


@pytest.mark.integration
async def test_y_copies_the_selected_line_or_the_newest() -> None:
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        view = log_of(app)
        newest = view.buffer.appended - 1
        await pilot.press("y")
        assert app.clipboard == line_text(view, newest)
        assert view.said.startswith("copied the newest line: ")
        await pilot.press("k", "k", "y")
        assert app.clipboard == line_text(view, newest - 1)
        assert view.said.startswith("copied the selected line: ")


# ---------------------------------------------------------------------- greyed keys


@pytest.mark.integration
async def test_a_greyed_out_kill_says_why_when_pressed() -> None:
    app = snap_app(probed(writes=None, ready=None, mtime=1.0))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        screen = app.screen
        assert isinstance(screen, HostScreen)
        assert screen.check_action("kill", ()) is None, "shown, greyed"
        await pilot.press("K")
        await pilot.pause()
        assert any("no verified run to kill (DEAD)" in words for words in said(app)), said(app)
        assert isinstance(app.screen, HostScreen), "nothing opened"
        await pilot.press("G")  # following already
        await pilot.pause()
        assert any("following already" in words for words in said(app))
        await pilot.press("n")  # no search
        await pilot.pause()
        assert any("no search yet: / searches the log" in words for words in said(app))
        before = len(said(app))
        await pilot.press("y")  # a positive fact: the copy is said
        await until(lambda: len(said(app)) > before, "the copy said", pilot=pilot)
        assert said(app)[before:] == [said(app)[-1]] and "copied" in said(app)[-1]
        before = len(said(app))
        await pilot.press("slash", "K", "enter")  # typed in the search field: no word of kill
        await until(lambda: log_of(app).search is not None, "the search", pilot=pilot)
        # the search bar hands the keys back to the log after it sets the search (a busy
        # machine later): a y before that is typed into the closing bar
        await until(lambda: app.focused is log_of(app), "the log's focus back", pilot=pilot)
        await pilot.press("y")
        await until(lambda: len(said(app)) > before, "the copy said", pilot=pilot)
        assert said(app)[before:] == [said(app)[-1]] and "copied" in said(app)[-1]
        # Esc clears the search; then, with nothing to clear, it shows the fleet of this
        # host (the screen was opened directly), quietly
        await pilot.press("escape")
        await until(lambda: log_of(app).search is None, "the search cleared", pilot=pilot)
        before = said(app)
        await pilot.press("escape")
        await until(lambda: isinstance(app.screen, FleetScreen), "the host's fleet", pilot=pilot)
        # nothing new said (an old note may have timed out meanwhile on a busy machine)
        assert [words for words in said(app) if words not in before] == []


@pytest.mark.integration
async def test_read_only_keys_say_why_instead_of_nothing() -> None:
    app = snap_app(probed(writes=INODE, ready=True), read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        await pilot.press("K")
        await pilot.pause()
        assert any("read-only" in words for words in said(app))


# ---------------------------------------------------------------------- ? and the palette


def help_keys(help_screen: HelpScreen) -> set[str]:
    """Every key the help screen lists (its rows' first column, split at commas)."""
    keys: set[str] = set()
    for cell in help_screen.query(".help-key").results(Static):
        keys.update(k.strip() for k in str(cell.render()).split(","))
    return keys


def bound_keys(screen: Any) -> set[str]:
    """Every key the screen answers to now (greyed ones too), as a person types it."""
    return {key_names(a.binding, screen.app) for a in screen.active_bindings.values()}


async def open_help(pilot: Pilot[Any]) -> HelpScreen:
    under = pilot.app.screen
    expected = bound_keys(under)
    await pilot.press("question_mark")
    await until(lambda: isinstance(pilot.app.screen, HelpScreen), "the help", pilot=pilot)
    await pilot.pause()
    help_screen = pilot.app.screen
    assert isinstance(help_screen, HelpScreen)
    assert help_keys(help_screen) == expected
    return help_screen


@pytest.mark.integration
async def test_help_lists_exactly_the_host_screens_keys_and_the_palette_too() -> None:
    app = snap_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        screen = app.screen
        keys = bound_keys(screen)
        assert {"j", "k", "g", "G", "space", "b", "^f", "^b", "end", "/", "K", "e", "z"} <= keys
        assert {"t", "y", "?", "q", "^c"} <= keys
        await open_help(pilot)
        await pilot.press("escape")
        await until(lambda: app.screen is screen, "the help to close", pilot=pilot)
        # The palette offers every key usable now, in the help's words, with its keys.
        commands = {c.title: c.help for c in key_commands(screen)}
        usable = [a for a in screen.active_bindings.values() if a.enabled]
        for active in usable:
            if active.binding.action in ("quit", "app.quit", "command_palette"):
                continue
            assert any(key_names(active.binding, app) in help for help in commands.values()), (
                active.binding
            )
        assert "Kill the run" in commands and "(K)" in commands["Kill the run"]
        assert "Relaunch" not in commands, "greyed: a run is there"


@pytest.mark.integration
async def test_help_lists_exactly_the_fleets_keys() -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await answered(pilot)
        keys = bound_keys(fleet_of(app))
        assert {"j", "k", "s", "/", "?", "q"} <= keys
        await open_help(pilot)


# ---------------------------------------------------------------------- the fleet's keys


@pytest.mark.integration
async def test_fleet_j_k_move_and_s_cycles_the_order_said_in_the_header() -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await answered(pilot)
        screen = fleet_of(app)
        keys = screen.table.keys
        await pilot.press("j", "j")
        assert screen.table.selected == keys[2]
        await pilot.press("k")
        assert screen.table.selected == keys[1]
        await pilot.press("G")
        assert screen.table.selected == keys[-1]
        await pilot.press("g")
        assert screen.table.selected == keys[0]
        counts = screen.query_one("#fleet-counts", Static)
        assert "worst first" in str(counts.render())
        selected = screen.table.selected
        await pilot.press("s")
        assert screen.sort == "by name" and "by name" in str(counts.render())
        names = [key.partition("/")[2] for key in screen.table.keys]
        assert names == sorted(names, key=lambda n: n.lower()) or names == sorted(names)
        assert screen.table.selected == selected, "the cursor stays on its row"
        await pilot.press("s")
        assert screen.sort == "by host" and "by host" in str(counts.render())
        assert [k.partition("/")[0] for k in screen.table.keys] == sorted(
            k.partition("/")[0] for k in screen.table.keys
        )
        await pilot.press("s")
        assert screen.sort == "worst first" and screen.table.keys == keys


# ---------------------------------------------------------------------- quitting


@pytest.mark.integration
async def test_ctrl_c_quits_at_once_when_nothing_runs() -> None:
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running


@pytest.mark.integration
async def test_ctrl_c_asks_while_an_action_runs() -> None:
    app = snap_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        screen = app.screen
        assert isinstance(screen, HostScreen)
        screen._action_worker = screen.run_worker(
            asyncio.Event().wait(), name="kill", group="action:kpro5", exit_on_error=False
        )
        await pilot.press("ctrl+c")
        await until(lambda: isinstance(app.screen, ConfirmQuit), "the question", pilot=pilot)
        quit_screen = app.screen
        assert isinstance(quit_screen, ConfirmQuit)
        assert quit_screen.running == "kill on kpro5/qwen is running"
        await pilot.press("escape")
        await until(lambda: app.screen is screen, "the question to close", pilot=pilot)
        assert app.is_running
        await pilot.press("q")
        await until(lambda: isinstance(app.screen, ConfirmQuit), "the question", pilot=pilot)
        await pilot.press("ctrl+c")  # twice: quit
        await pilot.pause()
        assert not app.is_running


# ---------------------------------------------------------------------- the screenshot


@pytest.mark.integration
async def test_the_screenshot_makes_its_folder_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "not" / "there"
    monkeypatch.setenv("BABYSIT_SCREENSHOTS", str(folder))
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        screenshot = [c for c in app.get_system_commands(app.screen) if c.title == "Screenshot"]
        assert len(screenshot) == 1 and str(folder) in screenshot[0].help
        app.action_screenshot()
        saved = list(folder.glob("*.svg"))
        assert len(saved) == 1
        await until(
            lambda: any(f"saved {saved[0]}" in words for words in said(app)), "saved", pilot=pilot
        )
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        monkeypatch.setenv("BABYSIT_SCREENSHOTS", str(blocker / "inside"))
        app.action_screenshot()
        cannot = f"cannot save the screenshot in {blocker / 'inside'}: "
        await until(
            lambda: any(words.startswith(cannot) for words in said(app)), cannot, pilot=pilot
        )


@pytest.mark.integration
async def test_the_fleet_help_names_the_kill_key_as_shift_k() -> None:
    app = fleet_app()
    async with app.run_test(size=SIZE) as pilot:
        await answered(pilot)
        assert isinstance(app.screen, FleetScreen)
        help_screen = await open_help(pilot)
        assert help_screen.note is not None and "kill (K)" in help_screen.note


@pytest.mark.integration
async def test_after_the_mouse_paused_the_first_j_or_k_selects_a_line_on_screen() -> None:
    app = host_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=SIZE) as pilot:
        await rows_shown(pilot)
        view = log_of(app)
        view.scroll_relative(y=-6, animate=False, immediate=True)  # as the wheel does
        await until(lambda: not view.following, "the wheel to pause", pilot=pilot)
        top = view.buffer.first_index + int(view.scroll_offset.y)
        bottom = top + view.size.height - 1
        await pilot.press("k")
        assert view.cursor == bottom, "the bottom line on screen, the view unmoved"
        assert view.buffer.first_index + int(view.scroll_offset.y) == top
        view.cursor = None
        await pilot.press("j")
        assert view.cursor == top
