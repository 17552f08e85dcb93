"""`./dev/run ARGS` runs `babysit ARGS` in the folder it was started from, so that a
command the README or babysit prints (`./dev/run status --config my-hosts.yaml`) works
as printed. The clone's .venv here is a stand-in (a python that installs nothing, a
babysit that says where and how it ran): what is checked is dev/run's own part."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent

STAND_IN_PYTHON = """#!/bin/sh
# python3 -c 'import ensurepip, venv' and python -m pip install ...: nothing to do
exit 0
"""
STAND_IN_BABYSIT = """#!/usr/bin/env python3
import json, os, sys
print(json.dumps({"cwd": os.getcwd(), "argv": sys.argv[1:]}))
"""


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """dev/run in a folder with spaces in its name, beside a stand-in .venv."""
    root = tmp_path / "my clone"
    (root / "dev").mkdir(parents=True)
    shutil.copy2(REPO / "dev" / "run", root / "dev" / "run")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name, text in (("python", STAND_IN_PYTHON), ("babysit", STAND_IN_BABYSIT)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return root


def dev_run(clone: Path, *args: str, cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [str(clone / "dev" / "run"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_arguments_and_the_folder_are_the_callers(clone: Path, tmp_path: Path) -> None:
    here = tmp_path / "work"
    here.mkdir()
    ran = dev_run(clone, "status", "--config", "my hosts.yaml", cwd=here)
    assert ran == {"cwd": str(here), "argv": ["status", "--config", "my hosts.yaml"]}


def test_no_arguments_is_the_demo(clone: Path, tmp_path: Path) -> None:
    assert dev_run(clone, cwd=tmp_path)["argv"] == ["demo"]
