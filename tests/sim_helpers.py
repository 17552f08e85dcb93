"""Helpers for the simulator tests: start real sim processes, read their logs, talk HTTP.

Each sim runs as ``python -m tui sim ...`` with the repository root (found from
this file, never hard-coded) on PYTHONPATH, its stdout and stderr redirected to
one log file as a launcher would, and its own ``BABYSIT_SIM_STATE`` registry.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIM_DIR = ROOT / "tui" / "sim"
if str(ROOT) not in sys.path:  # unit tests import tui.sim directly; the package is not installed
    sys.path.insert(0, str(ROOT))

from support.ports import free_port  # noqa: E402
from support.wait import wait_until  # noqa: E402

__all__ = ["wait_until"]


def sim_env(state: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    env["BABYSIT_SIM_STATE"] = str(state)
    env["BABYSIT_SIM_PYTHON"] = sys.executable
    env.pop("BABYSIT_SIM_GPUS", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update(extra)
    return env


class Sim:
    """One simulated server process with its log file."""

    def __init__(
        self,
        tmp: Path,
        engine: str,
        *sim_args: str,
        server: tuple[str, ...] = (),
        port: int | None = None,
        env: dict[str, str] | None = None,
        name: str | None = None,
        state: Path | None = None,
    ) -> None:
        self.port = free_port() if port is None else port
        self.state = state or (tmp / "state")
        self.log_path = tmp / f"{name or engine}-{self.port}.log"
        self.argv = [
            sys.executable,
            "-m",
            "tui",
            "sim",
            "--engine",
            engine,
            "--port",
            str(self.port),
            *sim_args,
            "--",
            *server,
        ]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=env or sim_env(self.state),
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def raw(self) -> bytes:
        return self.log_path.read_bytes()

    def text(self) -> str:
        return self.raw().decode()

    def lines(self) -> list[str]:
        """Log lines split on ``\\n`` only (a ``\\r`` stays where the server wrote it)."""
        text = self.text()
        if text.endswith("\n"):
            text = text[:-1]
        return text.split("\n") if text else []

    def wait_for(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        regex = re.compile(pattern, re.MULTILINE)

        def found() -> re.Match[str] | None:
            match = regex.search(self.text())
            if match is None and self.proc.poll() is not None:
                raise AssertionError(
                    f"sim exited ({self.proc.returncode}) before {pattern!r}:\n"
                    + self.text()[-3000:]
                )
            return match

        return wait_until(found, timeout, repr(pattern))  # type: ignore[return-value]

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
        return http("GET", self.port, path, None, timeout)

    def post(self, path: str, payload: object, timeout: float = 60.0) -> tuple[int, bytes]:
        return http("POST", self.port, path, payload, timeout)

    def wait_ready(self, timeout: float = 20.0) -> None:
        wait_until(lambda: self._health() == 200, timeout, "/health 200", step=0.05)

    def _health(self) -> int:
        if self.proc.poll() is not None:
            raise AssertionError(f"sim exited ({self.proc.returncode}):\n" + self.text()[-3000:])
        return self.get("/health")[0]

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = 15.0) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        """Make sure the process is gone (test cleanup)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


def http(method: str, port: int, path: str, payload: object, timeout: float) -> tuple[int, bytes]:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        method=method,
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - loopback
            return int(answer.status), answer.read()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read()
    except (ConnectionError, urllib.error.URLError, TimeoutError):
        return 0, b""


def nvidia_smi(
    env: dict[str, str], *args: str, shim: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run the stand-in through the shim on PATH (like a test host) or ``python -m tui sim``."""
    if shim:
        run_env = dict(env, PATH=f"{SHIM_DIR}{os.pathsep}{env.get('PATH', '')}")
        argv = ["nvidia-smi", *args]
    else:
        run_env = env
        argv = [sys.executable, "-m", "tui", "sim", "nvidia-smi", *args]
    return subprocess.run(
        argv, env=run_env, cwd=ROOT, capture_output=True, text=True, timeout=30, check=False
    )


def alive_or_zombie(pid: int) -> str | None:
    """Process state letter from /proc, or None if the pid is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()[0]
