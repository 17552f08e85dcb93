"""vLLM's log records when ``--log-format`` is not the release default.

``color``: ``vllm/logging_utils/formatter.py``'s ``ColoredFormatter`` (0.31 on,
where the process tag is part of the format): the tag cyan
(``\\033[0;36m…\\033[0;0m``), the level coloured, ``%(asctime)s`` and
``[%(fileinfo)s:%(lineno)d]`` grey (``\\033[90m``). ``json``: python-json-logger
under a user logging config (``--logging-config`` / ``VLLM_LOGGING_CONFIG_PATH``)
with ``%(asctime)s %(levelname)s %(name)s %(processName)s %(process)d %(message)s``;
the config replaces the format, so the tag is gone from the record (the
stdout wrapper of 0.8.0-0.30 still writes it in front of the line).
"""

from __future__ import annotations

import json
import time

from tui.sim.version import V, Version

DEFAULT = "default"
COLOR = "color"
JSON = "json"
FORMATS = (DEFAULT, COLOR, JSON)
#: the first release whose format carries the process tag itself
COLOR_SINCE = V("0.31.0")
TAG_COLOR, TAG_RESET = "\033[0;36m", "\033[0;0m"
GREY, RESET = "\033[90m", "\033[0m"
LEVEL_COLORS = {
    "DEBUG": "\033[37m",
    "INFO": "\033[32m",
    "WARNING": "\033[33m",
    "ERROR": "\033[31m",
    "CRITICAL": "\033[35m",
}
#: logger name (``__name__``) of each file lines come from; V0's differ
LOGGERS = {
    "api_server.py": "vllm.entrypoints.openai.api_server",
    "utils.py": "vllm.entrypoints.utils",
    "startup.py": "vllm.entrypoints.openai.startup",
    "launcher.py": "vllm.entrypoints.launcher",
    "core.py": "vllm.v1.engine.core",
    "core_client.py": "vllm.v1.engine.core_client",
    "async_llm.py": "vllm.v1.engine.async_llm",
    "gpu_model_runner.py": "vllm.v1.worker.gpu_model_runner",
    "gpu_worker.py": "vllm.v1.worker.gpu_worker",
    "kv_cache_utils.py": "vllm.v1.core.kv_cache_utils",
    "loggers.py": "vllm.v1.metrics.loggers",
    "metrics.py": "vllm.v1.spec_decode.metrics",
    "multiproc_executor.py": "vllm.v1.executor.multiproc_executor",
    "llm_engine.py": "vllm.engine.llm_engine",
    "model_runner.py": "vllm.worker.model_runner",
    "gpu_executor.py": "vllm.executor.gpu_executor",
}
V0_LOGGERS = {"metrics.py": "vllm.engine.metrics"}


def unsupported(v: Version, name: str) -> str | None:
    """Why ``--log-format name`` is not simulated for release ``v``, or None."""
    if name == COLOR and v < COLOR_SINCE:
        return "the coloured formatter with the tag in the format is simulated from 0.31"
    return None


def logger_name(file: str, *, v0: bool) -> str:
    base = file.rsplit("/", 1)[-1]
    if v0 and base in V0_LOGGERS:
        return V0_LOGGERS[base]
    return LOGGERS.get(base, "vllm." + base.removesuffix(".py"))


def asctime(now: float) -> str:
    """logging's default ``%(asctime)s``: ``YYYY-MM-DD HH:MM:SS,mmm`` (local time)."""
    return (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"
    )


def json_record(
    now: float, level: str, name: str, *, process_name: str, pid: int, message: str
) -> str:
    """One python-json-logger line (``json.dumps`` with its default separators)."""
    return json.dumps(
        {
            "asctime": asctime(now),
            "levelname": level,
            "name": name,
            "processName": process_name,
            "process": pid,
            "message": message,
        }
    )


def coloured_prefix(tag: str, level: str, stamp: str, site: str) -> str:
    """``ColoredFormatter``'s text before the message (the tag is ``(Name pid=N) `` or empty)."""
    head = f"{TAG_COLOR}{tag.rstrip()}{TAG_RESET} " if tag else ""
    colour = LEVEL_COLORS.get(level, "")
    painted = f"{colour}{level}{RESET}" if colour else level
    return f"{head}{painted} {GREY}{stamp}{RESET} {GREY}{site}{RESET} "
