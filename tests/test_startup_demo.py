"""The demo's slow-loading service starts with a last run in its host's run history, so its
first run on screen already has an ETA: the history the demo seeds is what the probe
agent keeps, and gives the ETA the startup's words say. The orphan story's server holds
a GPU per tensor-parallel rank."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui.agent.protocol import STARTUPS_FILE
from tui.core.answers import Fields
from tui.core.phases import PhaseMark, StartupRecord, startup
from tui.demo.fleet import GPU_COUNT, Fleet
from tui.demo.stories import STORIES, Fate
from tui.engines import spec

pytestmark = pytest.mark.integration

SLOW = next(story for story in STORIES if story.last_run is not None)
ORPHAN = next(story for story in STORIES if story.fate is Fate.ORPHAN_WHEN_READY)


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fleet]:
    monkeypatch.setenv("BABYSIT_DEMO_STATE", str(tmp_path / "demo-state"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = Fleet.create()
    yield made
    assert made.stop() == 0  # nothing was started


def test_the_slow_story_loads_while_watched_with_a_last_run_to_go_by() -> None:
    assert SLOW.fate is Fate.LOADING and SLOW.scenario == "slow-load"
    last = SLOW.last_run
    assert last is not None
    names = [name for name, _ in last.shares]
    shares = [share for _, share in last.shares]
    # every phase the engine names has its share, in the engine's order
    assert [n for n in names if n in {p.name for p in spec(SLOW.engine).phases}] == [
        p.name for p in spec(SLOW.engine).phases
    ]
    assert shares == sorted(shares) and shares[-1] < last.ready <= 1


def test_its_history_is_kept_as_the_agent_keeps_one(fleet: Fleet) -> None:
    path = fleet.host_state / SLOW.name / STARTUPS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    (run,) = json.loads(path.read_text())["runs"]
    record = StartupRecord.from_json(Fields(run, str(path)))
    last = SLOW.last_run
    assert last is not None
    spent = record.durations()
    assert sum(spent.values()) == pytest.approx(last.ready * last.seconds)
    assert list(spent)[1:] == [phase.name for phase in spec(SLOW.engine).phases]
    # only the slow story has one
    assert sorted(p.name for p in fleet.host_state.iterdir()) == [SLOW.name]


def test_the_first_run_on_screen_has_an_eta(fleet: Fleet) -> None:
    path = fleet.host_state / SLOW.name / STARTUPS_FILE
    (run,) = json.loads(path.read_text())["runs"]
    history = (StartupRecord.from_json(Fields(run, str(path))),)
    first = spec(SLOW.engine).phases[0].name
    now = 1768209871.0
    s = startup(
        started=now - 30,
        marks=[PhaseMark(first, 100, at=now - 10, done=3, total=8)],
        ready_at=None,
        ready=False,
        history=history,
        identity=("b0e1c2d3", os.getpid(), 1),
        now=now,
    )
    assert s.eta is not None and s.overdue is None
    last = SLOW.last_run
    assert last is not None
    (name, share), *_ = last.shares
    assert name == first
    assert s.eta == pytest.approx(now + (last.ready - share) * last.seconds - 10)


def test_the_simulated_gpus_are_as_many_as_the_stories_use(fleet: Fleet) -> None:
    assert max(gpu for story in STORIES for gpu in story.gpus) + 1 == GPU_COUNT
    env = fleet.sim_env(SLOW.gpus)
    assert env["BABYSIT_SIM_GPUS"] == str(GPU_COUNT)
    assert env["CUDA_VISIBLE_DEVICES"] == str(SLOW.gpu)


def test_the_orphan_story_holds_a_gpu_per_rank(fleet: Fleet) -> None:
    assert ORPHAN.tp > 1 and ORPHAN.scenario == "orphan-workers"
    ranks = ",".join(str(gpu) for gpu in ORPHAN.gpus)
    assert fleet.sim_env(ORPHAN.gpus)["CUDA_VISIBLE_DEVICES"] == ranks
    assert f"gpus: [{', '.join(str(gpu) for gpu in ORPHAN.gpus)}]" in fleet.hosts_yaml.read_text()
