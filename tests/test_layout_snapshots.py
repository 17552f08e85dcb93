"""Snapshots at 80x24, the most common pane size: each modal (kill, relaunch, replace,
help, a canary's result) fits or scrolls with its buttons on screen, and the host screen
with its panes folded, the launch pane opened on four missing ``--speculative-…`` flags.

The apps are the snapshot modules' stand-ins (frozen clock, fixed rows, no connection).
Actions are run by name, not by key, so a key moved elsewhere does not change them.
"""

from __future__ import annotations

from typing import Any

import pytest
import test_app_snapshots as snaps
from support.wait import until
from test_app_actions import modal_drawn, modal_of, snap_app
from test_app_snapshots import INODE, NOW, make_app, probed, rows_shown, utc  # noqa: F401
from textual.pilot import Pilot

from tui.app.screens.canary_result import CanaryResultScreen
from tui.app.screens.help import HelpScreen
from tui.app.screens.host import HostScreen
from tui.core.canary import CanaryOutcome, CanaryResult
from tui.demo.stories import SPEC_FLAGS

#: Clock times drawn in UTC (the snapshot apps' fixture).
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("utc")]

SIZE = (80, 24)
#: A SGLang launch asking for NEXTN's four flags, and a run that has none of them.
SPECULATIVE = list(SPEC_FLAGS)  # the demo's qwen-nomtp drops these four
MODEL = "/data/models/Qwen/Qwen3-30B-A3B-Instruct-2507-FP8"


async def run_action(pilot: Pilot[Any], action: str) -> None:
    screen = pilot.app.screen
    assert isinstance(screen, HostScreen)
    await screen.run_action(action)


def test_kill_modal_80x24(snap_compare: Any) -> None:
    async def kill(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await run_action(pilot, "kill")
        await modal_drawn(pilot)

    assert snap_compare(
        snap_app(probed(writes=INODE, ready=True)), terminal_size=SIZE, run_before=kill
    )


def test_relaunch_modal_80x24(snap_compare: Any) -> None:
    async def relaunch(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await run_action(pilot, "relaunch")
        await modal_of(pilot)
        await pilot.pause()

    app = snap_app(probed(writes=None, ready=None, mtime=NOW - 180))
    assert snap_compare(app, terminal_size=SIZE, run_before=relaunch)


def test_replace_modal_scrolls_with_its_buttons_on_screen_80x24(snap_compare: Any) -> None:
    async def replace(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await run_action(pilot, "replace")
        await modal_drawn(pilot)

    app = snap_app(probed(writes=INODE, ready=True))
    assert snap_compare(app, terminal_size=SIZE, run_before=replace)


def test_help_80x24(snap_compare: Any) -> None:
    async def help_(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await run_action(pilot, "help")
        await until(lambda: isinstance(pilot.app.screen, HelpScreen), "help", pilot=pilot)
        await pilot.pause()

    app = snap_app(probed(writes=INODE, ready=True))
    assert snap_compare(app, terminal_size=SIZE, run_before=help_)


def test_canary_result_80x24(snap_compare: Any) -> None:
    result = CanaryResult(
        host="kpro5",
        service="qwen",
        outcome=CanaryOutcome.REPETITION,
        sent_at=NOW - 3,
        run_pid=67115,
        ttft_s=0.21,
        tokens_per_s=61.8,
        tokens=64,
        elapsed_s=1.2,
        finish_reason="length",
        output="the the the the the the the the the the the the the the the the " * 3,
        repetition=0.94,
        sampling={"temperature": 1.0, "top_p": 1.0},
    )

    async def canary(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        pilot.app.push_screen(CanaryResultScreen("kpro5/qwen", result))
        await until(lambda: isinstance(pilot.app.screen, CanaryResultScreen), "canary", pilot=pilot)
        await pilot.pause()

    app = make_app(probed(writes=INODE, ready=True))
    assert snap_compare(app, terminal_size=SIZE, run_before=canary)


def drop_speculative(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The snapshot app on a launch asking for NEXTN whose run dropped all four flags."""
    intended = [*snaps.INTENDED[:3], "--model-path", MODEL, "--port", "30000", *SPECULATIVE]
    hosts = snaps.HOSTS.replace(snaps.json.dumps(snaps.INTENDED), snaps.json.dumps(intended))
    monkeypatch.setattr(snaps, "HOSTS", hosts)
    monkeypatch.setattr(snaps, "CMDLINE", [*intended[:7]])
    monkeypatch.setattr(
        snaps,
        "REPORTED",
        f"[2026-01-12 09:20:06] server_args=ServerArgs(model_path='{MODEL}', port=30000, "
        "speculative_algorithm=None)",
    )
    return make_app(snaps.probed(writes=INODE, ready=True))


@pytest.fixture
def speculative_dropped(monkeypatch: pytest.MonkeyPatch) -> Any:
    return drop_speculative(monkeypatch)


@pytest.mark.parametrize(
    ("size", "keys"),
    [(SIZE, ()), (SIZE, ("l",)), ((80, 40), ())],
    ids=["80x24-folded", "80x24-launch-open", "80x40"],
)
def test_host_screen_with_four_missing_flags(
    speculative_dropped: Any, size: tuple[int, int], keys: tuple[str, ...], snap_compare: Any
) -> None:
    """Folded: ``launch: 4 flags missing ✗``; opened: the four flags read apart; taller,
    the model's path whole on lines of its own."""

    async def shown(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        await pilot.press(*keys)
        await pilot.pause()

    assert snap_compare(speculative_dropped, terminal_size=size, run_before=shown)


def test_quit_while_an_action_runs_80x24(snap_compare: Any) -> None:
    """Ctrl+C while a kill runs asks first; both answers on screen."""
    from tui.app.screens.quit import ConfirmQuit

    async def asked(pilot: Pilot[Any]) -> None:
        await rows_shown(pilot)
        pilot.app.push_screen(ConfirmQuit("kill on kpro5/qwen is running"))
        await until(lambda: isinstance(pilot.app.screen, ConfirmQuit), "the question", pilot=pilot)
        await pilot.pause()

    assert snap_compare(
        snap_app(probed(writes=INODE, ready=True)), terminal_size=SIZE, run_before=asked
    )
