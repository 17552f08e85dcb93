"""A verdict and why, in words: the badge every view draws first, and the cause after it.

:func:`badge` is how a verdict is said everywhere (the fleet's verdict cell, the
banner's first line, ``babysit status``): its glyph and its word, and for a LIVE run
with hints the ``⚠`` and their count, so that a degraded LIVE never reads as a healthy
one. :func:`why` says a :class:`~tui.core.cause.Cause` (decided in tui/core/cause.py)
in one line, its short gist first: ``out of memory: RuntimeError: Not enough memory. …``.
"""

from __future__ import annotations

import signal

from tui.core.cause import Cause, CauseKind
from tui.core.verdicts import DEGRADED_GLYPH, Verdict

#: Cells a badge takes at most (``◆ AMBIGUOUS``, ``● LIVE ⚠ 99``): views pad to it.
BADGE_WIDTH = 11


def degraded(verdict: Verdict, hints: int) -> bool:
    """Whether a verdict with ``hints`` hints reads as degraded: LIVE with at least one."""
    return verdict is Verdict.LIVE and hints > 0


def badge_parts(verdict: Verdict, hints: int = 0) -> tuple[str, str]:
    """``("● LIVE", "⚠ 2")``: the verdict's glyph and word, and its degraded mark (``""``
    unless it is LIVE with hints)."""
    mark = f"{DEGRADED_GLYPH} {hints}" if degraded(verdict, hints) else ""
    return f"{verdict.glyph} {verdict.word}", mark


def badge(verdict: Verdict, hints: int = 0) -> str:
    """``● LIVE``, ``● LIVE ⚠ 2``, ``✖ DEAD``."""
    main, mark = badge_parts(verdict, hints)
    return f"{main} {mark}" if mark else main


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal 77`` for one without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: The gist of the causes that need no more than their kind.
GISTS = {
    CauseKind.OOM: "out of memory",
    CauseKind.LOG_REPLACED: "log replaced",
    CauseKind.LOG_NOT_WRITTEN: "log not written",
    CauseKind.NO_FAILURE_LINE: "no failure line",
}


def gist(cause: Cause) -> str:
    """A few words: ``out of memory``, ``RuntimeError``, ``killed by SIGKILL``,
    ``exit 1``, ``no failure line``, ``log replaced``."""
    kind = cause.kind
    if kind is CauseKind.ERROR:
        return cause.line.exception if cause.line is not None and cause.line.exception else "error"
    if kind is CauseKind.SIGNAL:
        number = cause.signal
        return f"killed by {signal_name(number)}" if number is not None else "signal"
    if kind is CauseKind.EXIT:
        return f"exit {cause.exit_code}"
    return GISTS[kind]


def exit_words(cause: Cause) -> str:
    """``exit 137 (SIGKILL), OOMKilled``; ``""`` when the exit is not known."""
    parts = []
    if cause.exit_code is not None:
        number = cause.signal
        named = f" ({signal_name(number)})" if number is not None else ""
        parts.append(f"exit {cause.exit_code}{named}")
    if cause.oom_killed:
        parts.append("OOMKilled")
    return ", ".join(parts)


def why(cause: Cause) -> str:
    """The cause in one line, its gist first (a view cuts it to its width):
    ``out of memory: RuntimeError: Not enough memory. … (log byte 4650)``,
    ``no failure line; last line: Application startup complete.``,
    ``log replaced: it writes deleted inode 2146741``."""
    said = gist(cause)
    exit_said = exit_words(cause)
    line = cause.line
    if cause.kind is CauseKind.LOG_REPLACED:
        what = "deleted inode" if cause.deleted else "another file, inode"
        said += f": it writes {what} {cause.writes}"
    elif cause.kind is CauseKind.LOG_NOT_WRITTEN:
        said += ": the run does not write the file at the log's path"
    elif line is not None:
        text = line.text
        if cause.kind is CauseKind.SIGNAL:
            said += f" ({text})"
        elif cause.kind is CauseKind.ERROR and said in text:  # the exception's own line
            said = text
        else:
            said += f": {text}"
        if exit_said:
            said += f"; {exit_said}"
    elif exit_said:
        if not exit_said.startswith(said):
            said += f": {exit_said}"
        else:
            said = exit_said
    elif cause.last_line is not None:
        said += f"; last line: {cause.last_line.text}"
    return said
