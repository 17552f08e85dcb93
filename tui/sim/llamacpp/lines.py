"""How llama-server writes a line, per shape.

2025 and 2026 builds log through ``common/log.cpp``: every line goes to stderr,
``--log-prefix`` puts the level letter (``I ``/``W ``/``E ``/``D ``) in front and
``--log-timestamps`` (with the prefix) the time since the process started,
``"%d.%02d.%03d.%03d "`` (minutes, seconds, milliseconds, microseconds). The server's
macros add ``"srv  %12.*s: "`` and ``"slot %12.*s: id %2d | task %d | "`` (the function
name cut or padded to 12). A message that holds newlines is one log call: only its first
line carries the prefix. llama's own chatter (``llama_model_loader: ...``) goes through
the same logger. 2024 builds print the server's lines on stdout as
``"%4s [%24s] %s"`` (level, function, message) followed by `` |`` and ``key=value``
pairs, ``tid`` and ``timestamp`` first, values as JSON; llama's chatter goes raw to
stderr.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from tui.sim import gpus as gpu_registry
from tui.sim.engine import Engine
from tui.sim.out import STDERR, STDOUT
from tui.sim.version import Version

#: width the server macros give the function name
FUNC_WIDTH = 12
#: width of the function name in 2024's text log lines
OLD_FUNC_WIDTH = 24
#: 2024's level words, by the letter the later logger prints
OLD_LEVELS = {"I": "INFO", "W": "WARN", "E": "ERR", "D": "DEBUG"}
MICROS = 1_000_000


def func(name: str) -> str:
    """``%12.*s`` of ``__func__``: cut to 12 characters, right-aligned."""
    return name[:FUNC_WIDTH].rjust(FUNC_WIDTH)


def process_started_monotonic() -> float:
    """This process's start on the monotonic clock (from /proc), or now when unknown."""
    now = time.monotonic()
    ticks = gpu_registry.proc_start_ticks(os.getpid())
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        hertz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    if ticks is None or hertz <= 0:
        return now
    age = max(uptime - ticks / hertz, 0.0)
    return now - age


def elapsed_stamp(seconds: float) -> str:
    """common/log.cpp's ``"%d.%02d.%03d.%03d"`` of ``seconds`` since start."""
    micros = max(int(seconds * MICROS), 0)
    return (
        f"{micros // MICROS // 60}.{micros // MICROS % 60:02d}."
        f"{micros // 1000 % 1000:03d}.{micros % 1000:03d}"
    )


class LlamaLines(Engine):
    """The line writers every part of :class:`tui.sim.llamacpp.engine.LlamaCpp` uses."""

    v: Version
    shape: str
    log_prefix: bool
    log_timestamps: bool
    started: float
    tid: str
    log_lock: threading.Lock

    # -- the logger of 2025 and 2026 builds -----------------------------------------------
    def _prefix(self, level: str) -> str:
        if not self.log_prefix:
            return ""
        stamp = ""
        if self.log_timestamps:
            stamp = elapsed_stamp(time.monotonic() - self.started) + " "
        return f"{stamp}{level} "

    def log(self, message: str, level: str = "I") -> None:
        """One log call: the prefix, then ``message`` (newlines inside stay unprefixed).

        The stamp is taken and the line written under one lock, so stamps never go
        backwards whichever thread logs (llama.cpp stamps inside its logger's lock).
        """
        text = message if message.endswith("\n") else message + "\n"
        with self.log_lock:
            self.host.out.write(self._prefix(level) + text, STDERR)

    def cont(self, text: str) -> None:
        """``LOG_CONT``: text with no prefix and no newline of its own (the loading dots)."""
        self.host.out.write(text, STDERR)

    def srv(self, function: str, message: str, level: str = "I") -> None:
        """``SRV_INF`` and friends."""
        self.log(f"srv  {func(function)}: {message}", level)

    def slot(self, function: str, slot_id: int, task: int, message: str, level: str = "I") -> None:
        """``SLT_INF`` and friends."""
        self.log(f"slot {func(function)}: id {slot_id:2d} | task {task} | {message}", level)

    # -- the server log of 2024 builds ----------------------------------------------------
    def old(self, function: str, message: str, level: str = "I", **extra: object) -> None:
        """``LOG_INFO(message, {extra})`` of a 2024 build, in its text format, on stdout."""
        head = f"{OLD_LEVELS[level]:>4} [{function:>{OLD_FUNC_WIDTH}}] {message} |"
        fields = {"tid": self.tid, "timestamp": int(time.time()), **extra}
        tail = "".join(
            f" {key}={json.dumps(value, ensure_ascii=False)}" for key, value in fields.items()
        )
        self.host.out.line(head + tail, STDOUT)

    # -- either --------------------------------------------------------------------------
    def llama(self, message: str, level: str = "I") -> None:
        """A line of llama's own chatter (model loader, context, backends)."""
        if self.shape == "2024":
            self.host.out.line(message, STDERR)
        else:
            self.log(message, level)

    def access(self, client: str, request_line: str, status: int) -> None:
        """``log_server_request``: one line per answered request."""
        method, _, rest = request_line.partition(" ")
        path = rest.rsplit(" ", 1)[0] if " " in rest else rest
        address, _, port = client.rpartition(":")
        if path == "/v1/health":
            return
        if self.shape == "2024":
            self.old(
                "log_server_request",
                "request",
                remote_addr=address,
                remote_port=int(port) if port.isdigit() else 0,
                status=status,
                method=method,
                path=path.split("?", 1)[0],
                params={},
            )
        else:
            self.srv("log_server_request", f"request: {method} {path} {address} {status}")
