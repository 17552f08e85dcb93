"""80x24 and smaller first: the banner and the log are always there, the launch and
metrics panes fold to one line each that ``l`` and ``m`` open, the footer keeps ``?`` and
``q``, and a confirmation's buttons can always be reached with Tab.

Pilot tests on the snapshot apps' stand-ins (a live run with one flag changed, or no run
for the relaunch modal): nothing here connects anywhere.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.wait import until
from test_app_actions import modal_of, snap_app
from test_app_snapshots import INODE, NOW, make_app, probed, rows_shown, utc  # noqa: F401
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Button
from textual.widgets._footer import FooterKey

from tui.app.screens.host import HostScreen
from tui.app.widgets.launch_pane import LaunchPane
from tui.app.widgets.log_view import LogView
from tui.app.widgets.metrics_pane import MetricsPane
from tui.app.widgets.run_banner import RunBanner

#: Clock times drawn in UTC (the snapshot apps' fixture).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("utc")]

#: Lines of log text the log pane keeps at the smallest sizes, panes folded.
LOG_LINES = 4
SMALL = [(80, 24), (80, 20), (60, 20)]


def host(pilot: Pilot[Any]) -> HostScreen:
    screen = pilot.app.screen
    assert isinstance(screen, HostScreen)
    return screen


def on_screen(pilot: Pilot[Any], region: Region) -> bool:
    width, height = pilot.app.size
    return region.area > 0 and Region(0, 0, width, height).contains_region(region)


def log_lines(screen: HostScreen) -> int:
    return screen.query_one(LogView).content_region.height


@pytest.mark.parametrize("size", SMALL, ids=[f"{w}x{h}" for w, h in SMALL])
async def test_small_terminals_fold_the_panes_and_keep_the_log(size: tuple[int, int]) -> None:
    app = make_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=size) as pilot:
        await rows_shown(pilot)
        screen = host(pilot)
        launch, metrics = screen.query_one(LaunchPane), screen.query_one(MetricsPane)
        assert launch.folded and metrics.folded
        assert launch.outer_size.height == metrics.outer_size.height == 1
        assert str(launch.render()).startswith("launch: 1 flag changed ≠, 5 as intended ✓")
        assert str(metrics.render()).startswith("metrics: 60.7 tok/s · 1 req · 2 GPUs")
        assert on_screen(pilot, screen.query_one(RunBanner).region)
        assert on_screen(pilot, screen.query_one(LogView).region)
        assert log_lines(screen) >= LOG_LINES


async def test_l_and_m_open_one_pane_at_a_time_and_the_log_stays() -> None:
    app = make_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await rows_shown(pilot)
        screen = host(pilot)
        launch, metrics = screen.query_one(LaunchPane), screen.query_one(MetricsPane)
        await pilot.press("l")
        await pilot.pause()
        assert not launch.folded and metrics.folded
        assert "--mem-fraction-static" in str(launch.render())
        assert launch.border_subtitle == "l folds"
        assert log_lines(screen) >= 2
        await pilot.press("m")
        await pilot.pause()
        assert launch.folded and not metrics.folded, "one pane open at a time when short"
        assert "gen tok/s" in str(metrics.render())
        assert log_lines(screen) >= 2
        await pilot.press("m")
        await pilot.pause()
        assert launch.folded and metrics.folded
        assert log_lines(screen) >= LOG_LINES


async def test_a_tall_terminal_opens_both_panes() -> None:
    app = make_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await rows_shown(pilot)
        screen = host(pilot)
        assert not screen.query_one(LaunchPane).folded
        assert not screen.query_one(MetricsPane).folded
        await pilot.press("l")
        await pilot.pause()
        assert screen.query_one(LaunchPane).folded and not screen.query_one(MetricsPane).folded


@pytest.mark.parametrize("size", [(80, 24), (60, 20)], ids=["80x24", "60x20"])
async def test_the_footer_keeps_help_and_quit(size: tuple[int, int]) -> None:
    app = make_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=size) as pilot:
        await rows_shown(pilot)

        # the footer draws its keys once the screen's bindings are known, and places them
        # at the next layout (on a busy machine, both later than the first rows)
        def placed() -> dict[str, Region]:
            return {k.key: k.region for k in host(pilot).query(FooterKey)}

        await until(
            lambda: all(
                on_screen(pilot, placed().get(key, Region())) for key in ("question_mark", "q")
            ),
            "the footer's keys on screen",
            pilot=pilot,
        )
        keys = placed()
        for key in ("question_mark", "q"):
            assert key in keys, sorted(keys)
            assert on_screen(pilot, keys[key]), (key, keys[key])


@pytest.mark.parametrize(
    ("key", "assessment"),
    [
        pytest.param("r", probed(writes=None, ready=None, mtime=NOW - 180), id="relaunch"),
        pytest.param("R", probed(writes=INODE, ready=True), id="replace"),
    ],
)
@pytest.mark.parametrize("size", [(80, 24), (60, 20), (80, 14)], ids=["80x24", "60x20", "80x14"])
async def test_a_confirmations_buttons_are_reached_with_tab(
    key: str, assessment: Any, size: tuple[int, int]
) -> None:
    app = snap_app(assessment)
    async with app.run_test(size=size) as pilot:
        await rows_shown(pilot)
        await pilot.press(key)
        modal = await modal_of(pilot)
        seen = set()
        for _ in range(4):
            focused = pilot.app.focused
            if isinstance(focused, Button):
                assert on_screen(pilot, focused.region), (focused.id, focused.region)
                seen.add(focused.id)
            await pilot.press("tab")
            await pilot.pause()
        assert {"cancel", "confirm"} <= seen
        assert modal is pilot.app.screen
        await pilot.press("escape")


async def test_a_long_confirmation_scrolls_its_facts_to_the_last() -> None:
    app = snap_app(probed(writes=INODE, ready=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await rows_shown(pilot)
        await pilot.press("R")
        modal = await modal_of(pilot)
        facts = modal.query_one("#facts")
        assert facts.max_scroll_y > 0, "the replace plan is longer than 80x24"
        facts.scroll_end(animate=False)
        await pilot.pause()
        last = list(facts.query(".fact-value"))[-1]
        assert facts.region.contains_region(last.region), "the last fact can be scrolled to"
        assert on_screen(pilot, modal.query_one("#confirm").region)
        await pilot.press("escape")
