"""Which run is this? Probe results in, one verdict and one plain line out.

A run's identity is (boot id, pid, start time) — never a pid alone, never a
name. :func:`assess` is a pure function of what the probe saw on the host
(processes, their open files, the log's inode and readiness past this run's
anchor); it never guesses: when it cannot tell, the verdict or the ready state
says so.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from tui.core.answers import AnswerError, Fields, read
from tui.core.sanitize import printable
from tui.core.secrets import redact_argv
from tui.core.units import human_age


class Verdict(enum.Enum):
    LIVE = "live"
    STARTING = "starting"
    STALE = "stale"
    DEAD = "dead"
    NO_LOG = "no-log"
    AMBIGUOUS = "ambiguous"
    UNKNOWN = "unknown"

    @property
    def severity(self) -> int:
        """Higher is worse; for sorting fleets and for exit statuses."""
        return _SEVERITY[self]

    @property
    def exit_status(self) -> int:
        """Like monitoring plugins: 0 ok, 1 warning, 2 critical, 3 unknown."""
        if self is Verdict.LIVE:
            return 0
        if self is Verdict.STARTING:
            return 1
        if self is Verdict.UNKNOWN:
            return 3
        return 2


_SEVERITY = {
    Verdict.LIVE: 0,
    Verdict.STARTING: 1,
    Verdict.NO_LOG: 2,
    Verdict.DEAD: 3,
    Verdict.STALE: 4,
    Verdict.AMBIGUOUS: 5,
    Verdict.UNKNOWN: 6,
}


@dataclass(frozen=True)
class OpenFile:
    fd: int
    path: str
    dev: int
    inode: int
    deleted: bool
    write: bool
    #: The agent found this file to be the log (same device and inode as the file at
    #: the path) or its deleted former self (see LogFile in tui/remote/agent.py).
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
        )


@dataclass(frozen=True)
class Run:
    """A candidate run: a root process and everything below it."""

    root: Process
    members: tuple[Process, ...]
    ready: Ready | None

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

    @property
    def line(self) -> str:
        return f"{self.verdict.name.replace('_', '-')} — {self.summary}"

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


class _Words:
    """Formats times in the host's own clock, ages against the probe's clock."""

    def __init__(self, probe: ServiceProbe) -> None:
        self.zone = timezone(timedelta(seconds=probe.utc_offset))
        self.now = probe.observed_at

    def clock(self, ts: float) -> str:
        return datetime.fromtimestamp(ts, self.zone).strftime("%H:%M:%S")

    def when(self, ts: float) -> str:
        return f"{self.clock(ts)} ({human_age(self.now - ts)} ago)"

    def started(self, run: Run) -> str:
        start = run.root.start_time
        return (
            f"pid {run.root.pid} (started {self.clock(start)}, {human_age(self.now - start)} ago)"
        )


def assess(probe: ServiceProbe) -> Assessment:
    """The verdict for one service from one probe. Pure: same probe, same answer."""
    words = _Words(probe)
    log = probe.log
    path = printable(log.path)
    engine = probe.engine if probe.engine != "generic" else "service"
    base = {
        "host": probe.host,
        "service": probe.service,
        "checked_at": probe.observed_at,
        "log": log,
        "boot_id": probe.boot_id,
        "utc_offset": probe.utc_offset,
    }
    if probe.error is not None:
        return Assessment(
            verdict=Verdict.UNKNOWN,
            summary=f"cannot tell: the probe of this service failed: {printable(probe.error)}",
            **base,
        )
    runs = list(probe.runs)
    unreadable = _unreadable_note(probe)

    if not runs:
        if probe.unreadable or probe.hidden_listeners:
            return Assessment(verdict=Verdict.UNKNOWN, summary=unreadable.lstrip("; "), **base)
        summary = f"no {engine} process on {probe.host}"
        if not log.exists:
            summary += f"; {log.problem}" if log.problem else f" and no log at {path}"
        elif log.size == 0:
            changed = words.when(log.mtime or 0)
            summary += f"; this log is empty (inode {log.inode}, created or cut {changed})"
        else:
            summary += (
                f"; this log was last written {words.when(log.mtime or 0)} by a run that is gone"
            )
        summary += _record_note(probe, words)
        return Assessment(verdict=Verdict.DEAD, summary=summary + unreadable, **base)

    writing_current = [r for r in runs if log.exists and r.writes(log.dev or 0, log.inode or 0)]
    if len(writing_current) == 1:
        run = writing_current[0]
        others = tuple(r for r in runs if r is not run)
        return _holding(probe, run, others=others, words=words, base=base, unreadable=unreadable)
    if len(runs) > 1:
        described = "; ".join(_describe_run(r, probe, words) for r in runs)
        return Assessment(
            verdict=Verdict.AMBIGUOUS,
            summary=f"{len(runs)} candidate runs: {described}{unreadable}",
            others=tuple(runs),
            **base,
        )
    run = runs[0]
    written = run.written()
    if not log.exists:
        doing = f"; it writes inode {written[0].inode} (deleted)" if written else ""
        missing = log.problem or f"{path} does not exist"
        return Assessment(
            verdict=Verdict.NO_LOG,
            summary=f"{words.started(run)} runs, but {missing}{doing}{unreadable}",
            run=run,
            writer_file=written[0] if written else None,
            **base,
        )
    if written:
        old = written[0]
        state = "deleted" if old.deleted else "another file"
        nothing = (
            ""
            if any(r.writes(log.dev or 0, log.inode or 0) for r in runs)
            else (" and nothing writes it")
        )
        return Assessment(
            verdict=Verdict.STALE,
            summary=(
                f"{words.started(run)} writes {path} ({state}, inode {old.inode}); the file "
                f"now at that path is inode {log.inode}{nothing}{unreadable}"
            ),
            run=run,
            writer_file=old,
            **base,
        )
    if log.mtime is not None and log.mtime < run.root.start_time:
        return Assessment(
            verdict=Verdict.STALE,
            summary=(
                f"{words.started(run)} does not write {path}; that file was last written "
                f"{words.when(log.mtime)}, before the process started{unreadable}"
            ),
            run=run,
            **base,
        )
    return Assessment(
        verdict=Verdict.STALE,
        summary=(
            f"{words.started(run)} runs but does not hold {path} open; the file was last "
            f"written {words.when(log.mtime or 0)} by something else{unreadable}"
        ),
        run=run,
        **base,
    )


def _holding(
    probe: ServiceProbe,
    run: Run,
    *,
    others: tuple[Run, ...],
    words: _Words,
    base: dict[str, object],
    unreadable: str,
) -> Assessment:
    log = probe.log
    ready = run.ready or Ready(seen=None, source="not probed")
    # /health is asked only when the log cannot tell: readiness unknown, or no ready
    # line in a log that may have lost it (cut since the run began).
    if (ready.seen is None or (ready.seen is False and ready.cut)) and probe.health == 200:
        ready = Ready(
            seen=True, source="HTTP /health answered 200", anchor=ready.anchor, by_http=True
        )
    also = "".join(f"; also running: {_describe_run(r, probe, words)}" for r in others)
    head = f"{words.started(run)} writes this log (inode {log.inode})"
    if ready.seen:
        when = f" since {words.clock(ready.at)}" if ready.at else ""
        how = " (by HTTP /health; no ready line found)" if ready.by_http else ""
        return Assessment(
            verdict=Verdict.LIVE,
            summary=f"{head}; ready{when}{how}{also}{unreadable}",
            run=run,
            ready=ready,
            others=others,
            **base,
        )  # type: ignore[arg-type]
    if ready.seen is False:
        where = (
            f" since this run began at offset {ready.anchor}" if ready.anchor is not None else ""
        )
        health = ""
        if probe.health is not None:
            health = f"; /health answers {probe.health}"
        elif ready.cut and not probe.health_asked:
            health = (
                "; the log begins inside this run, so a cut may have taken its ready line "
                "(with port: set, /health can tell)"
            )
        return Assessment(
            verdict=Verdict.STARTING,
            summary=f"{head}; not ready yet (no ready line{where}){health}{also}{unreadable}",
            run=run,
            ready=ready,
            others=others,
            **base,
        )  # type: ignore[arg-type]
    return Assessment(
        verdict=Verdict.STARTING,
        summary=f"{head}; ready: unknown ({ready.source}){also}{unreadable}",
        run=run,
        ready=ready,
        others=others,
        **base,
    )  # type: ignore[arg-type]


def _describe_run(run: Run, probe: ServiceProbe, words: _Words) -> str:
    written = run.written()
    if written:
        f = written[0]
        what = f"writes inode {f.inode}{' (deleted)' if f.deleted else ''}"
    else:
        what = "holds no log"
    return f"{words.started(run)} {what}"


def _record_note(probe: ServiceProbe, words: _Words) -> str:
    record = probe.record
    if not record:
        return ""
    pid = record.get("pid")
    if probe.record_state == "pid reused":
        return f"; the last launch's pid {pid} now belongs to another process"
    if probe.record_state == "from an earlier boot":
        return f"; the last launch (pid {pid}) was before the host rebooted"
    return ""


def _unreadable_note(probe: ServiceProbe) -> str:
    """What is seen on the host but cannot be read by the probe's user, in plain words."""
    notes = []
    if probe.unreadable:
        parts = [f"pid {u.get('pid')} (user {u.get('user')})" for u in probe.unreadable]
        notes.append(
            f"{', '.join(parts)} looks like this service but its open files cannot be read "
            "by this user"
        )
    for listener in probe.hidden_listeners:
        uid, user = listener.get("uid"), printable(str(listener.get("user")))
        port = listener.get("port")
        if probe.probe_uid not in (uid, 0):
            notes.append(
                f"port {port} listens, owned by uid {uid} ({user}), whose processes we may not read"
            )
        else:
            notes.append(
                f"port {port} listens (socket of uid {uid} ({user})), but no process "
                "this probe can see holds it"
            )
    return "".join(f"; {note}" for note in dict.fromkeys(notes))


def exit_status(assessments: Sequence[Assessment]) -> int:
    """Monitoring-plugin exit status for a set of services: the worst one wins."""
    statuses = [a.verdict.exit_status for a in assessments]
    if 3 in statuses:
        return 3
    return max(statuses, default=0)
