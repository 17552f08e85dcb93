"""What the probe saw of a service on its host, and the verdict on it.

A run's identity is (boot id, pid, start time) — never a pid alone, never a
name. The values here are read from the probe's answer; the verdict
(:class:`Assessment`) is decided by :func:`tui.core.assess.assess`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui.core.answers import AnswerError, Fields, read
from tui.core.containers import DOCKER_JSON, PLAIN, ContainerState
from tui.core.phases import PhaseMark, StartupRecord
from tui.core.secrets import redact_argv
from tui.core.serving import Clients, Wedged
from tui.core.verdicts import Verdict, worst_exit_status

if TYPE_CHECKING:
    from tui.core.cause import Cause


@dataclass(frozen=True)
class OpenFile:
    fd: int
    path: str
    dev: int
    inode: int
    deleted: bool
    write: bool
    #: The agent found this file to be the log (same device and inode as the file at
    #: the path) or its deleted former self (see LogFile in tui/agent/candidates.py).
    at_log: bool = False

    @classmethod
    def from_json(cls, data: Fields) -> OpenFile:
        return cls(
            fd=data.integer("fd"),
            path=data.string("path"),
            dev=data.integer("dev"),
            inode=data.integer("inode"),
            deleted=data.flag("deleted"),
            write=data.flag("write"),
            at_log=data.flag("at_log"),
        )


@dataclass(frozen=True)
class Process:
    """One process as the probe saw it. ``files`` is None when we may not read them."""

    pid: int
    ppid: int
    start_ticks: int
    start_time: float
    user: str | None
    cmdline: tuple[str, ...]
    cwd: str | None
    sources: tuple[str, ...]
    files: tuple[OpenFile, ...] | None

    @classmethod
    def from_json(cls, data: Fields) -> Process:
        # None: the probe may not read this process's files (not: it has none).
        files = None if data.data.get("files") is None else data.children("files")
        return cls(
            pid=data.integer("pid"),
            ppid=data.opt_integer("ppid") or 0,
            start_ticks=data.integer("start_ticks"),
            start_time=data.time("start_time"),
            user=data.opt_string("user"),
            # A secret's value (--api-key sk-…) never enters babysit's data: only its digest.
            cmdline=redact_argv(data.strings("cmdline")),
            cwd=data.opt_string("cwd"),
            sources=data.strings("sources"),
            files=None if files is None else tuple(OpenFile.from_json(f) for f in files),
        )


@dataclass(frozen=True)
class Ready:
    """Readiness of one run, counted only in bytes after its anchor.

    ``seen`` is None when it cannot be known (then ``source`` says why). ``cut``: no
    ready line, but the log begins inside this run, so it may have lost it.
    """

    seen: bool | None
    source: str
    anchor: int | None = None
    at: float | None = None
    offset: int | None = None
    line: str | None = None
    by_http: bool = False
    cut: bool = False
    #: The first line of each startup phase past the anchor, in log order (the agent's
    #: ``phases``); the ready line ends the last one.
    phases: tuple[PhaseMark, ...] = ()

    @classmethod
    def from_json(cls, data: Fields | None) -> Ready:
        if data is None or not data.data:
            return cls(seen=None, source="the run does not write the log")
        return cls(
            seen=data.opt_flag("seen"),
            source=data.opt_string("source") or "",
            anchor=data.opt_integer("anchor"),
            at=data.opt_time("at"),
            offset=data.opt_integer("offset"),
            line=data.opt_string("line"),
            cut=data.flag("cut"),
            phases=tuple(PhaseMark.from_json(p) for p in data.children("phases")),
        )


@dataclass(frozen=True)
class Run:
    """A candidate run: a root process and everything below it."""

    root: Process
    members: tuple[Process, ...]
    ready: Ready | None
    #: The client connections open to the run's serving port (None: not asked, or
    #: the run listens on no port the probe knows).
    clients: Clients | None = None

    @property
    def processes(self) -> tuple[Process, ...]:
        return (self.root, *self.members)

    @property
    def pids(self) -> tuple[int, ...]:
        return tuple(p.pid for p in self.processes)

    def written(self) -> list[OpenFile]:
        """The log (current or deleted) as files this run has open for writing."""
        return [f for p in self.processes for f in (p.files or ()) if f.write and f.at_log]

    def writes(self, dev: int, inode: int) -> bool:
        return any(
            f.write and (f.dev, f.inode) == (dev, inode)
            for p in self.processes
            for f in (p.files or ())
        )


@dataclass(frozen=True)
class LogState:
    path: str
    exists: bool
    dev: int | None = None
    inode: int | None = None
    size: int | None = None
    mtime: float | None = None
    first_ts: float | None = None
    last_ts: float | None = None
    #: Why the file at the path cannot be read, when the host says (not a regular file,
    #: permission denied): in plain words.
    problem: str | None = None
    #: How its lines are written: ``plain``, or ``docker-json`` (a container's json-file
    #: log: one JSON record per line, see tui/core/containers.py).
    format: str = PLAIN

    @classmethod
    def from_json(cls, data: Fields) -> LogState:
        regular = data.flag("regular")
        return cls(
            path=data.string("path"),
            exists=regular,
            dev=data.opt_integer("dev") if regular else None,
            inode=data.opt_integer("inode") if regular else None,
            size=data.opt_integer("size") if regular else None,
            mtime=data.opt_time("mtime") if regular else None,
            first_ts=data.opt_time("first_ts"),
            last_ts=data.opt_time("last_ts"),
            problem=data.opt_string("problem"),
            format=data.opt_string("format") or PLAIN,
        )


@dataclass(frozen=True)
class ServiceProbe:
    """Everything one probe round trip saw for one service."""

    host: str
    service: str
    engine: str
    boot_id: str
    observed_at: float
    utc_offset: int
    log: LogState
    runs: tuple[Run, ...]
    unreadable: tuple[Mapping[str, object], ...] = ()
    record: Mapping[str, object] | None = None
    record_state: str | None = None
    health: int | None = None
    #: Whether /health was asked (only when the log cannot tell).
    health_asked: bool = False
    #: Sockets listening on the service's port that no process we can read holds.
    hidden_listeners: tuple[Mapping[str, object], ...] = ()
    #: The uid the probe ran as.
    probe_uid: int | None = None
    #: Why this service could not be probed (the others on the host may have been).
    error: str | None = None
    #: What ``docker inspect`` said of the service's container (``container:`` services).
    container: ContainerState | None = None
    #: The service's run history on the host (``startups.json``): each run's phase start
    #: times, the newest last; this run's own among them once it printed a phase.
    startups: tuple[StartupRecord, ...] = ()
    #: Why the run history could not be read or written (said, never fatal).
    startups_problem: str | None = None
    #: pids of the engine's workers that write the service's log below no run: left
    #: behind by a server that died (the engine spec's ``workers``), never a run.
    leftovers: tuple[int, ...] = ()

    @classmethod
    def from_json(
        cls, host: str, engine: str, top: Fields | Mapping[str, object], data: Fields | Mapping
    ) -> ServiceProbe:
        """One service's part of a probe answer (``data``) and the answer's top (``top``).

        Raises :class:`~tui.core.answers.AnswerError` naming the field that is wrong."""
        top = read(top, "the probe's answer")
        data = read(data, "the probe's answer: services[]")
        runs = []
        for run in data.children("runs"):
            runs.append(
                Run(
                    root=Process.from_json(run),
                    members=tuple(Process.from_json(m) for m in run.children("members")),
                    ready=Ready.from_json(run.opt_child("ready")) if "ready" in run else None,
                    clients=(
                        Clients.from_json(run.child("clients"))
                        if run.opt_child("clients") is not None
                        else None
                    ),
                )
            )
        log = data.opt_child("log")
        return cls(
            host=host,
            service=data.string("name"),
            engine=engine,
            boot_id=top.opt_string("boot_id") or "",
            observed_at=top.opt_time("now") or 0.0,
            utc_offset=_utc_offset(top),
            log=LogState.from_json(log) if log is not None else LogState(path="", exists=False),
            runs=tuple(runs),
            unreadable=tuple(u.plain() for u in data.children("unreadable")),
            record=None if data.opt_child("record") is None else data.child("record").plain(),
            record_state=data.opt_string("record_state"),
            health=data.opt_integer("health"),
            health_asked=data.flag("health_asked"),
            hidden_listeners=tuple(h.plain() for h in data.children("hidden_listeners")),
            probe_uid=top.opt_integer("uid"),
            error=data.opt_string("error"),
            container=(
                ContainerState.from_json(data.child("container"))
                if data.opt_child("container") is not None
                else None
            ),
            startups=tuple(StartupRecord.from_json(r) for r in data.children("startups")),
            startups_problem=data.opt_string("startups_problem"),
            leftovers=tuple(data.integers("leftovers")),
        )


def _utc_offset(top: Fields) -> int:
    offset = top.opt_integer("utc_offset") or 0
    if abs(offset) >= 24 * 3600:
        raise AnswerError("the probe's answer: utc_offset", "is not a time zone's offset")
    return offset


@dataclass(frozen=True)
class Assessment:
    """The verdict on one service, with the facts it rests on and when they were seen."""

    host: str
    service: str
    verdict: Verdict
    summary: str
    checked_at: float
    run: Run | None = None
    log: LogState | None = None
    ready: Ready | None = None
    boot_id: str | None = None
    others: tuple[Run, ...] = field(default_factory=tuple)
    #: Set when the run writes another file than the one at the path (for "follow the writer").
    writer_file: OpenFile | None = None
    utc_offset: int = 0
    #: The service's container as this probe saw it (``container:`` services): with it,
    #: the run is the container's (id, StartedAt, RestartCount).
    container: ContainerState | None = None
    #: Set with the WEDGED verdict: since when the run does not serve, and why
    #: (decided by tui/core/serving.py over what the service's facts have read).
    wedged: Wedged | None = None
    #: Set with DEAD, STALE and a STARTING run that printed a failure line: why, from
    #: this run's own lines and its exit (decided by tui/core/cause.py).
    cause: Cause | None = None

    @property
    def line(self) -> str:
        return f"{self.verdict.word} — {self.summary}"

    @property
    def run_id(self) -> str | None:
        """The run as one word: a container's (:func:`tui.core.containers.run_id`), else
        ``<boot id>/<pid>/<start ticks>`` of its root process; None without a run."""
        identity = self.container.identity if self.container is not None else None
        if identity is not None:
            return identity.run_id
        if self.run is None:
            return None
        return f"{self.boot_id or 'unknown-boot'}/{self.run.root.pid}/{self.run.root.start_ticks}"

    @property
    def writes_log(self) -> bool:
        """Whether the assessed run writes the file now at the log's path. A container's
        json-file log is written by the daemon, not by the run: it is this run's while
        the container runs."""
        run, log = self.run, self.log
        if run is None or log is None or not log.exists:
            return False
        if log.format == DOCKER_JSON and self.container is not None:
            return self.container.writes_json_log
        return run.writes(log.dev or 0, log.inode or 0)

    @property
    def log_writer(self) -> int | None:
        """The pid in the run that writes the file now at the log's path, or None."""
        if not self.writes_log or self.run is None or self.log is None:
            return None
        key = (self.log.dev, self.log.inode)
        for process in self.run.processes:
            if any(f.write and (f.dev, f.inode) == key for f in process.files or ()):
                return process.pid
        return None

    @property
    def writer_pid(self) -> int | None:
        """The pid in the run that holds :attr:`writer_file` open for writing."""
        if self.run is None or self.writer_file is None:
            return None
        for process in self.run.processes:
            if self.writer_file in (process.files or ()):
                return process.pid
        return self.run.root.pid


def unknown(host: str, service: str, reason: str, now: float) -> Assessment:
    return Assessment(host, service, Verdict.UNKNOWN, f"cannot tell: {reason}", now)


def exit_status(assessments: Sequence[Assessment]) -> int:
    """Monitoring-plugin exit status for a set of services: the worst one wins."""
    return worst_exit_status(a.verdict for a in assessments)
