"""Why a run is DEAD, STALE or failed while STARTING, from this run's own bytes: one decision.

:class:`FailureWatch` reads every line of the log's latest run (a service's
:class:`~tui.core.wedge.ServingWatch` keeps one per run, fed by its
:class:`~tui.core.report.ServiceFacts`) and keeps the lines that say why a server
fails: an out-of-memory line (``torch.OutOfMemoryError``, ``CUDA out of memory``,
SGLang's ``Not enough memory``), an exception's last line (``RuntimeError: …``), a
signal (``Killed``, ``SIGTERM``, SGLang's ``Received sigquit``) or one of the engine's
death lines. :func:`cause_of` turns them, with what the container runtime says of
the exit (ExitCode, OOMKilled) where it is known, into the :class:`Cause` the
assessment carries; every view says it with :mod:`tui.core.verdict_words`. It keeps the
run's first death line too, the death-line hint's evidence: one reader of failure lines.

A process's exit status is known to its parent only: the agent reads the host's
processes, it is not their parent, so for a service run by a process the cause is
its log's lines alone; a container's runtime keeps its exit status.

JSON (``status --json``, the service's ``cause``)::

    {"kind": "oom", "line": "RuntimeError: Not enough memory. …", "offset": 4650,
     "exit_code": null, "oom_killed": false}
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from tui.core.runs import Assessment
from tui.core.sanitize import printable
from tui.core.verdicts import Verdict

#: Characters of a failure line kept.
LINE_CHARS = 200
#: Exit statuses above this one are 128 + the signal that ended the process.
SIGNAL_BASE = 128

_OOM = re.compile(
    r"out of memory|OutOfMemoryError|not enough memory|cannot allocate memory|oom[-_ ]?kill",
    re.IGNORECASE,
)
#: An exception's last line of a traceback, after the prefixes engines put before it
#: (``(EngineCore_DP0 pid=4242) ``, ``[2026-12-01 12:00:00] ``).
_EXCEPTION = re.compile(
    r"^(?:\([^)]*\)\s+|\[[^\]]*\]\s+)*(?P<head>(?:[A-Za-z_]\w*\.)*"
    r"(?P<name>[A-Z]\w*(?:Error|Exception|Interrupt)))(?::\s|:?$)"
)
#: The words an exception's name ends in (a quick test before :data:`_EXCEPTION`).
_NAME_ENDS = re.compile(r"Error|Exception|Interrupt")
#: A signal named (a shell's ``Killed`` line, ``SIGTERM``, ``signal 9``). What a shell says
#: of a crash (``Segmentation fault``) is an engine's death line (tui/engines).
_SIGNAL = re.compile(
    r"^\s*Killed\s*$|\bsig(?:kill|term|int|quit|abrt|segv|bus|hup)\b|\bsignal \d+\b|"
    r"\bReceived signal\b",
    re.IGNORECASE,
)


class CauseKind(enum.Enum):
    """What kind of cause it is (the ``kind`` in JSON)."""

    #: a line of the run says it ran out of memory, or the runtime says OOMKilled
    OOM = "oom"
    #: an exception or one of the engine's death lines
    ERROR = "error"
    #: a signal ended it: a line says so, or its exit status is 128 + the signal
    SIGNAL = "signal"
    #: only the exit status is known (a container's)
    EXIT = "exit"
    #: the log's last run ended without a line that says why
    NO_FAILURE_LINE = "no-failure-line"
    #: STALE: the run writes a deleted or another file than the one at the log's path
    LOG_REPLACED = "log-replaced"
    #: STALE: the run does not write the file at the log's path at all
    LOG_NOT_WRITTEN = "log-not-written"


@dataclass(frozen=True)
class FailureLine:
    """A line of the run that says why it fails: its text (printable, cut to
    :data:`LINE_CHARS`; an exception's from its name on), where the line is in the log
    (None: unknown) and its kind."""

    text: str
    offset: int | None
    kind: CauseKind
    #: the exception's name (``RuntimeError``), or ""
    exception: str = ""


@dataclass(frozen=True)
class Cause:
    """Why the run is DEAD, STALE or failed while STARTING.

    ``line``: the failure line of this run that says it best (an out-of-memory line,
    else the last exception, else the last death or signal line); None when the run
    printed none. ``last_line``: with no failure line, the run's last line (what it
    was doing when it stopped). ``exit_code``/``oom_killed``: what the container runtime
    says of its exit (None/False for a process: its exit status is known to its parent
    only). ``writes``: STALE: the inode the run writes."""

    kind: CauseKind
    line: FailureLine | None = None
    last_line: FailureLine | None = None
    exit_code: int | None = None
    oom_killed: bool = False
    writes: int | None = None
    deleted: bool = False

    @property
    def signal(self) -> int | None:
        """The signal the exit status says ended it (137: 9), or None."""
        code = self.exit_code
        return code - SIGNAL_BASE if code is not None and code > SIGNAL_BASE else None

    def to_json(self) -> dict[str, object]:
        line = self.line or self.last_line
        return {
            "kind": self.kind.value,
            "line": line.text if self.line is not None else None,
            "last_line": self.last_line.text if self.last_line is not None else None,
            "offset": line.offset if line is not None else None,
            "exit_code": self.exit_code,
            "oom_killed": self.oom_killed,
        }


def failure_kind(text: str, deaths: tuple[str, ...] = ()) -> tuple[CauseKind, str] | None:
    """Whether ``text`` says why a server fails: its kind and the exception's name
    (``""`` for a line that is not an exception's)."""
    # Every line of a log passes here, and most say nothing of a failure: each pattern
    # runs only on a line holding a word it needs (a test of plain text, many times
    # faster than the patterns' own search).
    exception = _EXCEPTION.match(text) if _NAME_ENDS.search(text) else None
    name = exception.group("name") if exception else ""
    low = text.lower()
    if ("memory" in low or "oom" in low) and _OOM.search(text):
        return CauseKind.OOM, name
    if name:
        return (CauseKind.SIGNAL if name == "KeyboardInterrupt" else CauseKind.ERROR), name
    if ("sig" in low or "killed" in low) and _SIGNAL.search(text):
        return CauseKind.SIGNAL, ""
    if any(needle in text for needle in deaths):
        return CauseKind.ERROR, ""
    return None


def _kept(text: str) -> str:
    """The line as it is said: printable, runs of spaces made one, cut."""
    said = " ".join(printable(text).split())
    return said if len(said) <= LINE_CHARS else said[: LINE_CHARS - 1] + "…"


class FailureWatch:
    """The failure lines of one run of the log, as they are read. Bounded: it keeps the
    last line of each kind, not the lines."""

    def __init__(self, deaths: tuple[str, ...] = ()) -> None:
        self._deaths = deaths
        self._oom: FailureLine | None = None
        self._exception: FailureLine | None = None
        self._other: FailureLine | None = None
        self._last: FailureLine | None = None
        self._first_death: tuple[str, int | None] | None = None

    def line(self, text: str, offset: int | None) -> None:
        """One line of this run (in the order of the log)."""
        if not text.strip():
            return
        if self._first_death is None and any(needle in text for needle in self._deaths):
            self._first_death = (text, offset)
        found = failure_kind(text, self._deaths)
        if found is None:
            self._last = FailureLine(_kept(text), offset, CauseKind.NO_FAILURE_LINE)
            return
        kind, name = found
        if name:  # an exception's line from its name on: the engine's prefix says nothing
            exception = _EXCEPTION.match(text)
            text = text[exception.start("head") :] if exception else text
        line = FailureLine(_kept(text), offset, kind, name)
        self._last = line
        if kind is CauseKind.OOM:
            self._oom = line
        elif name:
            self._exception = line
        else:
            self._other = line

    @property
    def best(self) -> FailureLine | None:
        """The line that says best why the run fails: its last out-of-memory line, else
        its last exception, else its last death or signal line; None without any."""
        return self._oom or self._exception or self._other

    @property
    def first_death(self) -> tuple[str, int | None] | None:
        """The run's first line of the engine's ``deaths`` as it was written, and its
        offset: the death-line hint's evidence."""
        return self._first_death

    @property
    def last(self) -> FailureLine | None:
        """The run's last line that is not blank."""
        return self._last


#: The verdicts a cause is given for (STARTING only when the run printed a failure line).
CAUSE_VERDICTS = (Verdict.DEAD, Verdict.STALE, Verdict.STARTING)


def cause_of(a: Assessment, failures: FailureWatch | None) -> Cause | None:
    """Why ``a``'s run is DEAD, STALE or failed while STARTING, or None (another verdict,
    a STARTING run that printed no failure line, a DEAD service with no log lines to
    read and no exit status)."""
    if a.verdict is Verdict.STALE:
        writer = a.writer_file
        if writer is not None:
            return Cause(CauseKind.LOG_REPLACED, writes=writer.inode, deleted=writer.deleted)
        return Cause(CauseKind.LOG_NOT_WRITTEN)
    if a.verdict not in (Verdict.DEAD, Verdict.STARTING):
        return None
    line = failures.best if failures is not None else None
    if a.verdict is Verdict.STARTING:
        return Cause(line.kind, line=line) if line is not None else None
    exit_code, oom_killed = _exit(a)
    last = failures.last if failures is not None and line is None else None
    if (line is not None and line.kind is CauseKind.OOM) or oom_killed:
        kind = CauseKind.OOM
    elif line is not None:
        kind = line.kind
    elif exit_code is not None and exit_code > SIGNAL_BASE:
        kind = CauseKind.SIGNAL
    elif exit_code is not None:
        kind = CauseKind.EXIT
    elif last is not None:
        kind = CauseKind.NO_FAILURE_LINE
    else:
        return None
    return Cause(kind, line=line, last_line=last, exit_code=exit_code, oom_killed=oom_killed)


def _exit(a: Assessment) -> tuple[int | None, bool]:
    """What the container runtime says of the run's exit: (exit status, OOMKilled). A
    container that runs again holds ExitCode 0 as it starts: its status is known only
    while it is stopped or restarting."""
    c = a.container
    if c is None:
        return None, False
    if c.found and (not c.running or c.restarting):
        return c.exit_code, c.oom_killed
    if not c.found and c.last_exit is not None:
        return c.last_exit.exit_code, False
    return None, False
