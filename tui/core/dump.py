"""A hang capture of one run: the request the agent gets, and its answer read as a :class:`Dump`.

The run must be the one babysit sees: a verified run (:func:`dump_target`), whose pid,
start ticks and boot go in the request (:func:`dump_request`) so the agent gathers
nothing of any other process. The answer is read through :mod:`tui.core.answers`
(every host string made printable there); the run's command lines are redacted
(:mod:`tui.core.secrets`) as they enter, py-spy's ``Process N: …`` line too.
Rendering it as the bundle's text is :mod:`tui.core.dump_text`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tui.core.answers import Fields
from tui.core.runs import Assessment, Process
from tui.core.secrets import command_text, placeholder, redact_argv, redact_env, secret_name
from tui.core.verdicts import Verdict
from tui.errors import BabysitError

#: Verdicts whose run may be dumped: the run is this service's, verified by the probe.
DUMPABLE = frozenset(
    {Verdict.LIVE, Verdict.STARTING, Verdict.STALE, Verdict.NO_LOG, Verdict.WEDGED}
)
#: Log lines the bundle holds.
DUMP_LINES = 200
#: Seconds py-spy is given per process on the host.
PER_PROCESS_TIMEOUT = 10.0
#: ``name=value`` and ``name: value`` in a log line (an args line, a config printed):
#: the value one quoted string or one bare word.
KEYED_VALUE = re.compile(
    r"""(?P<name>[A-Za-z_][\w.-]*)(?P<sep>\s*[=:]\s*)"""
    r"""(?P<value>'[^']*'|"[^"]*"|[^\s,;(){}\[\]='"]+)"""
)
#: Values that hold no secret.
EMPTY_VALUES = frozenset({"None", "null", "''", '""', "False", "True"})
#: How a process's stack was taken.
HOW_PY_SPY = "py-spy"
HOW_PROC = "proc"


class DumpRefused(BabysitError):
    """There is no verified run to dump, or the run changed: nothing is written."""

    title = "dump"
    exit_status = 3


def dump_target(a: Assessment) -> Process | None:
    """The run's root a dump is tied to, or None when there is no verified run."""
    if a.run is None or a.verdict not in DUMPABLE:
        return None
    return a.run.root


def no_target_why(a: Assessment) -> str:
    return f"no verified run to dump ({a.verdict.word}: {a.summary}); nothing was written"


def dump_request(a: Assessment, *, record_dir: str, lines: int = DUMP_LINES) -> dict[str, object]:
    """The agent's dump arguments for ``a``'s verified run (see MODE_DUMP)."""
    process = dump_target(a)
    if process is None:
        raise DumpRefused(no_target_why(a))
    log, ready = a.log, a.ready
    return {
        "pid": process.pid,
        "start_ticks": process.start_ticks,
        "boot_id": a.boot_id,
        "log": log.path if log is not None else None,
        "dev": log.dev if log is not None else None,
        "inode": log.inode if log is not None and a.writes_log else None,
        "anchor": ready.anchor if ready is not None and a.writes_log else None,
        "lines": lines,
        "record_dir": record_dir,
        "timeout": PER_PROCESS_TIMEOUT,
        "py_spy": None,
    }


@dataclass(frozen=True)
class ThreadView:
    """One thread as the kernel shows it."""

    tid: int
    name: str | None
    state: str | None
    wchan: str | None
    stack: str | None


@dataclass(frozen=True)
class ProcessDump:
    """One process of the run: its stacks (py-spy's text, or the kernel's view)."""

    pid: int
    ppid: int
    comm: str
    #: Its command line, secrets redacted.
    command: str
    start_ticks: int | None
    user: str | None
    how: str
    stack: str | None
    threads: tuple[ThreadView, ...]
    wchan: str | None
    status: str | None
    threads_cut: bool
    problem: str | None


@dataclass(frozen=True)
class Ptrace:
    """Whether the agent could read the run's processes, and why not."""

    allowed: bool | None
    why: str | None
    yama_scope: int | None
    cap_sys_ptrace: bool | None


@dataclass(frozen=True)
class DumpLog:
    """The run's last log lines."""

    path: str | None
    dev: int | None
    inode: int | None
    offset: int | None
    lines: tuple[str, ...]
    from_anchor: bool
    cut: bool
    problem: str | None


@dataclass(frozen=True)
class NvidiaText:
    status: int | None
    text: str
    error: str
    apps_status: int | None
    apps: str
    apps_error: str


@dataclass(frozen=True)
class Dump:
    """Everything the agent gathered about one run."""

    host: str
    service: str
    pid: int
    start_ticks: int | None
    boot_id: str | None
    taken_at: float
    elapsed_s: float | None
    processes: tuple[ProcessDump, ...]
    processes_cut: bool
    py_spy: str | None
    ptrace: Ptrace
    nvidia: NvidiaText | None
    log: DumpLog | None
    record: Mapping[str, object] | None
    startups: object
    startups_problem: str | None


def read_dump(host: str, service: str, answer: Fields) -> Dump:
    """The agent's answer as a :class:`Dump`; :class:`DumpRefused` when the pid is not the
    run any more (the agent gathered nothing)."""
    run = answer.child("run")
    if not run.flag("same"):
        why = answer.opt_string("problem") or "the run is not the one asked about"
        raise DumpRefused(f"{why}; nothing was written")
    ptrace = answer.opt_child("ptrace") or Fields({}, f"{answer.where}: ptrace")
    nvidia = answer.opt_child("nvidia_smi")
    log = answer.opt_child("log")
    record = answer.opt_child("record")
    return Dump(
        host=host,
        service=service,
        pid=run.integer("pid"),
        start_ticks=run.opt_integer("start_ticks"),
        boot_id=run.opt_string("boot_id"),
        taken_at=answer.time("taken_at"),
        elapsed_s=answer.opt_number("elapsed_s"),
        processes=tuple(_process(p) for p in answer.children("processes")),
        processes_cut=answer.flag("processes_cut"),
        py_spy=answer.opt_string("py_spy"),
        ptrace=Ptrace(
            allowed=ptrace.opt_flag("allowed"),
            why=ptrace.opt_string("why"),
            yama_scope=ptrace.opt_integer("yama_scope"),
            cap_sys_ptrace=ptrace.opt_flag("cap_sys_ptrace"),
        ),
        nvidia=_nvidia(nvidia) if nvidia is not None else None,
        log=_log(log) if log is not None else None,
        record=_redacted_record(record.plain()) if record is not None else None,
        startups=answer.data.get("startups"),
        startups_problem=answer.opt_string("startups_problem"),
    )


def _process(p: Fields) -> ProcessDump:
    pid = p.integer("pid")
    command = command_text(p.strings("cmdline"))
    stack = p.opt_text("stack")
    return ProcessDump(
        pid=pid,
        ppid=p.integer("ppid"),
        comm=p.opt_string("comm") or "",
        command=command,
        start_ticks=p.opt_integer("start_ticks"),
        user=p.opt_string("user"),
        how=p.opt_string("how") or HOW_PROC,
        stack=_own_command(stack, pid, command) if stack is not None else None,
        threads=tuple(
            ThreadView(
                tid=t.integer("tid"),
                name=t.opt_string("name"),
                state=t.opt_string("state"),
                wchan=t.opt_string("wchan"),
                stack=t.opt_text("stack"),
            )
            for t in p.children("threads")
        ),
        wchan=p.opt_string("wchan"),
        status=p.opt_text("status"),
        threads_cut=p.flag("threads_cut"),
        problem=p.opt_string("problem"),
    )


def _own_command(stack: str, pid: int, command: str) -> str:
    """py-spy's text with its ``Process PID: COMMAND`` line (the command line, whose
    secrets it shows) replaced by the redacted command."""
    head = re.compile(rf"^Process {pid}: .*$", re.MULTILINE)
    return head.sub(lambda _: f"Process {pid}: {command}", stack, count=1)


def _nvidia(n: Fields) -> NvidiaText:
    return NvidiaText(
        status=n.opt_integer("status"),
        text=n.opt_text("text") or "",
        error=n.opt_string("error") or "",
        apps_status=n.opt_integer("apps_status"),
        apps=n.opt_text("apps") or "",
        apps_error=n.opt_string("apps_error") or "",
    )


def _log(log: Fields) -> DumpLog:
    return DumpLog(
        path=log.opt_string("path"),
        dev=log.opt_integer("dev"),
        inode=log.opt_integer("inode"),
        offset=log.opt_integer("offset"),
        lines=tuple(redact_line(line) for line in log.strings("lines")),
        from_anchor=log.flag("from_anchor"),
        cut=log.flag("cut"),
        problem=log.opt_string("problem"),
    )


def redact_line(line: str) -> str:
    """A log line with the value of every secret-named ``name=value`` (``api_key='…'``,
    ``HF_TOKEN: …``) replaced by its placeholder."""

    def hide(match: re.Match[str]) -> str:
        value = match["value"]
        if not secret_name(match["name"]) or value in EMPTY_VALUES:
            return match[0]
        quote = value[0] if value[0] in "'\"" and len(value) > 1 else ""
        inner = value[1:-1] if quote else value
        return f"{match['name']}{match['sep']}{quote}{placeholder(inner)}{quote}"

    return KEYED_VALUE.sub(hide, line)


def _redacted_record(record: dict[str, object]) -> dict[str, object]:
    """A run record with its command line and environment values redacted."""
    out = dict(record)
    argv = out.get("argv")
    if isinstance(argv, list) and all(isinstance(w, str) for w in argv):
        out["argv"] = list(redact_argv(argv))
    env = out.get("env")
    if isinstance(env, dict) and all(isinstance(v, str) for v in env.values()):
        out["env"] = redact_env(env)
    return out


__all__ = [
    "DUMPABLE",
    "Dump",
    "DumpLog",
    "DumpRefused",
    "ProcessDump",
    "Ptrace",
    "dump_request",
    "dump_target",
    "read_dump",
]
