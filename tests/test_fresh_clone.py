"""babysit run in a fresh clone, by a user with no hosts.yaml of their own, contacts no
host: the repository's example is never a default config, and the error says how to make one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent

#: Runs babysit (``python -m tui``) with an audit hook that writes every network call
#: it makes (name resolution, connect, send) to the file named by argv[1].
WATCHED = """
import runpy, sys
log = sys.argv[1]
def hook(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
                 "socket.gethostbyname_ex", "socket.sendto", "socket.sendmsg"):
        with open(log, "a") as out:
            out.write(event + " " + repr(args) + "\\n")
sys.addaudithook(hook)
sys.argv = ["babysit", *sys.argv[2:]]
runpy.run_module("tui", run_name="__main__", alter_sys=True)
"""


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The repository's files as a fresh clone of this branch has them."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    root = tmp_path / "clone"
    for name in filter(None, (n.decode() for n in listed)):
        source = REPO / name
        if not source.is_file():
            continue  # deleted in the working tree
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return root


def babysit_in(
    clone: Path, tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    calls = tmp_path / "network-calls"
    calls.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BABYSIT_CONFIG")}
    env.update(HOME=str(home), PYTHONPATH=str(clone), XDG_CONFIG_HOME=str(home / ".config"))
    result = subprocess.run(
        [sys.executable, "-c", WATCHED, str(calls), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=clone,
        env=env,
        timeout=60,
    )
    return result, calls.read_text()


def test_the_example_uses_only_reserved_documentation_names(clone: Path) -> None:
    assert not (clone / "hosts.yaml").exists(), "an example at ./hosts.yaml is a default config"
    from tui.hostsfile import parse_config_file

    config = parse_config_file(clone / "hosts.example.yaml")
    for host in config.hosts.values():
        if host.ssh is not None:
            assert host.ssh.host.endswith(".example"), host.ssh.host


@pytest.mark.parametrize("args", [["status"], ["status", "--json"], ["check", "kpro5"]])
def test_a_fresh_clone_without_a_user_config_contacts_nothing_and_says_how_to_make_one(
    clone: Path, tmp_path: Path, args: list[str]
) -> None:
    result, calls = babysit_in(clone, tmp_path, *args)
    assert calls == "", f"babysit {' '.join(args)} reached for the network:\n{calls}"
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no hosts.yaml found" in result.stderr
    example = clone / "hosts.example.yaml"
    assert f"cp {example} ~/.config/babysit/hosts.yaml" in result.stderr
    # the demo, named as this babysit runs (python -m tui here)
    assert result.stderr.rstrip().endswith(
        f"watch simulated servers on this machine: {sys.executable} -m tui demo"
    )
    assert "Traceback" not in result.stderr
    if "--json" in args:
        assert json.loads(result.stdout)["ok"] is False


def test_babysit_alone_in_a_fresh_clone_prints_help_and_contacts_nothing(
    clone: Path, tmp_path: Path
) -> None:
    result, calls = babysit_in(clone, tmp_path)
    assert calls == "", f"babysit reached for the network:\n{calls}"
    assert result.returncode == 0, result.stderr
    assert "usage: babysit" in result.stdout
    assert result.stdout.rstrip().endswith(
        f"to watch simulated servers first: {sys.executable} -m tui demo"
    )


def test_the_example_is_read_when_the_user_names_it(clone: Path, tmp_path: Path) -> None:
    result, calls = babysit_in(clone, tmp_path, "hosts", "--config", "hosts.example.yaml")
    assert result.returncode == 0, result.stderr
    assert "ssh root@kpro5.example" in result.stdout
    assert calls == ""
