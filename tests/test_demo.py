"""`babysit demo`: the fleet of four engines shows its verdicts, and nothing it started outlives it.

Every test runs real processes: `babysit demo` itself (under a pseudo-terminal
for the TUI), its simulated servers and its load generator. Its pointer folder
($BABYSIT_DEMO_STATE) and its temporary folder ($TMPDIR) are the test's own, so
"nothing left behind" can be checked exactly: no recorded pid alive, and no
process whose command line, working directory or open files mention the folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.wait import wait_until

from tui.demo.stories import STORIES
from tui.procfs import start_ticks

BIN = Path(sys.executable).parent / "babysit"
BABYSIT = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "tui"]
EXPECTED = {story.name: story.expected.value for story in STORIES}


wait_for = wait_until  # the one wait helper, under the name this module's tests use


@pytest.fixture
def demo_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment for `babysit demo`: pointers in tmp_path, and a short temporary
    folder of its own (the screens show the demo's log paths whole only while they fit,
    and a test's tmp_path can be long). Teardown stops whatever a failed test left."""
    short = Path(tempfile.mkdtemp(prefix="bsdemo-"))
    env = dict(os.environ)
    env["BABYSIT_DEMO_STATE"] = str(tmp_path / "demo-state")
    env["TMPDIR"] = str(short)
    env["TERM"] = "xterm-256color"
    env.pop("NO_COLOR", None)
    # Textual takes COLUMNS and LINES over the terminal's own size; a test runner may set them.
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    yield env
    babysit("demo", "--stop", env=env)
    shutil.rmtree(short, ignore_errors=True)


def demo_folders(env: dict[str, str]) -> list[Path]:
    return sorted(Path(env["TMPDIR"]).glob("babysit-demo-*"))


def recorded(folder: Path) -> list[dict[str, int]]:
    try:
        data = json.loads((folder / "fleet.json").read_text())
    except (OSError, ValueError):
        return []
    return list(data["processes"])


def leftovers(folder: Path, processes: list[dict[str, int]]) -> list[str]:
    """Live processes the demo started or that use its folder (zombies are dead)."""
    found = []
    for p in processes:
        if start_ticks(p["pid"]) == p["start_ticks"]:
            found.append(f"recorded pid {p['pid']} ({p.get('name')})")
    text = str(folder)
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            if proc.info["status"] == psutil.STATUS_ZOMBIE or proc.pid == os.getpid():
                continue
            cmdline = " ".join(proc.info["cmdline"] or ())
            cwd = proc.cwd()
            files = [f.path for f in proc.open_files()]
            if text in cmdline or cwd.startswith(text) or any(f.startswith(text) for f in files):
                found.append(f"pid {proc.pid}: {cmdline}")
    return found


def babysit(*args: str, env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*BABYSIT, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def status(config: Path, env: dict[str, str]) -> dict[str, str]:
    done = babysit("status", "--json", "--config", str(config), env=env)
    return {s["service"]: s["verdict"] for s in json.loads(done.stdout)["services"]}


# --------------------------------------------------------------------------- --keep / --stop


def printed(text: str, heading: str) -> list[str]:
    """The command lines under ``heading`` in the text ``--keep`` prints (up to a blank)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading)) + 1
    block = []
    for line in lines[start:]:
        if not line.strip():
            break
        block.append(line.strip())
    return block


def typed(line: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    """``line`` as a user types it in a shell: the printed text as it is, from another
    folder, with nothing of babysit's on PATH nor in PYTHONPATH."""
    clean = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    clean["PATH"] = "/usr/bin:/bin"
    return subprocess.run(
        ["/bin/sh", "-c", line],
        cwd="/",
        env=clean,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def try_the_printed_commands(text: str, folder: Path, config: Path, env: dict[str, str]) -> None:
    """Every command ``--keep`` prints to ask the fleet works as printed, in a shell
    without babysit on PATH; the CLI sees the simulated GPUs and the seeded history."""
    status_line, tail_line, relaunch_line, canary_line = printed(text, "Ask it")
    launcher = shlex.split(status_line)[0]
    assert launcher == str(folder / "babysit")

    said = typed(status_line, env)
    assert said.returncode == 2, said.stderr  # some dead, stale or wedged
    for name in EXPECTED:
        assert f"lab/{name}" in said.stdout
    # the screen's GPUs: the demo's nvidia-smi stand-in answers the CLI too
    assert "orphans: 2 orphans hold" in said.stdout
    shown = said.stdout.split("lab/qwen-mtp", 1)[1].split("\nlab/", 1)[0]
    assert "gpus: gpu0 " in shown and " W / 700 W · util " in shown, shown
    as_json = typed(f"{status_line} --json", env)
    services = {s["service"]: s for s in json.loads(as_json.stdout)["services"]}
    readings = services["qwen-mtp"]["gpus"]["gpus"]
    assert [gpu["index"] for gpu in readings] == [0]
    assert readings[0]["power_draw"] > 0 and readings[0]["memory_used"] > 0
    # and the run history the demo seeded: the slow story's ETA
    assert services["gpu8-slow"]["ready"]["eta"] is not None

    tailed = typed(tail_line, env)
    assert tailed.returncode == 0, tailed.stderr
    follow = tailed.stderr.split("to follow what pid ")[1].split(": ", 1)[1].strip()
    assert shlex.split(follow)[0] == launcher
    followed = typed(f"{follow} -n 1", env)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.strip()  # a line of what the writer writes

    # the run that ran out of memory comes up when relaunched (launch: has the fix); that
    # run is babysit's, not the demo's, and `--stop` ends it too
    relaunched = typed(relaunch_line, env)
    assert relaunched.returncode == 0, relaunched.stderr
    assert status(config, env)["gpu4-oom"] == "live"

    canaried = typed(canary_line, env)
    assert canaried.returncode == 2, canaried.stderr  # the wedged one never answers
    assert "timed out" in canaried.stdout


@pytest.mark.slow
def test_keep_shows_every_verdict_and_stop_leaves_nothing(demo_env: dict[str, str]) -> None:
    kept = babysit("demo", "--keep", env=demo_env, timeout=60)
    assert kept.returncode == 0, kept.stderr
    config = Path(
        next(line.split()[-1] for line in kept.stdout.splitlines() if "hosts.yaml  " in line)
    )
    assert config.is_file()
    folder = config.parent
    processes = recorded(folder)
    assert {p["name"] for p in processes} == {*EXPECTED, "load"}

    seen: dict[str, str] = {}

    def settled() -> bool:
        seen.update(status(config, demo_env))
        return seen == EXPECTED

    wait_for(settled, 40, f"the verdicts {EXPECTED} (last seen {seen})", step=0.3)
    lines = [line.strip() for line in config.read_text().splitlines()]
    engines = {line.split()[-1] for line in lines if line.startswith("engine: ")}
    assert engines == {"sglang", "vllm", "llamacpp", "tgi"}

    # the load generator keeps the live servers busy: their logs grow
    log = folder / "logs" / "qwen-mtp.log"
    size = log.stat().st_size
    wait_for(lambda: log.stat().st_size > size, 10, "qwen-mtp's log to grow under load")

    try_the_printed_commands(kept.stdout, folder, config, demo_env)

    (stop_line,) = printed(kept.stdout, "Stop it")
    stopped = typed(stop_line, demo_env)
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped the fleet in {folder}" in stopped.stdout
    assert leftovers(folder, processes) == []
    assert not folder.exists()
    assert list(Path(demo_env["BABYSIT_DEMO_STATE"]).iterdir()) == []

    again = babysit("demo", "--stop", env=demo_env)
    assert again.returncode == 0
    assert "no demo fleet is running" in again.stdout


# --------------------------------------------------------------------------- the TUI


class Terminal:
    """`babysit demo` on a pseudo-terminal of 120x36; everything it draws is kept."""

    def __init__(self, env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
        self.master = master
        self.output = bytearray()
        self.proc = subprocess.Popen(
            [*BABYSIT, "demo"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk

    def wait_for(self, text: bytes, timeout: float = 20) -> None:
        wait_for(lambda: text in self.output, timeout, f"{text!r} on the screen")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.master)
        self._reader.join(5)


@pytest.fixture
def terminal(demo_env: dict[str, str]) -> Iterator[Terminal]:
    term = Terminal(demo_env)
    try:
        yield term
    finally:
        term.close()


def running_fleet(env: dict[str, str]) -> tuple[Path, list[dict[str, int]]]:
    """The folder of the one demo fleet and its recorded processes, once all are started."""
    folder = wait_for(lambda: demo_folders(env), 10, "the demo folder")[0]
    processes = wait_for(
        lambda: (p := recorded(folder)) and len(p) == len(STORIES) + 1 and p,
        10,
        "every process of the fleet recorded",
    )
    return folder, processes


@pytest.mark.integration
@pytest.mark.parametrize(
    ("how", "code"),
    [("q", 0), ("SIGINT", 128 + signal.SIGINT), ("SIGTERM", 128 + signal.SIGTERM)],
)
def test_tui_leaves_nothing_behind(
    terminal: Terminal, demo_env: dict[str, str], how: str, code: int
) -> None:
    folder, processes = running_fleet(demo_env)
    terminal.wait_for(b"LIVE")
    assert b"qwen-mtp" in terminal.output
    if how == "q":
        os.write(terminal.master, b"q")
    else:
        terminal.proc.send_signal(getattr(signal, how))
    assert terminal.proc.wait(20) == code
    if how == "q":  # and says how to keep the fleet for the command line, as babysit runs
        terminal.wait_for(f"the same servers: {shlex.join(BABYSIT)} demo --keep".encode())
    assert leftovers(folder, processes) == []
    assert not folder.exists()
    assert list(Path(demo_env["BABYSIT_DEMO_STATE"]).iterdir()) == []


@pytest.mark.integration
def test_sigkilled_babysit_takes_its_fleet_along(
    terminal: Terminal, demo_env: dict[str, str]
) -> None:
    """Even SIGKILL, which no cleanup can catch: each process the demo started gets
    SIGTERM when babysit dies, and `--stop` removes what is left on disk."""
    folder, processes = running_fleet(demo_env)
    terminal.wait_for(b"qwen-mtp")
    terminal.proc.kill()
    terminal.proc.wait(10)
    wait_for(lambda: not leftovers(folder, processes), 10, "the fleet to die with babysit")
    stopped = babysit("demo", "--stop", env=demo_env)
    assert f"stopped the fleet in {folder}" in stopped.stdout
    assert not folder.exists()


@pytest.mark.integration
def test_a_crash_in_the_tui_still_stops_the_fleet(
    demo_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.commands import demo

    monkeypatch.setenv("BABYSIT_DEMO_STATE", demo_env["BABYSIT_DEMO_STATE"])
    monkeypatch.setattr(tempfile, "tempdir", demo_env["TMPDIR"])
    seen: list[tuple[Path, list[dict[str, int]]]] = []

    def crashing(fleet, _stopper) -> int:
        seen.append((fleet.folder, recorded(fleet.folder)))
        raise RuntimeError("the app fell over")

    handlers = {s: signal.getsignal(s) for s in demo.STOP_SIGNALS}
    with pytest.raises(RuntimeError, match="fell over"):
        demo.watch(runner=crashing)
    assert {s: signal.getsignal(s) for s in demo.STOP_SIGNALS} == handlers
    ((folder, processes),) = seen
    assert len(processes) == len(STORIES) + 1
    assert leftovers(folder, processes) == []
    assert not folder.exists()


#: A demo whose TUI hangs once told to end (as Textual can, writing to a terminal that
#: went away): its event loop blocks, so the app's exit never runs.
HANGING = """
import asyncio, sys, time
from tui.commands import demo

class App:
    def exit(self, return_code=0):
        pass

def hanging(fleet, stopper):
    async def main():
        stopper.app = App()
        print(fleet.folder, flush=True)
        while True:
            time.sleep(0.1)  # the loop never gets to run the exit
    asyncio.run(main())

sys.exit(demo.watch(runner=hanging, stopper=demo.SignalStop(stuck_after=float(sys.argv[1]))))
"""


@pytest.mark.integration
def test_a_tui_that_hangs_when_told_to_end_still_stops_the_fleet(
    demo_env: dict[str, str],
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HANGING, "1.0"],
        env=demo_env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        folder = Path(proc.stdout.readline().strip())
        _, processes = running_fleet(demo_env)
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(30) == 128 + signal.SIGHUP
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert leftovers(folder, processes) == []
    assert not folder.exists()
