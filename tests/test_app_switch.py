"""A host with several services: tab and shift+tab step through them on the host screen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.wait import until

from tui.app.app import BabysitApp, HostView
from tui.app.screens.host import HostScreen
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration


async def test_tab_steps_through_the_hosts_services(tmp_path: Path) -> None:
    logs = {name: tmp_path / f"{name}.log" for name in ("alpha", "beta", "gamma")}
    for name, log in logs.items():
        log.write_text(f"{name} says hello\n")
    services = "".join(
        f"      {name}: {{log: {json.dumps(str(log))}}}\n" for name, log in logs.items()
    )
    host = parse_config(f"hosts:\n  box:\n    local: true\n    services:\n{services}").hosts["box"]
    app = BabysitApp(HostView(host, host.services["alpha"]), sessions=Sessions(interval=3600))
    async with app.run_test(size=(120, 36)) as pilot:

        def shown() -> str:
            screen = app.screen
            assert isinstance(screen, HostScreen)
            return screen.service.name

        assert shown() == "alpha"
        await pilot.press("tab")
        await pilot.pause()
        assert shown() == "beta"
        await pilot.press("tab", "tab")
        await pilot.pause()
        assert shown() == "alpha"
        await pilot.press("shift+tab")
        await pilot.pause()
        assert shown() == "gamma"
        await until(
            lambda: (
                "gamma says hello"
                in [r.text for r in app.screen.log_view.buffer if hasattr(r, "text")]
            ),  # type: ignore[attr-defined]
            "gamma's line in its log view",
            pilot=pilot,
        )


async def test_a_single_service_host_has_no_switcher(tmp_path: Path) -> None:
    log = tmp_path / "only.log"
    log.write_text("x\n")
    host = parse_config(
        "hosts:\n  box:\n    local: true\n    services:\n"
        f"      only: {{log: {json.dumps(str(log))}}}\n"
    ).hosts["box"]
    app = BabysitApp(HostView(host, host.services["only"]), sessions=Sessions(interval=3600))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("tab")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HostScreen) and screen.service.name == "only"
        assert app.check_action("switch_service", (1,)) is False


async def test_escape_on_a_host_screen_opened_directly_shows_its_hosts_fleet(
    tmp_path: Path,
) -> None:
    """`babysit box gamma` has no fleet under it: Esc shows the fleet of box's services in
    its place, gamma's row selected; Enter opens it again, and Esc comes back to that
    same fleet."""
    from tui.app.screens.fleet import FleetScreen

    logs = {name: tmp_path / f"{name}.log" for name in ("alpha", "beta", "gamma")}
    for name, log in logs.items():
        log.write_text(f"{name} says hello\n")
    services = "".join(
        f"      {name}: {{log: {json.dumps(str(log))}}}\n" for name, log in logs.items()
    )
    config = parse_config(
        f"hosts:\n  box:\n    local: true\n    services:\n{services}"
        "  other:\n    local: true\n    services:\n"
        f"      far: {{log: {json.dumps(str(logs['alpha']))}}}\n"
    )
    host = config.hosts["box"]
    app = BabysitApp(HostView(host, host.services["gamma"]), sessions=Sessions(interval=3600))
    async with app.run_test(size=(120, 36)) as pilot:
        assert isinstance(app.screen, HostScreen)
        assert app.check_action("back", ()) is True
        await pilot.press("escape")
        await pilot.pause()
        fleet = app.screen
        assert isinstance(fleet, FleetScreen)
        assert fleet.title_text == "box"
        # the host's services, and no other host's
        await until(lambda: len(fleet.table.keys) == 3, "box's three rows", pilot=pilot)
        assert sorted(fleet.table.keys) == ["box/alpha", "box/beta", "box/gamma"]
        # the row of the service it came from is the one selected, and stays so
        assert fleet.table.selected == "box/gamma"
        # the host screen it replaced is gone: nothing to go back to under the fleet
        assert [type(s) for s in app.screen_stack[1:]] == [FleetScreen]
        assert app.check_action("back", ()) is False

        await pilot.press("enter")
        await pilot.pause()
        opened = app.screen
        assert isinstance(opened, HostScreen)
        assert (opened.host.name, opened.service.name) == ("box", "gamma")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is fleet
