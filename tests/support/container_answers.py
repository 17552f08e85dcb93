"""Probe answers for a ``container:`` service, shaped as the agent writes them.

Times are given in the host's own clock (an hour east of UTC) on one day, so a test
reads ``14:02:11`` where the summary says it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone

from tui.core.assess import assess
from tui.core.runs import Assessment, ServiceProbe

#: The host's offset from UTC.
OFFSET = 3600
ZONE = timezone(timedelta(seconds=OFFSET))
CONTAINER_ID = "4f3c1a2b3c4d" + "5e6f7a8b9c0d" * 4 + "1a2b3c4d"
LOG_PATH = f"/var/lib/docker/containers/{CONTAINER_ID}/{CONTAINER_ID}-json.log"
IMAGE = "vllm/vllm-openai:v0.9"
SERVER_ARGV = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-8B"]
WRAPPER_ARGV = ["/bin/sh", "-c", "exec python3 -m vllm.entrypoints.openai.api_server"]


def at(clock: str) -> float:
    """Epoch seconds of ``HH:MM:SS`` on the host's clock."""
    hour, minute, second = (int(part) for part in clock.split(":"))
    return datetime(2026, 12, 1, hour, minute, second, tzinfo=ZONE).timestamp()


def container(**changes: object) -> dict[str, object]:
    """A running container's ``container`` object, with ``changes``."""
    facts: dict[str, object] = {
        "ref": "vllm-qwen",
        "runtime": "docker",
        "found": True,
        "problem": None,
        "id": CONTAINER_ID,
        "name": "vllm-qwen",
        "image": IMAGE,
        "status": "running",
        "running": True,
        "restarting": False,
        "paused": False,
        "oom_killed": False,
        "dead": False,
        "pid": 4242,
        "exit_code": 0,
        "error": "",
        "started_at": at("14:02:11"),
        "finished_at": None,
        "created": at("13:00:00"),
        "restart_count": 3,
        "restart_policy": "unless-stopped",
        "auto_remove": False,
        "log_driver": "json-file",
        "log_path": LOG_PATH,
        "log_opts": {"max-size": "10m", "max-file": "3"},
        "pids": [4242, 4250],
    }
    facts.update(changes)
    return facts


def stopped(**changes: object) -> dict[str, object]:
    """A container that exited, with ``changes``."""
    base: dict[str, object] = {
        "status": "exited",
        "running": False,
        "pid": 0,
        "exit_code": 137,
        "finished_at": at("14:05:02"),
        "pids": [],
    }
    return container(**{**base, **changes})


def process(pid: int, argv: list[str], *, files: list[dict[str, object]] | None = None) -> dict:
    return {
        "pid": pid,
        "ppid": 1,
        "start_ticks": pid * 10,
        "start_time": at("14:02:11"),
        "user": "root",
        "cmdline": argv,
        "cwd": "/",
        "sources": ["container"],
        "files": files or [],
    }


def run(ready: Mapping[str, object] | None = None, *, files: list | None = None) -> dict:
    """The container's run: ``sh -c`` at State.Pid, the server its cgroup's other pid."""
    entry = process(4242, WRAPPER_ARGV)
    entry["members"] = [process(4250, SERVER_ARGV, files=files)]
    entry["ready"] = dict(ready) if ready is not None else {"seen": False, "anchor": 5120}
    return entry


def json_log(**changes: object) -> dict[str, object]:
    log: dict[str, object] = {
        "path": LOG_PATH,
        "regular": True,
        "dev": 2049,
        "inode": 777,
        "size": 90_000,
        "mtime": at("14:04:00"),
        "format": "docker-json",
    }
    log.update(changes)
    return log


def probe(
    facts: Mapping[str, object] | None,
    *,
    runs: list[dict] | None = None,
    log: Mapping[str, object] | None = None,
    now: str = "14:05:11",
    health: int | None = None,
) -> ServiceProbe:
    top = {"boot_id": "boot-1", "now": at(now), "utc_offset": OFFSET, "uid": 0}
    entry: dict[str, object] = {
        "name": "qwen",
        "log": dict(log) if log is not None else json_log(),
        "runs": runs if runs is not None else [],
    }
    if facts is not None:
        entry["container"] = dict(facts)
    if health is not None:
        entry["health"] = health
        entry["health_asked"] = True
    return ServiceProbe.from_json("gpu1", "vllm", top, entry)


def verdict(facts: Mapping[str, object] | None, **options: object) -> Assessment:
    return assess(probe(facts, **options))  # type: ignore[arg-type]
