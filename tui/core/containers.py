"""A container as the probe saw it: ``docker inspect`` read on the host, in plain values.

A container service's run is (container id, ``State.StartedAt``,
``State.RestartCount``): a restart of the same container, which keeps its id and
its log file, is a new run. :class:`ContainerState` is read from the ``container``
object of a probe answer's service entry, which the agent (tui/agent/container.py)
fills from ``docker inspect`` run on the host, through the host's chain:

.. code-block:: text

    "container": {
      "ref": "vllm-qwen",          # the name or id hosts.yaml gives
      "runtime": "docker",         # or "podman"
      "found": true,               # false: no such container, or the runtime cannot be asked
      "absent": false,             # true: the runtime answered, and there is no such container
      "problem": null,             # why it could not be asked, in the runtime's words
                                   #   ("docker not found on the host", "Cannot connect to …");
                                   #   for an absent one, the runtime's "No such container"
      "id": "4f3c…",               # the full id
      "name": "vllm-qwen",         # without docker's leading slash
      "image": "vllm/vllm-openai:v0.9.1",
      "status": "running",         # created|running|restarting|paused|exited|removing|dead
      "running": true, "restarting": false, "paused": false,
      "oom_killed": false, "dead": false,
      "pid": 4242,                 # State.Pid: its first process, as a host pid (0: none)
      "exit_code": 0,
      "error": "",                 # State.Error
      "started_at": 1764620000.5,  # epoch seconds; null for "0001-01-01T00:00:00Z" (never)
      "finished_at": null,
      "created": 1764610000.0,
      "restart_count": 0,
      "restart_policy": "unless-stopped",   # HostConfig.RestartPolicy.Name ("" = no)
      "auto_remove": false,        # --rm
      "log_driver": "json-file",
      "log_path": "/var/lib/docker/containers/4f3c…/4f3c…-json.log",
      "log_opts": {"max-size": "10m", "max-file": "3"},
      "pids": [4242, 4250, 4251],  # the host pids of the container's cgroup (State.Pid first)
      "last_exit": null            # absent: the daemon's last ``die`` event of that name
                                   #   {id, exit_code, at, image} (a --rm container's exit)
    }

The service entry's ``log`` is then the facts of ``log_path`` (or of the service's
``log:`` when hosts.yaml gives one beside ``container:``), with ``format``
``"docker-json"`` for the json-file log, and ``runs`` holds at most the one run of
the container: its processes as any run's, with ``ready`` counted from this run's
``StartedAt`` (the first json line at or after it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from tui.core.answers import Fields

#: The log format of a container's json-file log (``LogState.format``).
DOCKER_JSON = "docker-json"
#: The log format of a plain log file.
PLAIN = "plain"

T = TypeVar("T", int, float)


def run_since(started: T | None, finished: T | None) -> T | None:
    """The earliest time a log record of a container's current run may carry, or None
    when every record is this run's (the container never finished a run; Docker's zero
    time, which is before 1970, counts as never). A record of an earlier run was read
    before that run finished, while the current run's first lines may be read a little
    before Docker stamps its StartedAt: so the bound is the last run's FinishedAt when it
    precedes StartedAt, else StartedAt. (The agent's ``run_bound`` in
    tui/agent/containerprobe.py applies this rule on the host: it imports nothing of
    babysit's.) Seconds or nanoseconds alike."""
    if finished is None or finished <= 0:  # type: ignore[operator]
        return None
    if started is None or finished <= started:  # type: ignore[operator]
        return finished
    return started


@dataclass(frozen=True)
class ContainerIdentity:
    """One run of a container: a restart of the same container is another run."""

    id: str
    started_at: float | None
    restart_count: int

    @property
    def short_id(self) -> str:
        return self.id[:12]

    @property
    def run_id(self) -> str:
        return run_id(self.id, self.started_at, self.restart_count)


#: How a container's StartedAt is written in its run id.
UTC_STAMP = "%Y-%m-%dT%H:%M:%SZ"


def run_id(container_id: str, started_at: float | None, restart_count: int) -> str:
    """A container's run as one word: ``<full id>@<StartedAt, UTC, to the
    microsecond>#<RestartCount>`` (a crash loop's first restarts come within a second)."""
    at = "never"
    if started_at is not None:
        whole = int(started_at)
        micros = round((started_at - whole) * 1_000_000) % 1_000_000
        at = time.strftime(UTC_STAMP, time.gmtime(whole)).replace("Z", f".{micros:06d}Z")
    return f"{container_id}@{at}#{restart_count}"


@dataclass(frozen=True)
class LastExit:
    """A removed container's last exit, from the daemon's events."""

    id: str
    exit_code: int | None
    at: float | None
    image: str = ""

    @classmethod
    def from_json(cls, data: Fields) -> LastExit:
        return cls(
            id=data.opt_string("id") or "",
            exit_code=data.opt_integer("exit_code"),
            at=data.opt_time("at"),
            image=data.opt_string("image") or "",
        )


@dataclass(frozen=True)
class ContainerState:
    """What ``docker inspect`` said of a service's container, at the probe's instant."""

    ref: str
    runtime: str = "docker"
    found: bool = False
    #: The runtime answered that it knows no such container (``problem`` holds its words).
    absent: bool = False
    problem: str | None = None
    id: str = ""
    name: str = ""
    image: str = ""
    status: str = ""
    running: bool = False
    restarting: bool = False
    paused: bool = False
    oom_killed: bool = False
    dead: bool = False
    pid: int = 0
    exit_code: int | None = None
    error: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    created: float | None = None
    restart_count: int = 0
    restart_policy: str = ""
    auto_remove: bool = False
    log_driver: str = ""
    log_path: str = ""
    log_opts: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    pids: tuple[int, ...] = ()
    #: Of an absent container: its last exit the daemon remembers (its ``die`` event).
    last_exit: LastExit | None = None

    @property
    def identity(self) -> ContainerIdentity | None:
        """This run of the container, or None when there is no container."""
        if not self.found or not self.id:
            return None
        return ContainerIdentity(self.id, self.started_at, self.restart_count)

    @property
    def short_id(self) -> str:
        return self.id[:12]

    @property
    def run_since(self) -> float | None:
        """The earliest time a record of this run may carry (see :func:`run_since`)."""
        return run_since(self.started_at, self.finished_at)

    @property
    def label(self) -> str:
        """The container in words: its name, or the name or id hosts.yaml gives."""
        return self.name or self.ref

    @property
    def writes_json_log(self) -> bool:
        """Whether the daemon writes this container's json-file log for a run now (it
        runs, paused or not)."""
        return self.found and self.running and self.log_driver in ("", "json-file")

    @classmethod
    def from_json(cls, data: Fields) -> ContainerState:
        """Raises :class:`~tui.core.answers.AnswerError` naming the field that is wrong."""
        opts = data.opt_child("log_opts")
        return cls(
            ref=data.string("ref"),
            runtime=data.opt_string("runtime") or "docker",
            found=data.flag("found"),
            absent=data.flag("absent"),
            problem=data.opt_string("problem"),
            id=data.opt_string("id") or "",
            name=data.opt_string("name") or "",
            image=data.opt_string("image") or "",
            status=data.opt_string("status") or "",
            running=data.flag("running"),
            restarting=data.flag("restarting"),
            paused=data.flag("paused"),
            oom_killed=data.flag("oom_killed"),
            dead=data.flag("dead"),
            pid=data.opt_integer("pid") or 0,
            exit_code=data.opt_integer("exit_code"),
            error=data.opt_string("error") or "",
            started_at=data.opt_time("started_at"),
            finished_at=data.opt_time("finished_at"),
            created=data.opt_time("created"),
            restart_count=data.opt_integer("restart_count") or 0,
            restart_policy=data.opt_string("restart_policy") or "",
            auto_remove=data.flag("auto_remove"),
            log_driver=data.opt_string("log_driver") or "",
            log_path=data.opt_string("log_path") or "",
            log_opts=MappingProxyType(
                {k: str(v) for k, v in opts.plain().items()} if opts is not None else {}
            ),
            pids=tuple(data.integers("pids")) if "pids" in data else (),
            last_exit=(
                LastExit.from_json(data.child("last_exit"))
                if data.opt_child("last_exit") is not None
                else None
            ),
        )

    def to_json(self, time: Callable[[float | None], object] = lambda ts: ts) -> dict[str, object]:
        """This container in ``babysit status --json`` (``container``); ``time`` writes its
        times (epoch seconds as they are, unless told otherwise)."""
        return {
            "ref": self.ref,
            "runtime": self.runtime,
            "found": self.found,
            "absent": self.absent,
            "problem": self.problem,
            "id": self.id or None,
            "name": self.name or None,
            "image": self.image or None,
            "status": self.status or None,
            "running": self.running,
            "restarting": self.restarting,
            "paused": self.paused,
            "pid": self.pid or None,
            "pids": list(self.pids),
            "exit_code": self.exit_code,
            "oom_killed": self.oom_killed,
            "error": self.error or None,
            "started_at": time(self.started_at),
            "finished_at": time(self.finished_at),
            "created": time(self.created),
            "restart_count": self.restart_count,
            "restart_policy": self.restart_policy or None,
            "auto_remove": self.auto_remove,
            "log_driver": self.log_driver or None,
            "log_path": self.log_path or None,
            "last_exit": None
            if self.last_exit is None
            else {
                "id": self.last_exit.id or None,
                "exit_code": self.last_exit.exit_code,
                "at": time(self.last_exit.at),
                "image": self.last_exit.image or None,
            },
        }
