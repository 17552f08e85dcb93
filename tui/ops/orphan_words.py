"""Orphans on a service's GPUs in words: for a relaunch's refusal, the kill's confirmation
and ``babysit kill --orphans``."""

from __future__ import annotations

from collections.abc import Sequence

from tui.core.gpu import Orphan
from tui.core.orphan_words import command_short
from tui.core.sanitize import printable
from tui.core.units import human_age
from tui.ops.kill_outcome import mib_text

#: Characters of an orphan's command line shown before it is cut.
MAX_COMMAND = 80
#: Orphans named one by one before the rest are only counted.
MAX_NAMED = 8


def command_words(orphan: Orphan, width: int = MAX_COMMAND) -> str:
    """Its command line, secrets redacted and cut at ``width``."""
    return command_short(orphan.cmdline, width)


def memory_words(orphan: Orphan) -> str:
    """``19.1 GiB on GPU 1``; ``memory unknown on GPU 1``."""
    held = mib_text(orphan.memory_mib) if orphan.memory_mib is not None else "memory unknown"
    return f"{held} on GPU {orphan.gpu if orphan.gpu is not None else '?'}"


def orphan_text(orphan: Orphan) -> str:
    """``pid 4242 (19.1 GiB on GPU 1, VLLM::Worker_TP1)``."""
    return f"pid {orphan.pid} ({memory_words(orphan)}, {command_words(orphan)})"


def orphans_text(orphans: Sequence[Orphan]) -> str:
    """``orphans pid 4242 (…), pid 4243 (…)``, the first :data:`MAX_NAMED` named."""
    named = ", ".join(orphan_text(o) for o in orphans[:MAX_NAMED])
    more = f" and {len(orphans) - MAX_NAMED} more" if len(orphans) > MAX_NAMED else ""
    return f"orphan{'s' if len(orphans) != 1 else ''} {named}{more}"


def started_words(orphan: Orphan, now: float) -> str:
    """``started 3 min ago`` (``now`` on the host's clock, as ``started_at``)."""
    return f"started {human_age(now - orphan.started_at)} ago"


def orphan_line(orphan: Orphan, now: float) -> str:
    """One orphan as ``babysit kill --orphans`` lists it before the kill."""
    user = f", user {printable(orphan.user)}" if orphan.user else ""
    return (
        f"pid {orphan.pid}: {memory_words(orphan)}, {started_words(orphan, now)}, parent "
        f"pid {orphan.ppid}{user}: {command_words(orphan)}"
    )
