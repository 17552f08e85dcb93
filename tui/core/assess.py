"""Which run is this? Probe results in, one verdict and one plain line out.

:func:`assess` is a pure function of what the probe saw on the host (processes,
their open files, the log's inode and readiness past this run's anchor); it never
guesses: when it cannot tell, the verdict or the ready state says so.
"""

from __future__ import annotations

from dataclasses import replace

from tui.agent.protocol import RECORD_PID_REUSED
from tui.core.assess_container import assess_container, container_head
from tui.core.hostclock import HostWords
from tui.core.readiness import ready_of, ready_words, waiting_words
from tui.core.runs import Assessment, Run, ServiceProbe
from tui.core.sanitize import printable
from tui.core.verdicts import Verdict
from tui.engines import GENERIC, spec

#: Leftover workers a verdict names by pid (the others are counted).
LEFTOVERS_SHOWN = 8


def assess(probe: ServiceProbe) -> Assessment:
    """The verdict for one service from one probe. Pure: same probe, same answer."""
    words = HostWords.of(probe)
    log = probe.log
    engine = spec(probe.engine).title if spec(probe.engine).name != GENERIC else "service"
    base = {
        "host": probe.host,
        "service": probe.service,
        "checked_at": probe.observed_at,
        "log": log,
        "boot_id": probe.boot_id,
        "utc_offset": probe.utc_offset,
        "container": probe.container,
    }
    if probe.error is not None:
        return Assessment(
            verdict=Verdict.UNKNOWN,
            summary=f"cannot tell: the probe of this service failed: {printable(probe.error)}",
            **base,
        )
    if probe.container is not None:
        decided = assess_container(probe, probe.container, words, base)
        if decided is not None:
            return decided
        # The container runs and its server writes the service's own log: the file
        # rules below judge its run, named by its container.
        judged = _assess_runs(probe, words, base, engine)
        head = container_head(probe.container)
        return replace(judged, summary=f"{head}: {judged.summary}")
    return _assess_runs(probe, words, base, engine)


def _assess_runs(
    probe: ServiceProbe, words: HostWords, base: dict[str, object], engine: str
) -> Assessment:
    """The verdict from the runs the probe found and the file at the log's path."""
    log = probe.log
    path = printable(log.path)
    runs = list(probe.runs)
    unreadable = _unreadable_note(probe)
    if runs and probe.leftovers:
        unreadable += f"; {_leftover_words(probe)} of a run that is gone hold the log open too"

    if not runs:
        if probe.unreadable or probe.hidden_listeners:
            return Assessment(verdict=Verdict.UNKNOWN, summary=unreadable.lstrip("; "), **base)
        summary = f"no {engine} server process on {probe.host}"
        if probe.leftovers:
            lives = "lives" if len(probe.leftovers) == 1 else "live"
            summary += f"; its {_leftover_words(probe)} {lives} on, holding the log open"
            return Assessment(verdict=Verdict.DEAD, summary=summary + unreadable, **base)
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
    words: HostWords,
    base: dict[str, object],
    unreadable: str,
) -> Assessment:
    log = probe.log
    ready = ready_of(probe, run)
    also = "".join(f"; also running: {_describe_run(r, probe, words)}" for r in others)
    head = f"{words.started(run)} writes this log (inode {log.inode})"
    if ready.seen:
        said = ready_words(ready, words.clock(ready.at) if ready.at else None)
        return Assessment(
            verdict=Verdict.LIVE,
            summary=f"{head}; {said}{also}{unreadable}",
            run=run,
            ready=ready,
            others=others,
            **base,
        )  # type: ignore[arg-type]
    if ready.seen is False:
        return Assessment(
            verdict=Verdict.STARTING,
            summary=f"{head}; {waiting_words(probe, ready)}{also}{unreadable}",
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


def _describe_run(run: Run, probe: ServiceProbe, words: HostWords) -> str:
    written = run.written()
    if written:
        f = written[0]
        what = f"writes inode {f.inode}{' (deleted)' if f.deleted else ''}"
    else:
        what = "holds no log"
    return f"{words.started(run)} {what}"


def _leftover_words(probe: ServiceProbe) -> str:
    """``workers 4242, 4243``: the engine's workers the probe found below no run."""
    pids = ", ".join(str(pid) for pid in probe.leftovers[:LEFTOVERS_SHOWN])
    more = (
        f" and {len(probe.leftovers) - LEFTOVERS_SHOWN} more"
        if len(probe.leftovers) > LEFTOVERS_SHOWN
        else ""
    )
    return f"worker{'s' if len(probe.leftovers) != 1 else ''} {pids}{more}"


def _record_note(probe: ServiceProbe, words: HostWords) -> str:
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
