"""Which run is this? Probe results in, one verdict and one plain line out.

:func:`assess` is a pure function of what the probe saw on the host (processes,
their open files, the log's inode and readiness past this run's anchor); it never
guesses: when it cannot tell, the verdict or the ready state says so.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tui.agent.protocol import RECORD_PID_REUSED
from tui.core.runs import Assessment, Ready, Run, ServiceProbe
from tui.core.sanitize import printable
from tui.core.units import human_age
from tui.core.verdicts import Verdict
from tui.engines import GENERIC, spec


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
    engine = spec(probe.engine).title if spec(probe.engine).name != GENERIC else "service"
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
    if probe.record_state == RECORD_PID_REUSED:
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
