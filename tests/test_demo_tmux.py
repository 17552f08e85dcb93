"""`babysit demo` in a real terminal: tmux, the way a user in tmux sees it.

The test starts its own tmux server (a private socket, no user config), runs
`babysit demo` in a 120x36 window, reads the screen with ``capture-pane``,
types with ``send-keys``, and checks that after ``q`` babysit exited with 0
and nothing it started is left.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from test_demo import BABYSIT, babysit, demo_env, leftovers, printed, running_fleet, typed, wait_for

pytestmark = [
    pytest.mark.skipif(
        shutil.which("tmux") is None,
        reason="tmux is not installed (Debian: apt-get install tmux); this test drives a real one",
    ),
]

__all__ = ["demo_env"]  # a fixture this module uses


class Tmux:
    """A private tmux server (its socket in the test's folder) with one session running
    ``command``.

    A shell runs the command and prints its exit status: tmux itself sometimes
    leaves a dead pane's process unreaped (``#{pane_dead_status}`` stays empty).
    """

    def __init__(
        self,
        command: list[str],
        env: dict[str, str],
        socket: Path,
        size: tuple[int, int] = (120, 36),
    ) -> None:
        self.socket = str(socket)
        self.session = f"babysit-demo-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.env = env
        columns, rows = size
        self.run(
            "new-session", "-d", "-s", self.session, "-x", str(columns), "-y", str(rows),
            f'{shlex.join(command)}; echo "exited with $?"; sleep 600',
        )  # fmt: skip

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", self.socket, "-f", os.devnull, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )

    def screen(self, *, styles: bool = False) -> str:
        """The pane's text (``styles``: with its SGR escapes, which say what is focused)."""
        return self.run(
            "capture-pane", "-p", *(["-e"] if styles else []), "-t", self.session
        ).stdout

    def wait_for_text(self, text: str, timeout: float = 20) -> str:
        shown: list[str] = [""]

        def visible() -> bool:
            shown[0] = self.screen()
            return text in shown[0]

        try:
            wait_for(visible, timeout, f"{text!r} on the screen", step=0.1)
        except AssertionError as error:
            raise AssertionError(f"{error}; the screen:\n{shown[0]}{self.stacks()}") from None
        return shown[0]

    def wait_until(self, check: Callable[[str], bool], what: str, timeout: float = 20) -> str:
        """The screen once ``check`` holds of its text."""
        shown: list[str] = [""]

        def holds() -> bool:
            shown[0] = self.screen()
            return check(shown[0])

        try:
            wait_for(holds, timeout, what, step=0.1)
        except AssertionError as error:
            raise AssertionError(f"{error}; the screen:\n{shown[0]}{self.stacks()}") from None
        return shown[0]

    def stacks(self) -> str:
        """What babysit's own processes in the pane are doing (py-spy's dump of each
        thread), for a wait that timed out: a screen that stopped changing says only
        that it did. The simulated servers and the load on them are left out."""
        pane = self.run("display-message", "-p", "-t", self.session, "#{pane_pid}").stdout
        try:
            shell = psutil.Process(int(pane.strip()))
            descendants = shell.children(recursive=True)
        except (ValueError, psutil.Error):
            return ""
        dumps = []
        for process in descendants:
            try:
                cmdline = process.cmdline()
            except psutil.Error:
                continue
            if "python" not in " ".join(cmdline[:1]) or {"sim", "tui.demo.load"} & set(cmdline):
                continue
            dump = subprocess.run(
                [str(Path(sys.executable).parent / "py-spy"), "dump", "--pid", str(process.pid)],
                capture_output=True, text=True, timeout=20, check=False,
            )  # fmt: skip
            dumps.append(f"\n--- {shlex.join(cmdline)}\n{dump.stdout}{dump.stderr}")
        return "".join(dumps)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def kill(self) -> None:
        self.run("kill-server")


@pytest.fixture
def tmux(demo_env: dict[str, str], tmp_path: Path) -> Iterator[Tmux]:
    server = Tmux([*BABYSIT, "demo"], demo_env, tmp_path / "tmux.sock")
    try:
        yield server
    finally:
        server.kill()


def last(text: str) -> str:
    """The screen's last line (the footer)."""
    lines = text.rstrip("\n").splitlines()
    return lines[-1] if lines else ""


def open_row(tmux: Tmux, name: str) -> None:
    """Filter the fleet to ``name`` and open its host screen."""
    tmux.keys("/")
    tmux.wait_for_text("show rows whose name")
    tmux.keys("-l", name)
    tmux.keys("Enter")
    tmux.wait_for_text("1 shown")

    def opened() -> bool:
        if f"lab (local) · {name}" in tmux.screen():
            return True
        tmux.keys("Enter")  # a busy machine gives the table its focus back late
        return False

    wait_for(opened, 20, f"{name}'s host screen", step=0.5)


@pytest.mark.integration
def test_demo_in_an_80x24_pane_reads_and_every_button_is_reachable(
    demo_env: dict[str, str], tmp_path: Path
) -> None:
    """The most common tmux split: the fleet first with ? and q; a host screen with its
    banner, log lines and ? and q; the relaunch modal's buttons on screen, Tab moving
    between them, Esc closing it with nothing done."""
    tmux = Tmux([*BABYSIT, "demo"], demo_env, tmp_path / "tmux.sock", size=(80, 24))
    try:
        folder, processes = running_fleet(demo_env)
        # a busy machine paints a screen in parts: each check waits for the whole of it
        screen = tmux.wait_until(
            lambda text: "? help" in last(text) and "q quit" in last(text), "the fleet's footer"
        )
        assert screen.splitlines()[0].lstrip().startswith("babysit · demo")

        open_row(tmux, "gpu2-dead")

        def host_screen(text: str) -> bool:
            lines = text.rstrip("\n").splitlines()
            at = [i for i, line in enumerate(lines) if "gpu2-dead.log" in line]
            shown = [line for line in lines[at[0] + 1 : -1] if line.strip(" │╰─╯")] if at else []
            return (
                any("✖ DEAD" in line for line in lines[1:4])  # the banner, on top
                and len(shown) >= 3  # the log pane keeps lines at 80x24
                and "? help" in last(text)
                and "q quit" in last(text)
            )

        tmux.wait_until(host_screen, "the banner, log lines, ? and q at 80x24")

        tmux.keys("r")
        screen = tmux.wait_for_text("Cancel")
        assert "Relaunch" in screen
        buttons = next(i for i, line in enumerate(screen.splitlines()) if "Cancel" in line)
        before = tmux.screen(styles=True).splitlines()[buttons]
        tmux.keys("Tab")
        wait_for(
            lambda: tmux.screen(styles=True).splitlines()[buttons] != before,
            10,
            "Tab to move the focus between the modal's buttons",
            step=0.1,
        )
        tmux.keys("Escape")
        wait_for(lambda: "Cancel" not in tmux.screen(), 10, "the modal closed", step=0.1)
        assert "relaunching" not in tmux.screen()

        def in_the_fleet() -> bool:
            if "babysit · demo" in tmux.screen():
                return True
            tmux.keys("Escape")  # until the host screen has its focus back from the modal
            return False

        wait_for(in_the_fleet, 20, "Esc to come back to the fleet", step=0.5)
        tmux.keys("q")
        assert "exited with 0" in tmux.wait_for_text("exited with", timeout=15)
        assert leftovers(folder, processes) == []
    finally:
        tmux.kill()


@pytest.mark.integration
def test_demo_in_tmux(tmux: Tmux, demo_env: dict[str, str]) -> None:
    folder, processes = running_fleet(demo_env)

    # The fleet view first, one row per service; the whole screen, footer included (a
    # busy machine paints it in parts).
    tmux.wait_for_text("q quit")
    screen = tmux.wait_for_text("babysit · demo · 1 host · 10 services")
    lines = screen.rstrip("\n").splitlines()
    assert lines[0].lstrip().startswith("babysit · demo · 1 host · 10 services")
    assert "q quit" in lines[-1]
    wait_for(
        lambda: any(
            "lab/qwen-mtp" in line and "LIVE" in line for line in tmux.screen().splitlines()
        ),
        20,
        "qwen-mtp's row LIVE",
        step=0.1,
    )

    # / filters the rows; Enter opens the one left: its host screen
    tmux.keys("/")
    tmux.wait_for_text("show rows whose name")
    tmux.keys("-l", "qwen-mtp")
    tmux.keys("Enter")  # the filter is set, the table has the keys again
    tmux.wait_for_text("1 shown for 'qwen-mtp'")

    def opened() -> bool:
        # Enter again until the table has the focus back (a busy machine moves it late;
        # an Enter the filter gets only sets it again)
        if "babysit · lab (local) · qwen-mtp" in tmux.screen():
            return True
        tmux.keys("Enter")
        return False

    wait_for(opened, 20, "qwen-mtp's host screen", step=0.5)
    tmux.wait_for_text("ready")
    screen = tmux.wait_for_text("/ search")
    assert f"{folder}/logs/qwen-mtp.log" in screen

    tmux.keys("/")
    tmux.wait_for_text("find in the log")
    tmux.keys("-l", "fired up")
    tmux.keys("Enter")
    screen = tmux.wait_for_text("/fired up (")
    assert "no matches" not in screen
    assert "fired up and ready to roll" in screen

    # Esc clears the search, then comes back to the fleet, still filtered to the row
    tmux.keys("Escape")
    wait_for(lambda: "/fired up (" not in tmux.screen(), 10, "the search cleared", step=0.1)
    tmux.keys("Escape")
    screen = tmux.wait_for_text("babysit · demo")
    assert "lab/qwen-mtp" in screen and "lab/gpu2-dead" not in screen

    tmux.keys("q")
    screen = tmux.wait_for_text("exited with", timeout=15)
    assert "exited with 0" in screen
    assert leftovers(folder, processes) == []
    assert not Path(folder).exists()


@pytest.mark.slow
def test_a_kept_fleets_watch_commands_open_as_printed(
    demo_env: dict[str, str], tmp_path: Path
) -> None:
    """`demo --keep` prints two commands to watch the fleet: each, typed as printed in a
    shell without babysit on PATH, opens the screen it says (the fleet view, then one
    service's host screen, whose Esc shows the fleet)."""
    kept = babysit("demo", "--keep", env=demo_env, timeout=60)
    assert kept.returncode == 0, kept.stderr
    fleet_line, service_line = printed(kept.stdout, "Watch it")
    env = {k: v for k, v in demo_env.items() if k != "PYTHONPATH"}
    env["PATH"] = "/usr/bin:/bin"
    for line, first in (
        (fleet_line, "babysit · all hosts · 1 host · 10 services"),
        (service_line, "babysit · lab (local) · qwen-mtp"),
    ):
        server = Tmux(shlex.split(line), env, tmp_path / f"tmux-{len(first)}.sock")
        try:
            server.wait_for_text(first)
            if line == service_line:
                server.wait_for_text("q quit")
                server.keys("Escape")
                server.wait_for_text("babysit · lab · 1 host · 10 services")
            server.keys("q")
            assert "exited with 0" in server.wait_for_text("exited with", timeout=15)
        finally:
            server.kill()
    (stop_line,) = printed(kept.stdout, "Stop it")
    stopped = typed(stop_line, demo_env)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped the fleet" in stopped.stdout
