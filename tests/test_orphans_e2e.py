"""Orphans end to end, on local, ssh and pct: a vLLM sim of ``orphan-workers`` (``--tp 2``)
is killed -9, its TP worker lives on holding GPU memory in the nvidia-smi stand-in;
``babysit status --json`` shows it in ``gpus.orphans``; ``babysit relaunch`` refuses and
names it; ``babysit kill --orphans`` kills it and says the memory released.

(The identity re-check of each orphan, a stale start time getting no signal, is in
tests/test_orphans_kill.py, on the same three transports.)
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sim_helpers import ROOT
from support import orphan_sim
from support.sshd import Sshd, start_sshd
from support.wait import wait_until

pytestmark = pytest.mark.integration

VMID = 133


@pytest.fixture(scope="module")
def e2e_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """An sshd of this module's own, whose PATH carries the nvidia-smi stand-in."""
    server = start_sshd(tmp_path_factory.mktemp("orphans-e2e-sshd"))
    server.add_container(VMID)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, e2e_sshd: Sshd) -> Iterator[Path]:
    """The sim registry the stand-in reads, here and on the sshd's hosts."""
    registry = tmp_path / "sim-state"
    local, remote = orphan_sim.install_standin(registry, tmp_path / "bin", e2e_sshd.bin_dir)
    monkeypatch.setenv("PATH", f"{local.parent}{os.pathsep}{os.environ['PATH']}")
    try:
        yield registry
    finally:
        remote.unlink()


def config(tmp_path: Path, kind: str, sshd: Sshd, service: dict[str, object]) -> Path:
    if kind == "local":
        entry = "h:\n  local: true\n"
    elif kind == "ssh":
        entry = sshd.host_yaml("h")
    else:
        entry = sshd.pct_host_yaml("h", VMID)
    body = entry.rstrip("\n") + "\n  services:\n    qwen: " + json.dumps(service)
    path = tmp_path / "hosts.yaml"
    path.write_text("hosts:\n" + "".join(f"  {x}\n" for x in body.splitlines()))
    return path


def babysit(hosts: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "tui", *args, "--config", str(hosts)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def orphans_in_status(hosts: Path) -> list[dict[str, object]]:
    done = babysit(hosts, "status", "--json")
    (service,) = json.loads(done.stdout)["services"]
    return list((service.get("gpus") or {}).get("orphans") or [])


@pytest.mark.parametrize("kind", ["local", "ssh", "pct"])
def test_orphans_are_shown_block_a_relaunch_and_are_killed(
    kind: str, tmp_path: Path, e2e_sshd: Sshd, state: Path
) -> None:
    sim = orphan_sim.start(tmp_path, state)
    pids: list[int] = []
    try:
        pids = orphan_sim.orphan(sim)
        hosts = config(tmp_path, kind, e2e_sshd, orphan_sim.service(sim))

        seen = wait_until(lambda: orphans_in_status(hosts) or None, 20, "orphans in status")
        assert [o["pid"] for o in seen] == pids
        (worker,) = seen
        assert isinstance(worker["memory_mib"], int | float) and worker["memory_mib"] > 0
        assert worker["gpu"] == 1
        assert worker["cmdline"][0] == "VLLM::Worker_TP1"  # type: ignore[index]
        assert isinstance(worker["started_at"], str)  # ISO 8601, in the host's zone

        refused = babysit(hosts, "relaunch", "h/qwen")
        assert refused.returncode == 2, refused.stderr
        assert f"pid {pids[0]} (" in refused.stderr and "VLLM::Worker_TP1" in refused.stderr
        # the command to free them, as babysit was run (python -m tui): it works as printed
        free = shlex.join([sys.executable, "-m", "tui", "kill", "h/qwen", "--orphans"])
        assert free in refused.stderr
        assert "babysit run=" not in sim.log_path.read_text()  # nothing was launched

        killed = babysit(hosts, "kill", "h/qwen", "--orphans", "--json")
        assert killed.returncode == 0, killed.stdout + killed.stderr
        said = [json.loads(line) for line in killed.stdout.splitlines()]
        (listed,) = [s for s in said if s["type"] == "confirm"]
        assert [o["pid"] for o in listed["orphans"]] == pids
        (result,) = [s for s in said if s["type"] == "result"]
        assert result["ok"] is True
        assert f"orphan pid {pids[0]} is gone" in result["message"]
        assert (
            "GPU memory freed: " in result["message"] and " on GPU 1 (after " in result["message"]
        )
        assert all(orphan_sim.gone(pid) for pid in pids)
        assert orphans_in_status(hosts) == []
    finally:
        sim.stop()
        orphan_sim.end(pids)
