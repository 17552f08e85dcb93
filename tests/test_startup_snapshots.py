"""Snapshots of a run's startup and of orphans: the host screen's banner over the fleet's
row and the line under it, for STARTING with a phase, its progress and an ETA, STARTING
past twice its last run's time, and a DEAD service whose server left orphans on its
GPUs, at 80x24 and 120x36.

As in test_wedged_snapshots: a frozen clock, UTC, and nothing that connects anywhere.
The reports are built as in test_startup_views (a real assessment, a Startup made by
:func:`startup`, ServiceGpus with orphans), and each view is given its report as the
host screen and the fleet give theirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import test_startup_views as views
from test_app_snapshots import NOW, SIZE, utc  # noqa: F401 - utc is a fixture
from textual.app import App, ComposeResult
from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Static

import tui.app
from tui.app.fleet_rows import fleet_row
from tui.app.widgets.fleet_table import FleetTable
from tui.app.widgets.run_banner import RunBanner
from tui.core.report import ServiceReport
from tui.session.state import HostState

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("utc")]

NARROW = (80, 24)
APP_FOLDER = Path(tui.app.__file__).parent


class StartupViews(App[None]):
    """The banner, the fleet's table and the line under it, styled as their screens
    style them, showing one report."""

    CSS_PATH: ClassVar[list[Path]] = [APP_FOLDER / "babysit.tcss", APP_FOLDER / "fleet.tcss"]

    def __init__(self, report: ServiceReport) -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        yield RunBanner(lambda: NOW, id="banner")
        yield FleetTable(len(views.SERVICE.label), id="fleet-table")
        yield Static(id="fleet-detail")

    def on_mount(self) -> None:
        report = self.report
        banner = self.query_one(RunBanner)
        banner.show_report(report, offers_kill=True)
        banner.show(report.assessment, None)
        row = fleet_row(views.SERVICE, HostState().answered([report], NOW), NOW, interval=2.0)
        self.query_one(FleetTable).show([row])
        detail = self.query_one("#fleet-detail", Static)
        detail.update(Content(row.detail))
        detail.set_classes(f"-{row.tone}")


REPORTS = {
    "starting-eta": lambda: views.report_of(views.starting(), views.loading(views.ON_TIME)),
    "starting-overdue": lambda: views.report_of(views.starting(), views.loading(views.OVERDUE)),
    "dead-orphans": lambda: views.report_of(views.dead(), gpus=views.orphan_gpus()),
}


async def settled(pilot: Pilot[Any]) -> None:
    await pilot.pause()


@pytest.mark.parametrize("state", list(REPORTS))
@pytest.mark.parametrize("size", [SIZE, NARROW], ids=["120x36", "80x24"])
def test_the_banner_and_the_row(state: str, size: tuple[int, int], snap_compare: Any) -> None:
    """STARTING: the phase, its progress, how long, the ETA and the last run; overdue in
    the warning style; DEAD: the orphans, their memory and GPUs, and the kill key."""
    app = StartupViews(REPORTS[state]())
    assert snap_compare(app, terminal_size=size, run_before=settled)
