"""How SGLang writes a line: the timestamp and rank prefix, uvicorn's lines, tracebacks."""

from __future__ import annotations

import time

from tui.sim.access import access_text
from tui.sim.engine import Engine
from tui.sim.out import STDERR, STDOUT
from tui.sim.sglang import formats
from tui.sim.version import V, Version

_PY = {
    False: "/usr/local/lib/python3.10/dist-packages",
    True: "/usr/local/lib/python3.12/dist-packages",
}
#: what the main process says when the old path of the model info route is asked (0.5.6 on)
MODEL_INFO_DEPRECATED = (
    "Endpoint '/get_model_info' is deprecated and will be removed in a "
    "future version. Please use '/model_info' instead."
)


class SglangLines(Engine):
    """The line writers every part of :class:`tui.sim.sglang.engine.SGLang` uses.

    The parts (startup, batches, failures, metrics, routes) are mixins of this class;
    they read the state :class:`~tui.sim.sglang.engine.SGLang` sets up and call one
    another through ``self``.
    """

    v: Version
    log_ms: bool
    access_excluded: tuple[str, ...]

    def _stamp(self) -> str:
        now = time.time()
        text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        if self.log_ms:
            text += f".{int(now * 1000) % 1000:03d}"
        return text

    def _tag(self, rank: int) -> str:
        if self.v < V("0.4.7") or self.cfg.tp > 1:
            return f" TP{rank}"
        return ""

    def _other_format(self, message: str, *, scheduler: bool, pid: int) -> bool:
        """Write ``message`` in the ``--log-format`` chosen; False for SGLang's own format."""
        log_format = self.cfg.log_format
        if log_format == formats.DEFAULT:
            return False
        site = formats.site_of(message, scheduler=scheduler)
        self.host.out.line(formats.render(log_format, message, site, pid, time.time()), STDERR)
        return True

    def main(self, message: str) -> None:
        """A line from the main (tokenizer/HTTP) process: no rank tag."""
        if not self._other_format(message, scheduler=False, pid=self.host.pid):
            self.host.out.line(f"[{self._stamp()}] {message}", STDERR)

    def sched(self, message: str, rank: int = 0) -> None:
        """A line from scheduler ``rank``."""
        if not self._other_format(message, scheduler=True, pid=self.host.child_pid(rank)):
            self.host.out.line(f"[{self._stamp()}{self._tag(rank)}] {message}", STDERR)

    def every_rank(self, message: str) -> None:
        """A line each scheduler rank logs, TP0 first."""
        for rank in range(self.cfg.tp):
            self.sched(message, rank)

    def uvicorn(self, message: str, level: str = "INFO") -> None:
        prefix = f"{level}:".ljust(9)
        if self.v >= V("0.4.6"):
            self.host.out.line(f"[{self._stamp()}] {prefix} {message}", STDERR)
        else:
            self.host.out.line(f"{prefix} {message}", STDERR)

    def access(self, client: str, request_line: str, status: int) -> None:
        path = request_line.split(" ")[1] if " " in request_line else request_line
        if any(path.startswith(prefix) for prefix in self.access_excluded):
            return
        text = access_text(client, request_line, status)
        if self.v >= V("0.4.6"):
            self.host.out.line(f"[{self._stamp()}] INFO:     {text}", STDOUT)
        else:
            self.host.out.line(f"INFO:     {text}", STDOUT)

    def _py(self, path: str) -> str:
        return f"{_PY[self.v >= V('0.5.0')]}/{path}"

    def traceback(self, frames: list[tuple[str, int, str, str]], error: str) -> str:
        lines = ["Traceback (most recent call last):"]
        for path, line, func, code in frames:
            lines.append(f'  File "{self._py(path)}", line {line}, in {func}')
            lines.append(f"    {code}")
        lines.append(error)
        return "\n".join(lines) + "\n"
