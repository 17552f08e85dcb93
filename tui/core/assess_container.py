"""The verdict on a container service: what its runtime says of the container, then its run.

A service with ``container:`` is judged first by ``docker inspect``'s answer
(:class:`~tui.core.containers.ContainerState`): a runtime that cannot be asked is
UNKNOWN in its own words; no such container is DEAD; one that exited, died or never
started is DEAD with its exit status, ``OOMKilled``, ``Error`` and ``FinishedAt``; a
restarting one is DEAD while the runtime waits to start it again; a paused one is
STALE. A running container's run is the one run the probe found (its root is
``State.Pid``). With the container's json-file log the daemon writes the log, not
the run, so the container's identity stands for the "writes this log" test, and the
ready line counts from this run's ``StartedAt`` (its anchor). With a ``log:`` of the
service's own, the file rules of :mod:`tui.core.assess` judge the run:
:func:`assess_container` gives None.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import replace

from tui.core.containers import DOCKER_JSON, ContainerState
from tui.core.hostclock import HostWords
from tui.core.readiness import ready_of, ready_words, waiting_words
from tui.core.runs import Assessment, Process, Run, ServiceProbe
from tui.core.sanitize import printable
from tui.core.verdicts import Verdict
from tui.engines import GENERIC, of_program, spec

#: What a container's exit by the kernel's OOM killer is called.
OOM_WORDS = "OOMKilled: killed by the kernel's OOM killer"
#: Exit statuses above this one are 128 + the signal that ended the process.
SIGNAL_BASE = 128
#: Programs that run a server's command line for it (``sh -c "vllm serve …"``, an init
#: such as ``tini --``): never the server itself, though their argv holds its words.
WRAPPERS = frozenset(
    {"sh", "bash", "dash", "ash", "zsh", "busybox", "tini", "dumb-init", "docker-init"}
)


def container_head(c: ContainerState) -> str:
    """``container vllm-qwen (4f3c1a2b3c4d, vllm/vllm-openai:v0.9)``."""
    what = ", ".join(part for part in (c.short_id, printable(c.image)) if part)
    runtime = "" if c.runtime == "docker" else f"{c.runtime} "
    return f"{runtime}container {printable(c.label)}" + (f" ({what})" if what else "")


def run_words(c: ContainerState, words: HostWords) -> str:
    """``started 14:02:11 (3 min ago) as pid 4242, run 4 of this container (RestartCount
    3)``: the pid is the one ``babysit kill --pid`` takes (``State.Pid``)."""
    started = f"started {words.when(c.started_at)}" if c.started_at is not None else "started"
    if c.pid > 0:
        started += f" as pid {c.pid}"
    if c.restart_count:
        return (
            f"{started}, run {c.restart_count + 1} of this container "
            f"(RestartCount {c.restart_count})"
        )
    return f"{started}, RestartCount 0"


def exit_words(c: ContainerState, words: HostWords) -> str:
    """``exited with status 137 (signal 9, SIGKILL) at 14:05:02 (1 min ago); OOMKilled: …``."""
    said = "exited"
    if c.exit_code is not None:
        said += f" with status {c.exit_code}{_signal_words(c.exit_code)}"
    if c.finished_at is not None:
        said += f" at {words.when(c.finished_at)}"
    if c.oom_killed:
        said += f"; {OOM_WORDS}"
    if c.error:
        said += f"; {c.runtime} says: {printable(c.error)}"
    return said


def _signal_words(code: int) -> str:
    number = code - SIGNAL_BASE
    if number <= 0:
        return ""
    try:
        return f" (signal {number}, {signal.Signals(number).name})"
    except ValueError:
        return f" (signal {number})"


def assess_container(
    probe: ServiceProbe, c: ContainerState, words: HostWords, base: Mapping[str, object]
) -> Assessment | None:
    """The verdict on a ``container:`` service whose container is ``c``, or None when the
    container runs and its run is judged by the service's own log file (the rules of
    :func:`tui.core.assess.assess`)."""
    if not c.found:
        verdict, summary = _not_found(probe, c, words)
        return Assessment(verdict=verdict, summary=summary, **base)  # type: ignore[arg-type]
    head = container_head(c)
    run = probe.runs[0] if probe.runs else None
    if not c.running or c.restarting:
        summary = _restarting(c, head, words) if c.restarting else _stopped(c, head, words)
        return Assessment(verdict=Verdict.DEAD, summary=summary, **base)  # type: ignore[arg-type]
    if c.paused:
        return Assessment(
            verdict=Verdict.STALE,
            summary=(
                f"{head} is paused: its processes are frozen and serve nothing until "
                f"`{printable(c.runtime)} unpause`; {run_words(c, words)}"
            ),
            run=run,
            **base,  # type: ignore[arg-type]
        )
    if run is None:
        return Assessment(
            verdict=Verdict.UNKNOWN,
            summary=(
                f"cannot tell: {head} runs (State.Pid {c.pid}), but the probe saw "
                "none of its processes"
            ),
            **base,  # type: ignore[arg-type]
        )
    if probe.log.format != DOCKER_JSON and probe.log.path not in ("", c.log_path):
        return None  # the service's own log: file rules
    return _json_log_run(probe, c, run, words, base)


def _not_found(probe: ServiceProbe, c: ContainerState, words: HostWords) -> tuple[Verdict, str]:
    runtime = printable(c.runtime)
    if c.absent:
        where = "" if c.runtime == "docker" else f" ({runtime})"
        said = f"no container {printable(c.ref)} on {probe.host}{where}"
        gone = c.last_exit
        if gone is not None:  # the daemon remembers its exit (a --rm container's only trace)
            what = ", ".join(p for p in (gone.id[:12], printable(gone.image)) if p)
            status = f" with status {gone.exit_code}" if gone.exit_code is not None else ""
            at = f" at {words.when(gone.at)}" if gone.at is not None else ""
            said += f"; its last run ({what}) exited{status}{at}, and it was removed"
        return Verdict.DEAD, said
    problem = printable(c.problem or f"{runtime} inspect gave no answer")
    return (
        Verdict.UNKNOWN,
        f"cannot tell: {runtime} cannot say what container {printable(c.ref)} is: {problem}",
    )


def _restarting(c: ContainerState, head: str, words: HostWords) -> str:
    policy = f" (restart policy {printable(c.restart_policy)})" if c.restart_policy else ""
    return (
        f"{head} is restarting: {printable(c.runtime)} waits to start it again{policy}; its "
        f"last run {exit_words(c, words)}; RestartCount {c.restart_count}"
    )


def _stopped(c: ContainerState, head: str, words: HostWords) -> str:
    removed = (
        f"; it runs with --rm: {c.runtime} removes it, and its log, as it exits"
        if c.auto_remove
        else ""
    )
    if c.started_at is None:
        created = f" {words.when(c.created)}" if c.created is not None else ""
        return f"{head} was created{created} and never started{removed}"
    if c.status == "dead":
        return (
            f"{head} is dead ({c.runtime} could not stop or remove it); it {exit_words(c, words)}"
        )
    if c.status == "removing":
        return f"{head} is being removed; it {exit_words(c, words)}"
    return f"{head} {exit_words(c, words)}{removed}"


def _json_log_run(
    probe: ServiceProbe,
    c: ContainerState,
    run: Run,
    words: HostWords,
    base: Mapping[str, object],
) -> Assessment:
    """A running container whose log is its own: the json-file the daemon writes for it,
    or, with another log driver, no file at all (its lines come from ``docker logs``, and
    /health tells readiness)."""
    log = probe.log
    head = f"{container_head(c)} {run_words(c, words)}"
    unread = ""
    if not log.exists and log.format != DOCKER_JSON and log.problem:
        unread = f"; {printable(log.problem)}"  # another log driver: no file to read
    elif not log.exists:
        unread = f"; its log {printable(log.path or c.log_path)} cannot be read" + (
            f" ({printable(log.problem)})" if log.problem else ""
        )
    ready = ready_of(probe, run)
    if ready.seen:
        said = ready_words(ready, words.clock(ready.at) if ready.at else None)
        verdict = Verdict.LIVE
    elif ready.seen is False:
        said = waiting_words(probe, ready)
        verdict = Verdict.STARTING
    else:
        said = f"ready: unknown ({ready.source})"
        verdict = Verdict.STARTING
    return Assessment(
        verdict=verdict,
        summary=f"{head}; {said}{unread}",
        run=run,
        ready=ready,
        **base,  # type: ignore[arg-type]
    )


def removed_at_exit(a: Assessment, seen: ContainerState, seen_at: float) -> Assessment:
    """An absent container's verdict, told by what was seen of it at ``seen_at``: it ran
    with --rm, so its runtime removed it as it exited."""
    words = HostWords(a.utc_offset, a.checked_at)
    what = ", ".join(part for part in (seen.short_id, printable(seen.image)) if part)
    return replace(
        a,
        summary=(
            f"{a.summary}: it ran with --rm ({what}; last seen {words.when(seen_at)}), so "
            f"{seen.runtime} removed it, and its log, as it exited"
        ),
    )


def server_process(run: Run, engine: str) -> Process:
    """The run's server: the first process (root first) whose command line its engine
    (any engine, for a generic service) recognises, other than a shell that runs it;
    the root when none is (``sh -c`` wrapper, ``tini``, a server babysit cannot name)."""
    own = spec(engine)
    for process in run.processes:
        if _is_wrapper(process.cmdline):
            continue
        found = of_program(process.cmdline)
        if found is not None and own.name in (GENERIC, found.name):
            return process
    return run.root


def _is_wrapper(argv: Sequence[str]) -> bool:
    return bool(argv) and argv[0].rsplit("/", 1)[-1] in WRAPPERS
