"""Snapshots of each verdict's look where it matters most at 3 a.m.: the banner over the
fleet's row and the line under it, at 80x24, for a DEAD run that ran out of memory, a
DEAD run that printed no failure line, a failed STARTING run, a STALE run and a degraded
LIVE, with and without colour (``NO_COLOR``).

As in test_startup_snapshots: a frozen clock, UTC, nothing that connects anywhere; the
reports are real ones of the made-up probe of tests/test_app_snapshots.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import test_cause as cause
from test_app_snapshots import INODE, OLD_INODE, probed, utc  # noqa: F401 - a fixture
from test_startup_snapshots import NARROW, StartupViews, settled

from tui.core.hint import Hint, HintRule
from tui.core.report import ServiceReport

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("utc")]


def degraded() -> ServiceReport:
    report = cause.report(probed(writes=INODE, ready=True), b"")
    hints = (
        Hint(HintRule.SPEC_NO_ACCEPT, "speculative decoding is probably off", ("the log",)),
        Hint(HintRule.LOW_GPU_POWER, "GPU power under 60% of its limit", ("nvidia-smi",)),
    )
    return dataclasses.replace(report, hints=hints)


REPORTS = {
    "dead-oom": lambda: cause.report(cause.dead(), cause.SGLANG_OOM),
    "dead-no-failure-line": lambda: cause.report(cause.dead(), cause.SERVED_THEN_GONE, "vllm"),
    "starting-failed": lambda: cause.report(
        probed(writes=INODE, ready=False), cause.VLLM_ERROR, "vllm"
    ),
    "stale": lambda: cause.report(probed(writes=OLD_INODE, ready=True), b""),
    "live-degraded": degraded,
}


@pytest.mark.parametrize("colour", ["colour", "no-colour"])
@pytest.mark.parametrize("state", list(REPORTS))
def test_the_banner_and_the_row_say_the_verdict_and_why(
    state: str, colour: str, snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if colour == "no-colour":
        monkeypatch.setenv("NO_COLOR", "1")
    app = StartupViews(REPORTS[state]())
    assert snap_compare(app, terminal_size=NARROW, run_before=settled)
