"""`babysit dump` run as an unprivileged user (nobody, through setpriv) against a sim it
does not own: ptrace is denied, the reason is said in plain words, and the rest of the
bundle (the kernel's view it may read, nvidia-smi, the log's lines) is still written.

The run is the one babysit's run record names (pid, start ticks, boot), since nobody
may not read another user's open files; everything nobody reads lives under a folder
of mode 0755, and the bundle goes to a folder nobody owns. Root only (setpriv)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.servers import REPO, Server

pytestmark = pytest.mark.integration

READY = "The server is fired up and ready to roll!"
NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder everyone may read (a test's tmp_path is its user's alone)."""
    if os.geteuid() != 0:
        pytest.skip("running babysit as another user (setpriv) needs root")
    if shutil.which("setpriv") is None:
        pytest.skip("no setpriv on this machine")
    base = Path(tempfile.mkdtemp(prefix="babysit-dump-ptrace-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def public_folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o755)
    return path


def start_ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def write_record(folder: Path, pid: int, log: Path) -> None:
    """babysit's run record of the service, as a launch writes it."""
    record = {
        "run_id": "dump-ptrace",
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        "pid": pid,
        "start_ticks": start_ticks(pid),
        "started_at": time.time(),
        "log_path": str(log),
        "argv": ["babysit", "sim"],
        "cwd": str(REPO),
    }
    runs = public_folder(folder) / "runs.jsonl"
    runs.write_text(json.dumps(record) + "\n")
    runs.chmod(0o644)


#: What a python nobody runs babysit with must do: import babysit and its packages, and
#: start itself again (the local agent is that python).
PYTHON_CHECK = (
    "import subprocess, sys, textual, tui; "
    "subprocess.run([sys.executable, '-c', 'pass'], check=True)"
)


def nobody_python(env: dict[str, str]) -> str | None:
    """A python nobody may run babysit with: this one, or the system's of the same version
    with this venv's packages on PYTHONPATH (this one may live in a folder of root's)."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for python in (sys.executable, f"/usr/bin/python{version}"):
        check = [*AS_NOBODY, python, "-c", PYTHON_CHECK]
        if (
            subprocess.run(check, capture_output=True, check=False, cwd=REPO, env=env).returncode
            == 0
        ):
            return python
    return None


def as_nobody(env: dict[str, str], python: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AS_NOBODY, python, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
        cwd=REPO,
        env=env,
    )


def test_ptrace_denied_is_said_and_the_rest_is_written(shared: Path, servers: list[Server]) -> None:
    tools = public_folder(shared / "bin")
    (tools / "py-spy").symlink_to(Path(sys.executable).parent / "py-spy")
    sim_state = public_folder(shared / "sim-state")
    log = shared / "serve.log"
    server = Server(log, state=sim_state)
    servers.append(server)
    server.wait_for(READY)
    log.chmod(0o644)
    write_record(shared / "host-state" / "qwen", server.pid, log)
    hosts = shared / "hosts.yaml"
    hosts.write_text(
        "hosts:\n  here:\n    local: true\n    services:\n      qwen:\n        engine: sglang\n"
        f"        log: {json.dumps(str(log))}\n        port: {server.port}\n"
        f"        match: {json.dumps(f'tui sim .*--port {server.port} ')}\n"
    )
    hosts.chmod(0o644)
    out = shared / "out"
    out.mkdir()
    os.chown(out, NOBODY, NOBODY)
    home = shared / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    env = {
        "PATH": os.pathsep.join([str(tools), str(REPO / "tui" / "sim"), "/usr/bin", "/bin"]),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "BABYSIT_HOST_STATE": str(shared / "host-state"),
        "BABYSIT_STATE": str(shared / "state"),
        "BABYSIT_SIM_STATE": str(sim_state),
        "PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]]),
    }
    python = nobody_python(env)
    if python is None:
        pytest.skip(f"nobody may run no python that imports this venv's babysit ({sys.executable})")
    env["BABYSIT_SIM_PYTHON"] = python

    result = as_nobody(
        env, python, "-m", "tui", "dump", "here/qwen", "--out", str(out), "--config", str(hosts)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    path = Path(lines[-1])
    assert path.parent == out
    assert path.stat().st_uid == NOBODY
    (denied,) = [line for line in lines if line.startswith("ptrace denied: ")]
    assert f"process {server.pid} belongs to user root and the agent runs as nobody" in denied
    assert "CAP_SYS_PTRACE" in denied
    assert any(
        line.startswith(f"process {server.pid} ") and "the kernel's view" in line for line in lines
    )
    text = path.read_text()
    assert "ptrace:   denied: " in text
    assert f"process {server.pid} (parent " in text
    assert "threads: " in text
    assert "py-spy: Permission Denied" in text
    assert "nvidia-smi" in text
    assert READY in text
    assert "Traceback" not in result.stdout + result.stderr

    again = as_nobody(
        env,
        python,
        "-m",
        "tui",
        "dump",
        "here/qwen",
        "--json",
        "--out",
        str(out),
        "--config",
        str(hosts),
    )
    assert again.returncode == 0, again.stdout + again.stderr
    document = json.loads(again.stdout)
    assert document["ptrace"]["allowed"] is False
    assert document["ptrace"]["cap_sys_ptrace"] is False
    assert "belongs to user root" in document["ptrace"]["why"]
    assert document["processes"][0]["how"] == "proc"
    assert Path(document["path"]).is_file()
