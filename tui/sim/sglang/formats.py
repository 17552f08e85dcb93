"""SGLang's log records when ``--log-format`` is not the release default.

SGLang's own handler prints ``[%Y-%m-%d %H:%M:%S{ TPn}] message``. When it runs
inside another program's logging setup, or under ``SGLANG_LOGGING_CONFIG_PATH``
(a user dictConfig), the same messages come out in that program's format:

- ``plain``: ``YYYY-MM-DD HH:MM:SS LEVEL PID [file.py:N] message``
- ``stdlib``: ``%(asctime)s [%(levelname)s] %(name)s: message`` (``asctime`` with ``,mmm``)
- ``json``: python-json-logger, ``%(asctime)s %(levelname)s %(name)s %(process)d %(message)s``

The body is the same in every format; uvicorn's lines, tqdm and raw tracebacks
are written by their own handlers and keep their shape.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

DEFAULT = "default"
PLAIN = "plain"
STDLIB = "stdlib"
JSON = "json"
FORMATS = (DEFAULT, PLAIN, STDLIB, JSON)


@dataclass(frozen=True)
class Site:
    """Where a record is logged from: its file, line, logger and level."""

    file: str
    line: int
    logger: str
    level: str = "INFO"


_SCHEDULER = Site("scheduler.py", 1021, "sglang.srt.managers.scheduler")
_MAIN = Site("http_server.py", 1151, "sglang.srt.entrypoints.http_server")
#: message head -> site; the first match wins, scheduler lines fall back to scheduler.py
SITES: tuple[tuple[str, Site], ...] = (
    (
        "Decode batch",
        Site("scheduler_metrics_mixin.py", 236, "sglang.srt.managers.scheduler_metrics_mixin"),
    ),
    (
        "Prefill batch",
        Site("scheduler_metrics_mixin.py", 141, "sglang.srt.managers.scheduler_metrics_mixin"),
    ),
    (
        "Init torch distributed",
        Site("model_runner.py", 606, "sglang.srt.model_executor.model_runner"),
    ),
    ("Load weight", Site("model_runner.py", 728, "sglang.srt.model_executor.model_runner")),
    ("KV Cache is allocated", Site("memory_pool.py", 562, "sglang.srt.mem_cache.memory_pool")),
    ("Memory pool end", Site("model_runner.py", 1655, "sglang.srt.model_executor.model_runner")),
    (
        "Capture cuda graph",
        Site("cuda_graph_runner.py", 383, "sglang.srt.model_executor.cuda_graph_runner"),
    ),
    (
        "Scheduler hit an exception",
        Site("scheduler.py", 2739, "sglang.srt.managers.scheduler", "ERROR"),
    ),
    ("server_args=", Site("server_args.py", 2210, "sglang.srt.server_args")),
    (
        "SIGQUIT received",
        Site("http_server.py", 1336, "sglang.srt.entrypoints.http_server", "ERROR"),
    ),
    ("Received sigquit", Site("engine.py", 698, "sglang.srt.entrypoints.engine", "ERROR")),
    ("Rank 0 scheduler is dead", Site("engine.py", 822, "sglang.srt.entrypoints.engine", "ERROR")),
    ("Exit code:", Site("engine.py", 825, "sglang.srt.entrypoints.engine", "ERROR")),
    ("Subprocess ", Site("watchdog.py", 73, "sglang.srt.utils.watchdog", "ERROR")),
    (
        "SIGTERM received",
        Site("http_server.py", 1330, "sglang.srt.entrypoints.http_server", "WARNING"),
    ),
    (
        "Endpoint '/get_model_info' is deprecated",
        Site("http_server.py", 421, "sglang.srt.entrypoints.http_server", "WARNING"),
    ),
)


def site_of(message: str, *, scheduler: bool) -> Site:
    for head, site in SITES:
        if message.startswith(head):
            return site
    return _SCHEDULER if scheduler else _MAIN


def render(log_format: str, message: str, site: Site, pid: int, now: float) -> str:
    """The record in ``log_format`` (not ``default``)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    if log_format == PLAIN:
        return f"{stamp} {site.level} {pid} [{site.file}:{site.line}] {message}"
    asctime = f"{stamp},{int(now * 1000) % 1000:03d}"
    if log_format == STDLIB:
        return f"{asctime} [{site.level}] {site.logger}: {message}"
    record = {
        "asctime": asctime,
        "levelname": site.level,
        "name": site.logger,
        "process": pid,
        "message": message,
    }
    return json.dumps(record)
