"""A demo fleet's launcher: babysit with the fleet's hosts.yaml, state and nvidia-smi
stand-in, so that each command the demo prints works as printed, in any shell.

The fleet is made (its folder, hosts.yaml and launcher) but none of its servers is
started: what is checked is what the launcher gives a babysit run through it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tui.commands.demo import keep_text
from tui.demo.fleet import HOST, Fleet, tui_environment
from tui.demo.stories import STORIES
from tui.invocation import COMMAND_ENV

pytestmark = pytest.mark.integration


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fleet]:
    monkeypatch.setenv("BABYSIT_DEMO_STATE", str(tmp_path / "demo-state"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    made = Fleet.create()
    yield made
    assert made.stop() == 0  # nothing was started


def through(launcher: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The launcher run as a user runs it: from another folder, with no babysit variable
    and no PYTHONPATH of the test's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BABYSIT_")}
    env.pop("PYTHONPATH", None)
    env["PATH"] = "/usr/bin:/bin"  # no nvidia-smi, no babysit
    return subprocess.run(
        [str(launcher), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_every_fleet_has_its_launcher(fleet: Fleet) -> None:
    assert fleet.launcher == fleet.folder / "babysit"
    assert os.access(fleet.launcher, os.X_OK)
    assert tui_environment(fleet)[COMMAND_ENV] == shlex.quote(str(fleet.launcher))


def test_the_launcher_reads_the_fleets_hosts_yaml(fleet: Fleet, tmp_path: Path) -> None:
    """From any folder: even one with a `tui` package of its own (another clone's)."""
    other = tmp_path / "other-clone"
    (other / "tui").mkdir(parents=True)
    (other / "tui" / "__init__.py").write_text("raise SystemExit('not this babysit')\n")
    done = through(fleet.launcher, "hosts", cwd=other)
    assert done.returncode == 0, done.stderr
    assert f"{HOST}" in done.stdout
    for story in STORIES:
        assert story.name in done.stdout


def test_through_the_launcher_nvidia_smi_answers_for_the_simulated_gpus(
    fleet: Fleet, tmp_path: Path
) -> None:
    """`babysit check` asks the host's nvidia-smi: through the launcher the stand-in
    answers (the screen's GPUs), without it there is none on this machine's PATH."""
    done = through(fleet.launcher, "check", HOST, cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the logs are missing: no server started
    line = next(line for line in done.stdout.splitlines() if "nvidia-smi" in line)
    assert "answers: 12 GPU(s)" in line


def test_every_command_the_keep_text_prints_runs_the_launcher(fleet: Fleet) -> None:
    text = keep_text(fleet, settled=True)
    commands = [line.strip() for line in text.splitlines() if line.startswith("  /")]
    assert len(commands) >= 7
    for line in commands:
        words = shlex.split(line)
        assert words[0] == str(fleet.launcher), line
    said = {shlex.join(shlex.split(line)[1:]) for line in commands}
    assert {"", "status", "demo --stop", f"{HOST} {STORIES[0].name}"} <= said
    assert "--config" not in text.split("Watch it")[1]  # the launcher names the hosts.yaml
