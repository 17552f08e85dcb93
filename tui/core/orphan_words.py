"""Orphans on a service's GPUs in plain words, said the same on every view.

An :class:`~tui.core.gpu.Orphan` holds GPU memory and belongs to no live run. The
host screen's banner and ``babysit status`` say how many hold how much on which GPUs
(:func:`orphans_words`); the fleet's row note says it in a few cells
(:func:`orphans_note`); ``babysit status`` lists each one (:func:`orphan_line`).
Command lines are shown with their secrets redacted and cut to
:data:`COMMAND_CHARS`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.core.gpu import Orphan
from tui.core.hostclock import HostWords
from tui.core.sanitize import printable
from tui.core.secrets import command_text

#: Characters of an orphan's command line shown; the rest is cut with ``…``.
COMMAND_CHARS = 60
MIB_PER_GIB = 1024


def orphans_memory(orphans: Sequence[Orphan]) -> float | None:
    """MiB the orphans hold, summed over those nvidia-smi gave a figure for; None when it
    gave none."""
    known = [o.memory_mib for o in orphans if o.memory_mib is not None]
    return sum(known) if known else None


def _counted(orphans: Sequence[Orphan]) -> str:
    return f"{len(orphans)} orphan{'s' if len(orphans) != 1 else ''}"


def _gpus(orphans: Sequence[Orphan]) -> str:
    indexes = sorted({o.gpu for o in orphans if o.gpu is not None})
    if not indexes:
        return "the service's GPUs"
    return f"GPU{'s' if len(indexes) > 1 else ''} {', '.join(str(i) for i in indexes)}"


def orphans_words(orphans: Sequence[Orphan]) -> str:
    """``2 orphans hold 38.2 GiB on GPUs 0, 1`` (``1 orphan holds …``; ``memory`` when
    nvidia-smi gave no figure)."""
    memory = orphans_memory(orphans)
    held = f"{memory / MIB_PER_GIB:.1f} GiB" if memory is not None else "memory"
    verb = "holds" if len(orphans) == 1 else "hold"
    return f"{_counted(orphans)} {verb} {held} on {_gpus(orphans)}"


def orphans_note(orphans: Sequence[Orphan]) -> str:
    """``2 orphans · 38 GiB``: the fleet row's note."""
    memory = orphans_memory(orphans)
    if memory is None:
        return _counted(orphans)
    return f"{_counted(orphans)} · {memory / MIB_PER_GIB:.0f} GiB"


def command_short(cmdline: Sequence[str], chars: int = COMMAND_CHARS) -> str:
    """The command line in one printable line, secrets redacted, at most ``chars``
    characters (its end cut with ``…``)."""
    text = printable(command_text(cmdline)) if cmdline else "(no command line)"
    return text if len(text) <= chars else text[: chars - 1] + "…"


def orphan_line(orphan: Orphan, words: HostWords) -> str:
    """``pid 4242 · 19.1 GiB on GPU 0 · started 09:10:02 (12 min ago) · VLLM::Worker_TP1``,
    with ``· a worker of qwen`` when it carries that service's engine's worker title."""
    gpu = f"on GPU {orphan.gpu}" if orphan.gpu is not None else "on its GPU"
    if orphan.memory_mib is not None:
        held = f"{orphan.memory_mib / MIB_PER_GIB:.1f} GiB {gpu}"
    else:
        held = f"{gpu} (memory unknown)"
    parts = [
        f"pid {orphan.pid}",
        held,
        f"started {words.when(orphan.started_at)}",
        command_short(orphan.cmdline),
    ]
    if orphan.worker_of:
        parts.append(f"a worker of {printable(orphan.worker_of)}")
    return " · ".join(parts)
