"""How vLLM writes a line: the process tag, the logging prefix, raw writes and tracebacks."""

from __future__ import annotations

import time

from tui.sim.access import access_text
from tui.sim.engine import Engine
from tui.sim.out import STDERR, STDOUT
from tui.sim.version import V, Version
from tui.sim.vllm import formats

_PY = "/usr/local/lib/python3.12/dist-packages"


class VllmLines(Engine):
    """The line writers every part of :class:`tui.sim.vllm.engine.VLLM` uses.

    The parts (startup, stats, failures, metrics, routes) are mixins of this class;
    they read the state :class:`~tui.sim.vllm.engine.VLLM` sets up and call one
    another through ``self``.
    """

    v: Version
    sites: dict[str, tuple[str, int]]
    access_log: bool

    @property
    def v0(self) -> bool:
        return self.v < V("0.8.0")

    def _proc_tag(self, proc: str, rank: int) -> str:
        """``(Name pid=N) `` of the process that writes a line (names per reference §2.1)."""
        v = self.v
        pid = self.host.pid if rank == 0 else self.host.child_pid(rank)
        if proc == "api":
            name = "APIServer"
        elif proc == "worker" and self.cfg.tp > 1:
            if v < V("0.8.0"):
                name = "VllmWorkerProcess" if rank else ""
            elif v < V("0.10.1"):
                name = f"VllmWorker rank={rank}"
            else:
                name = f"Worker_TP{rank}"
        elif v < V("0.10.1"):
            name = "EngineCore_0"
        elif v < V("0.20.0"):
            name = "EngineCore_DP0"
        else:
            name = "EngineCore"
        return f"({name} pid={pid}) " if name else ""

    def raw_tag(self, proc: str, rank: int = 0) -> str:
        """Tag the stdout/stderr wrapper puts before any text the process writes."""
        v = self.v
        if v < V("0.8.0"):
            return self._proc_tag(proc, rank) if (proc == "worker" and rank) else ""
        if v >= V("0.31.0") or (proc == "api" and v < V("0.10.1")):
            return ""
        return self._proc_tag(proc, rank)

    def log_tag(self, proc: str, rank: int = 0) -> str:
        """Tag before a logging line (from ≥0.31 part of the format itself)."""
        if self.v >= V("0.31.0"):
            return self._proc_tag(proc, rank)
        return self.raw_tag(proc, rank)

    def log(
        self, key: str, message: str, proc: str = "api", level: str = "INFO", rank: int = 0
    ) -> None:
        """One record from call site ``key``; continuation lines re-prefixed after ``\\r\\n``
        (python-json-logger keeps them inside the message)."""
        file, line = self.sites[key]
        now = time.time()
        log_format = self.cfg.log_format
        if log_format == formats.JSON:
            tag = self._proc_tag(proc, rank)
            record = formats.json_record(
                now,
                level,
                formats.logger_name(file, v0=self.v0),
                process_name=(
                    tag[1:].split(" pid=", 1)[0] if tag and proc != "api" else "MainProcess"
                ),
                pid=self.host.pid if rank == 0 else self.host.child_pid(rank),
                message=message,
            )
            self.host.out.line(self.raw_tag(proc, rank) + record, STDOUT)
            return
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(now))
        site = f"{file}:{line}]" if self.v0 else f"[{file}:{line}]"
        if log_format == formats.COLOR:
            prefix = formats.coloured_prefix(self.log_tag(proc, rank), level, stamp, site)
        else:
            prefix = f"{self.log_tag(proc, rank)}{level} {stamp} {site} "
        self.host.out.line(prefix + message.replace("\n", "\r\n" + prefix), STDOUT)

    def raw(
        self,
        text: str,
        proc: str = "api",
        fd: int = STDERR,
        rank: int = 0,
        *,
        midline: bool = False,
    ) -> None:
        """Text written straight to stdout/stderr (tracebacks, tqdm, uvicorn). The wrapper
        tags each line's start: ``midline`` text continues a line already tagged (a tqdm
        update after the first, which ends in no newline)."""
        tag = self.raw_tag(proc, rank)
        lines = text.split("\n")
        trailing = text.endswith("\n")
        if trailing:
            lines = lines[:-1]
        body = "\n".join(
            item if (midline and index == 0) else tag + item for index, item in enumerate(lines)
        )
        self.host.out.write(body + ("\n" if trailing else ""), fd)

    def uvicorn(self, message: str, level: str = "INFO") -> None:
        self.raw(f"{(level + ':').ljust(9)} {message}\n")

    def access(self, client: str, request_line: str, status: int) -> None:
        if not self.access_log:
            return
        text = access_text(client, request_line, status)
        self.raw(f"INFO:     {text}\n", fd=STDOUT)

    def per_rank(self, key: str, message: str) -> None:
        """A line every rank logs (workers with tp > 1, else the engine core)."""
        if self.v0:
            for rank in range(self.cfg.tp):
                self.log(key, message, proc="worker", rank=rank)
        elif self.cfg.tp == 1:
            self.log(key, message, proc="engine")
        else:
            for rank in range(self.cfg.tp):
                self.log(key, message, proc="worker", rank=rank)

    def traceback(self, frames: list[tuple[str, int, str, str]], error: str) -> str:
        lines = ["Traceback (most recent call last):"]
        for path, line, func, code in frames:
            where = path if path.startswith("/") else f"{_PY}/{path}"
            lines.append(f'  File "{where}", line {line}, in {func}')
            lines.append(f"    {code}")
        lines.append(error)
        return "\n".join(lines)
