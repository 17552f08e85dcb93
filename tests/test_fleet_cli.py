"""How `babysit NAME …` is read: one service's host screen, or the fleet view."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tui.app.fleet_rows import Fleet
from tui.commands import ui
from tui.errors import UsageError
from tui.hostsfile import parse_config

REPO = Path(__file__).resolve().parent.parent

HOSTS = """\
hosts:
  kpro5:
    ssh: root@10.0.0.15
    services:
      qwen: {engine: sglang, log: /root/qwen.log}
      b200: {engine: sglang, log: /root/b200.log}
  b200:
    ssh: root@10.0.0.16
    services:
      dp: {engine: sglang, instances: 2, log: "/root/dp{i}.log"}
  empty:
    local: true
groups:
  gpu: [kpro5, b200]
"""
CONFIG = parse_config(HOSTS)


def shown(choice: object) -> object:
    """A choice as names: ``(host, service)`` or ``{host: [services]}`` and the title."""
    if isinstance(choice, Fleet):
        return choice.title, {h.name: [s.name for s in ss] for h, ss in choice.targets}
    host, service = choice  # type: ignore[misc]
    return host.name, service.name


@pytest.mark.unit
@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ([], ("all hosts", {"kpro5": ["qwen", "b200"], "b200": ["dp-0", "dp-1"]})),
        (["kpro5"], ("kpro5", "qwen")),
        (["kpro5", "qwen"], ("kpro5", "qwen")),
        (["kpro5/qwen"], ("kpro5", "qwen")),
        (["b200", "dp-1"], ("b200", "dp-1")),
        (["gpu"], ("group gpu", {"kpro5": ["qwen", "b200"], "b200": ["dp-0", "dp-1"]})),
        (["b200", "kpro5"], ("b200, kpro5", {"b200": ["dp-0", "dp-1"], "kpro5": ["qwen", "b200"]})),
        (
            ["b200", "kpro5/qwen"],
            ("b200, kpro5/qwen", {"b200": ["dp-0", "dp-1"], "kpro5": ["qwen"]}),
        ),
        (
            ["b200", "gpu", "empty"],
            ("b200, gpu, empty", {"b200": ["dp-0", "dp-1"], "kpro5": ["qwen", "b200"]}),
        ),
    ],
)
def test_the_words_choose_a_host_screen_or_the_fleet(words: list[str], expected: object) -> None:
    assert shown(ui.choose(CONFIG, words)) == expected


@pytest.mark.unit
@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["kpro5", "b200"], "'b200' is both a host and a service of kpro5"),
        (["gpu", "qwen"], "'gpu' is a group"),
        (["kpro5", "qwn"], "no service 'qwn' (did you mean 'qwen'?)"),
        (["kpro5", "b20", "gpu"], "no host 'b20' (did you mean 'b200'?)"),
        (["empty"], "no services to watch"),
        (["statsu"], "did you mean the verb 'status'?"),
        (["chek", "kpro5"], "no verb 'chek' (did you mean the verb 'check'?)"),
    ],
)
def test_mistakes_are_told_in_plain_words(words: list[str], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        ui.choose(CONFIG, words)
    assert message in raised.value.message


@pytest.mark.integration
def test_the_help_says_how_the_words_are_read() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tui", "kpro5", "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0
    assert "babysit kpro5 b200        the fleet view of both hosts" in result.stdout
    assert "babysit gpu-nodes" in result.stdout
    assert "Enter opens the selected service's host screen" in result.stdout


@pytest.mark.unit
def test_babysit_alone_without_a_hosts_yaml_prints_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("BABYSIT_CONFIG", raising=False)
    helped = []
    assert ui.run_bare(lambda: helped.append(True)) == 0
    assert helped == [True]
