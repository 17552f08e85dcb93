"""Without colour (``NO_COLOR``), the banner and the fleet still tell every verdict apart
by its glyph and word: Textual drops every colour then (its monochrome filter), so what
is drawn must carry the verdict alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.color import Color
from support.wait import until
from test_app_fleet import answered, fleet_of
from test_app_fleet import make_app as make_fleet_app
from test_app_snapshots import INODE, NOW, OLD_INODE, probed, utc  # noqa: F401 - a fixture
from test_app_snapshots import make_app as make_host_app
from textual.app import App, ComposeResult

from tui.app.widgets.fleet_table import FleetTable
from tui.app.widgets.run_banner import STALE_AFTER, RunBanner

pytestmark = pytest.mark.integration


def drawn(widget: Any) -> list[str]:
    """The lines a widget draws, as text."""
    return ["".join(s.text for s in widget.render_line(y)) for y in range(widget.size.height)]


async def test_without_colour_the_banner_says_the_glyph_and_the_word(
    utc: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_host_app(probed(writes=None, ready=None, mtime=NOW - 180))
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.no_color
        banner = app.screen.query_one(RunBanner)
        await until(lambda: banner.assessment is not None, "a verdict", pilot=pilot)
        await pilot.pause()
        assert banner.has_class("-dead")
        assert drawn(banner)[0].lstrip().startswith("✖ DEAD  no failure line; last line: ")


async def test_without_colour_a_fleet_row_says_the_glyph_and_the_word(
    utc: None,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_fleet_app()
    async with app.run_test(size=(200, 30)) as pilot:
        assert app.no_color
        await answered(pilot)
        table = fleet_of(app).query_one(FleetTable)
        lines = "\n".join(drawn(table))
        for said in ("◌ STALE", "◐ STARTING", "✖ DEAD", "? UNKNOWN", "● LIVE"):
            assert said in lines, said


class Banner(App[None]):
    """The banner alone, styled as the host screen styles it, on a clock the test sets."""

    CSS_PATH = Path(__file__).resolve().parents[1] / "tui" / "app" / "babysit.tcss"

    def __init__(self) -> None:
        super().__init__()
        self.now = NOW

    def compose(self) -> ComposeResult:
        yield RunBanner(lambda: self.now, id="banner")


def badge_background(banner: RunBanner) -> Color | None:
    return banner.get_component_rich_style("run-banner--badge").bgcolor


async def test_each_verdicts_badge_has_its_own_colour_and_an_old_one_loses_it() -> None:
    async with Banner().run_test(size=(100, 10)) as pilot:
        banner = pilot.app.query_one(RunBanner)
        seen = {}
        for name, assessment in (
            ("live", probed(writes=INODE, ready=True)),
            ("starting", probed(writes=INODE, ready=False)),
            ("stale", probed(writes=OLD_INODE, ready=True)),
            ("dead", probed(writes=None, ready=None, mtime=NOW - 180)),
        ):
            banner.show(assessment, None)
            await pilot.pause()
            assert banner.has_class(f"-{name}") and not banner.has_class("-old")
            seen[name] = badge_background(banner)
        assert len(set(seen.values())) == len(seen)
        pilot.app.now = NOW + STALE_AFTER + 1  # three missed refreshes: the verdict is old
        banner.refresh_age()
        await pilot.pause()
        assert banner.has_class("-dead") and banner.has_class("-old")
        assert badge_background(banner) not in seen.values()
