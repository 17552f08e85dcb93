"""A :class:`~tui.core.dump.Dump` as the text of its bundle, and as one line per fact gathered.

The bundle is one plain-text file: a header (host, service, the run's pid and start,
the boot, the log's path and inode, when it was taken, babysit's version), then each
process's stack (py-spy's, else the kernel's view), ptrace's notes, nvidia-smi's
answers, the run's last log lines, its run record and its startups. Every host string
in it was made printable where the answer entered (tui/core/answers.py); the command
lines are redacted (tui/core/dump.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from tui.core.dump import HOW_PY_SPY, Dump, ProcessDump

#: The rule above each section.
RULE = "=" * 78
#: How a time is written in the bundle (the host's clock, with its offset).
STAMP = "%Y-%m-%d %H:%M:%S %z"


@dataclass(frozen=True)
class DumpHeader:
    """What babysit knows of the run beside the agent's answer."""

    #: How the host is reached (``ssh root@10.0.0.15``).
    chain: str
    engine: str
    #: The run's start (host epoch), as the probe saw it.
    started_at: float | None
    utc_offset: int
    version: str


def host_time(ts: float, utc_offset: int) -> str:
    return datetime.fromtimestamp(ts, timezone(timedelta(seconds=utc_offset))).strftime(STAMP)


def bundle_text(dump: Dump, header: DumpHeader) -> str:
    """The bundle's whole text."""
    return "\n".join(_bundle_lines(dump, header)) + "\n"


def _bundle_lines(dump: Dump, header: DumpHeader) -> Iterator[str]:
    yield f"babysit dump · {dump.host}/{dump.service}"
    yield from _header(dump, header)
    yield from _ptrace(dump)
    for process in dump.processes:
        yield from _process(process)
    if dump.processes_cut:
        yield ""
        yield f"(more processes run below pid {dump.pid}: only the first {len(dump.processes)})"
    yield from _nvidia(dump)
    yield from _log(dump)
    yield from _section("run record (runs.jsonl, the newest)")
    yield json.dumps(dump.record, indent=2) if dump.record is not None else "(none)"
    yield from _section("startups (startups.json)")
    if dump.startups_problem:
        yield dump.startups_problem
    else:
        yield json.dumps(dump.startups, indent=2) if dump.startups is not None else "(none)"


def _section(title: str) -> Iterator[str]:
    yield ""
    yield RULE
    yield title
    yield RULE


def _header(dump: Dump, header: DumpHeader) -> Iterator[str]:
    started = (
        f"started {host_time(header.started_at, header.utc_offset)}, "
        if header.started_at is not None
        else ""
    )
    log = dump.log
    yield f"host:     {dump.host} ({header.chain})"
    yield f"service:  {dump.service} ({header.engine})"
    yield f"run:      pid {dump.pid} ({started}start ticks {dump.start_ticks})"
    yield f"boot:     {dump.boot_id or 'unknown'}"
    if log is not None:
        yield f"log:      {log.path} (inode {log.inode if log.inode is not None else '?'})"
    taken = host_time(dump.taken_at, header.utc_offset)
    took = f", in {dump.elapsed_s:.1f} s" if dump.elapsed_s is not None else ""
    yield f"taken:    {taken} (the host's clock){took}"
    yield f"babysit:  {header.version}"
    yield f"py-spy:   {dump.py_spy or 'not on the host: the kernel view of each process'}"


def _ptrace(dump: Dump) -> Iterator[str]:
    ptrace = dump.ptrace
    if ptrace.allowed is not False:
        return
    yield ""
    yield f"ptrace:   denied: {ptrace.why or 'the kernel refused'}"
    scope = "not set (no Yama)" if ptrace.yama_scope is None else str(ptrace.yama_scope)
    cap = {True: "yes", False: "no", None: "unknown"}[ptrace.cap_sys_ptrace]
    yield f"          kernel.yama.ptrace_scope: {scope}; the agent's CAP_SYS_PTRACE: {cap}"


def _process(p: ProcessDump) -> Iterator[str]:
    how = "py-spy dump" if p.how == HOW_PY_SPY else "the kernel's view"
    yield from _section(f"process {p.pid} (parent {p.ppid}) · {p.comm} · user {p.user} · {how}")
    yield f"command: {p.command}"
    if p.problem:
        yield f"note:    {p.problem}"
    if p.how == HOW_PY_SPY and p.stack is not None:
        yield ""
        yield from p.stack.rstrip("\n").splitlines()
        return
    yield f"wchan:   {p.wchan or '-'}"
    if p.stack is not None:
        yield "kernel stack:"
        yield from _indented(p.stack)
    yield f"threads: {len(p.threads)}{' (more not read)' if p.threads_cut else ''}"
    for t in p.threads:
        yield f"  {t.tid} {t.name or '?'} state {t.state or '?'} wchan {t.wchan or '-'}"
        if t.stack:
            yield from _indented(t.stack, "      ")
    if p.status:
        yield "status:"
        yield from _indented(p.status)


def _indented(text: str, pad: str = "    ") -> Iterator[str]:
    for line in text.rstrip("\n").splitlines():
        yield f"{pad}{line}"


def _nvidia(dump: Dump) -> Iterator[str]:
    n = dump.nvidia
    yield from _section("nvidia-smi")
    if n is None:
        yield "(not asked)"
        return
    yield n.text.rstrip("\n") if n.status == 0 else f"exit status {n.status}: {n.error}"
    yield from _section("nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv")
    yield (
        n.apps.rstrip("\n")
        if n.apps_status == 0
        else f"exit status {n.apps_status}: {n.apps_error}"
    )


def _log(dump: Dump) -> Iterator[str]:
    log = dump.log
    if log is None:
        yield from _section("log")
        yield "(not read)"
        return
    yield from _section(f"log: {log_words(dump)}")
    if log.problem:
        yield f"note: {log.problem}"
    yield from log.lines


def log_words(dump: Dump) -> str:
    log = dump.log
    if log is None:
        return "not read"
    where = f"{log.path} (inode {log.inode})"
    if not log.lines:
        return f"no lines of {where}" + (f": {log.problem}" if log.problem else "")
    since = "this run's, from its start" if log.from_anchor and not log.cut else "its last"
    return f"{len(log.lines)} lines of {where} from offset {log.offset} ({since})"


def fact_lines(dump: Dump) -> list[str]:
    """What was gathered, one line each (the CLI prints them before the bundle's path)."""
    lines = [f"{dump.host}/{dump.service}: run pid {dump.pid}"]
    for p in dump.processes:
        if p.how == HOW_PY_SPY:
            lines.append(f"process {p.pid} ({p.comm}): py-spy stack")
        else:
            note = f" ({p.problem})" if p.problem else ""
            lines.append(
                f"process {p.pid} ({p.comm}): the kernel's view, {len(p.threads)} threads{note}"
            )
    if dump.ptrace.allowed is False:
        lines.append(f"ptrace denied: {dump.ptrace.why or 'the kernel refused'}")
    n = dump.nvidia
    if n is not None:
        lines.append(
            f"nvidia-smi: {len(n.text.splitlines())} lines"
            if n.status == 0
            else f"nvidia-smi: exit status {n.status} ({n.error or 'no answer'})"
        )
    lines.append(f"log: {log_words(dump)}")
    lines.append("run record: " + ("yes" if dump.record is not None else "none"))
    if dump.startups_problem:
        lines.append(f"startups: {dump.startups_problem}")
    else:
        lines.append("startups: " + ("yes" if dump.startups is not None else "none"))
    return lines
