"""Launch simulated inference servers the way people do: `cmd >> log 2>&1 &`.

Each server is a real `babysit sim` process; its stdout and stderr go to the
log file it was given, opened for appending, exactly as a shell redirect does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from support.ports import free_port
from support.wait import wait_until

__all__ = ["wait_until"]

REPO = Path(__file__).resolve().parents[2]


def sim_argv(
    engine: str,
    port: int,
    *,
    load: float = 0.3,
    scenario: str = "healthy",
    extra: tuple[str, ...] = (),
    version: str | None = None,
) -> list[str]:
    model = "Qwen/Qwen3-8B"
    return [
        sys.executable,
        "-m",
        "tui",
        "sim",
        "--engine",
        engine,
        *(("--engine-version", version) if version else ()),
        "--port",
        str(port),
        "--load-seconds",
        str(load),
        "--scenario",
        scenario,
        "--seed",
        "1",
        "--",
        "--model-path",
        model,
        "--port",
        str(port),
        *extra,
    ]


class Server:
    """A running sim whose output is appended to ``log``; ``extra`` are more server flags
    (after ``--model-path`` and ``--port``)."""

    def __init__(
        self,
        log: Path,
        engine: str = "sglang",
        *,
        port: int | None = None,
        load: float = 0.3,
        scenario: str = "healthy",
        state: Path | None = None,
        version: str | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.log = log
        self.port = port or free_port()
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO)
        if state is not None:
            env["BABYSIT_SIM_STATE"] = str(state)
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                sim_argv(
                    engine, self.port, load=load, scenario=scenario, extra=extra, version=version
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=REPO,
                env=env,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_for(self, text: str, timeout: float = 20.0) -> None:
        wait_until(
            lambda: text in self.log.read_text(errors="replace") if self.log.exists() else False,
            timeout,
            f"{text!r} in {self.log}",
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


#: A server argument that breaks naive quoting on the way to the host.
NASTY = 'it\'s "quoted" $HOME `id`\nsecond line ünï'


def service_yaml(
    log: Path,
    port: int,
    *,
    scenario: str = "healthy",
    load: float = 0.5,
    tp: int = 1,
    stop_grace: float | None = None,
    version: str | None = None,
) -> str:
    """The ``services:`` block (indented for a host entry) of one service ``qwen`` whose
    ``launch:`` starts a sim on ``port`` appending to ``log``."""
    command = [
        sys.executable,
        "-m",
        "tui",
        "sim",
        "--engine",
        "sglang",
        *(("--engine-version", version) if version else ()),
        "--port",
        str(port),
        "--load-seconds",
        str(load),
        "--scenario",
        scenario,
        "--seed",
        "1",
        "--",
        "--model-path",
        "Qwen/Qwen3-8B",
        "--served-model-name",
        NASTY,
        "--port",
        str(port),
        "--tp",
        str(tp),
    ]
    launch = {"cwd": str(REPO), "env": {"PYTHONPATH": str(REPO)}, "command": command}
    grace = f"      stop_grace: {stop_grace}\n" if stop_grace is not None else ""
    return (
        "  services:\n    qwen:\n"
        f"      engine: sglang\n      log: {json.dumps(str(log))}\n      port: {port}\n"
        f"      match: {json.dumps(f'tui sim .*--port {port} ')}\n"
        f"{grace}"
        f"      launch: {json.dumps(launch)}\n"
    )


class VllmLoad:
    """Completions sent to a vLLM sim, one after another on each of ``streams`` threads,
    until :meth:`stop`: its generation counter keeps growing while a test reads it."""

    def __init__(self, port: int, streams: int = 4) -> None:
        self.port = port
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(streams)
        self._runs = [self._pool.submit(self._stream) for _ in range(streams)]

    def _stream(self) -> None:
        body = json.dumps({"prompt": "hello", "max_tokens": 300}).encode()
        while not self._stop.is_set():
            request = urllib.request.Request(
                f"http://127.0.0.1:{self.port}/v1/completions",
                data=body,
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - loopback
                answer.read()

    def generated(self) -> float:
        """vllm:generation_tokens_total on the server's /metrics page now."""
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            text = answer.read().decode()
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("vllm:generation_tokens_total")
        )

    def stop(self) -> None:
        self._stop.set()
        for run in self._runs:
            run.result(timeout=60)
        self._pool.shutdown()
