"""How babysit names itself in the commands it prints: each must work as printed."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

from tui.invocation import COMMAND_ENV, babysit_command, command

pytestmark = pytest.mark.unit


def script(folder: Path, name: str = "babysit") -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_program_not_on_path_is_named_by_its_full_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """./dev/run runs .venv/bin/babysit, relative to the clone: said whole."""
    monkeypatch.delenv(COMMAND_ENV, raising=False)
    (tmp_path / "venv-bin").mkdir()
    program = script(tmp_path / "venv-bin")
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    monkeypatch.chdir(tmp_path)
    assert babysit_command("venv-bin/babysit") == str(program)


def test_the_program_on_path_is_babysit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(COMMAND_ENV, raising=False)
    program = script(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin")
    assert babysit_command(str(program)) == "babysit"


def test_a_path_with_spaces_is_quoted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(COMMAND_ENV, raising=False)
    folder = tmp_path / "my clone" / "bin"
    folder.mkdir(parents=True)
    program = script(folder)
    monkeypatch.setenv("PATH", "/usr/bin")
    said = babysit_command(str(program))
    assert shlex.split(said) == [str(program)]


def test_python_dash_m_tui_is_said_with_this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(COMMAND_ENV, raising=False)
    main = str(Path(__file__).resolve().parents[1] / "tui" / "__main__.py")
    assert shlex.split(babysit_command(main)) == [sys.executable, "-m", "tui"]


def test_inside_another_program_it_is_babysit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(COMMAND_ENV, raising=False)
    assert babysit_command("/usr/bin/pytest") == "babysit"
    assert babysit_command("") == "babysit"


def test_a_launcher_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(COMMAND_ENV, "/tmp/babysit-demo-x/babysit")
    assert babysit_command("/usr/bin/pytest") == "/tmp/babysit-demo-x/babysit"
    assert command("tail", "lab/a b", "--pid", "7") == (
        "/tmp/babysit-demo-x/babysit tail 'lab/a b' --pid 7"
    )
