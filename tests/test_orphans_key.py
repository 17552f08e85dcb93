"""``K`` on the host screen of a service whose server died leaving its TP worker on the
GPUs: the modal (at 80x24) names the orphan, and confirming kills it and says the
memory it held is free."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sim_helpers import Sim
from support import orphan_sim
from support.wait import until
from textual.pilot import Pilot
from textual.widgets import Button

from tui.app.app import BabysitApp, HostView
from tui.app.screens.confirm import ConfirmAction
from tui.app.screens.host import HostScreen
from tui.hostsfile import parse_config
from tui.session.sessions import Sessions

pytestmark = pytest.mark.integration


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    registry = tmp_path / "sim-state"
    (local,) = orphan_sim.install_standin(registry, tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{local.parent}{os.pathsep}{os.environ['PATH']}")
    yield registry


def app_of(sim: Sim) -> BabysitApp:
    body = "h:\n  local: true\n  services:\n    qwen: " + json.dumps(orphan_sim.service(sim))
    host = parse_config("hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines())).hosts["h"]
    return BabysitApp(HostView(host, host.services["qwen"]), sessions=Sessions(interval=0.2))


def host_screen(app: BabysitApp) -> HostScreen:
    (screen,) = [s for s in app.screen_stack if isinstance(s, HostScreen)]
    return screen


async def test_k_offers_the_orphans_and_kills_them(tmp_path: Path, state: Path) -> None:
    sim = orphan_sim.start(tmp_path, state)
    pids: list[int] = []
    try:
        pids = orphan_sim.orphan(sim)
        app = app_of(sim)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(
                lambda: host_screen(app).check_action("kill", ()) is True,
                "k offered for the orphans",
                timeout=30,
                pilot=pilot,
            )
            screen = host_screen(app)
            await pilot.press("K")
            modal = await modal_of(pilot)
            text = modal.plan.text()
            assert modal.plan.title == "Kill the orphans on h/qwen's GPUs?"
            assert f"pid {pids[0]}" in text and "VLLM::Worker_TP1" in text
            assert " on GPU 1" in text and "ago; parent pid" in text
            confirm = modal.query_one("#confirm", Button)
            assert confirm.label.plain == "Kill 1 orphan"
            region = confirm.region
            assert region.right <= 80 and region.bottom <= 24, region  # it fits at 80x24
            await pilot.click("#confirm")
            await until(
                lambda: screen.progress.has_class("-ok"),
                lambda: f"the kill to end (progress: {screen.progress.words!r})",
                timeout=30,
                pilot=pilot,
            )
            words = screen.progress.words
            assert f"orphan pid {pids[0]} is gone" in words, words
            assert "GPU memory freed: " in words and " on GPU 1 (after " in words, words
        assert all(orphan_sim.gone(pid) for pid in pids)
        path = Path(os.environ["BABYSIT_STATE"]) / "actions.jsonl"
        (record,) = [json.loads(x) for x in path.read_text().splitlines()]
        assert (record["action"], record["actor"], record["ok"]) == ("kill", "screen", True)
    finally:
        sim.stop()
        orphan_sim.end(pids)


async def modal_of(pilot: Pilot[Any]) -> ConfirmAction:
    await until(
        lambda: isinstance(pilot.app.screen, ConfirmAction), "the confirmation", pilot=pilot
    )
    modal = pilot.app.screen
    assert isinstance(modal, ConfirmAction)
    return modal
