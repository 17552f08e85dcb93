"""The demo's two DEAD stories read differently, from the bytes real runs write: an SGLang
run that runs out of memory while loading (``gpu4-oom``) and a vLLM run killed once it
served (``gpu2-dead``). Each simulated server writes its log as the engine does; the
log's lines go through a service's facts as every view gets them."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from sim_helpers import Sim
from support.reports import build_report
from support.serving import serving_sim
from test_app_snapshots import NOW, probed

from tui.app.widgets.run_banner import banner_lines
from tui.core.cause import CauseKind
from tui.core.report import ProbeDetails
from tui.core.verdict_words import why
from tui.demo.stories import STORIES, Story
from tui.engines import spec

pytestmark = pytest.mark.integration


def story(name: str) -> Story:
    return next(s for s in STORIES if s.name == name)


def ended(sim: Sim, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while sim.proc.poll() is None:
        assert time.monotonic() < deadline, f"{sim.argv} did not end:\n{sim.text()[-2000:]}"
        time.sleep(0.05)


def first_line(tail: bytes, engine: str) -> str:
    dead = probed(writes=None, ready=None, mtime=NOW - 180)
    report = build_report(
        dead, ProbeDetails(tail=tail, tail_offset=0), engine=engine, intended=None
    )
    cause = report.assessment.cause
    assert cause is not None
    return banner_lines(report.assessment, NOW)[0], cause.kind, why(cause)  # type: ignore[return-value]


def test_the_oom_story_and_the_killed_story_say_why_differently(tmp_path: Path) -> None:
    oom_story, killed_story = story("gpu4-oom"), story("gpu2-dead")
    oom = serving_sim(tmp_path / "oom", oom_story.engine, scenario=oom_story.first_scenario or "")
    killed = serving_sim(tmp_path / "killed", killed_story.engine)
    try:
        ended(oom)
        killed.wait_for("|".join(spec(killed_story.engine).ready))
        killed.proc.send_signal(signal.SIGKILL)
        ended(killed)
        oom_line, oom_kind, oom_why = first_line(oom.raw(), oom_story.engine)
        killed_line, killed_kind, killed_why = first_line(killed.raw(), killed_story.engine)
    finally:
        oom.stop()
        killed.stop()
    assert oom_kind is CauseKind.OOM
    assert oom_why.startswith("out of memory: RuntimeError: Not enough memory.")
    assert killed_kind is CauseKind.NO_FAILURE_LINE
    assert killed_why.startswith("no failure line; last line: ")
    assert killed_why.endswith("Application startup complete.")
    assert oom_line.startswith(f"✖ DEAD  {oom_why}")
    assert killed_line.startswith(f"✖ DEAD  {killed_why}")
