"""Without colour (``NO_COLOR``), the banner and the fleet still tell every verdict apart
by its glyph and word: Textual drops every colour then (its monochrome filter), so what
is drawn must carry the verdict alone."""

from __future__ import annotations

from typing import Any

import pytest
from support.wait import until
from test_app_fleet import answered, fleet_of
from test_app_fleet import make_app as make_fleet_app
from test_app_snapshots import NOW, probed, utc  # noqa: F401 - utc is a fixture
from test_app_snapshots import make_app as make_host_app

from tui.app.widgets.fleet_table import FleetTable
from tui.app.widgets.run_banner import RunBanner

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
