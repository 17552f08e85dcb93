"""The ``orphans`` hint: processes hold memory on the service's GPUs and belong to no
live run of any service hosts.yaml names for the host (:mod:`tui.core.orphans`).

A tensor-parallel worker or an EngineCore its API server left behind, or a run
started by hand, keeps its GPU memory until it is killed: the next launch on those
GPUs dies for want of memory, with no word of why. The hint names each process (pid,
user, memory, GPU, its command line redacted and shortened, when it started, its
parent) and whose worker it looks like, and says what to do. It blocks the service
as a crash loop or a death line does, so it comes first among the hints.
"""

from __future__ import annotations

from tui.core.gpu import Orphan, ServiceGpus
from tui.core.hint import Hint, HintRule
from tui.core.hostclock import HostWords
from tui.core.orphan_words import command_short
from tui.core.sanitize import printable

#: Orphans the evidence names one by one (the others are counted).
ORPHANS_NAMED = 8
#: Characters of an orphan's command line the evidence shows.
COMMAND_SHOWN = 120
#: What the person can do, as the host screen and relaunch offer it.
WHAT_TO_DO = "K offers to kill them; babysit relaunch refuses while they hold the GPUs"


def orphans(gpus: ServiceGpus | None) -> Hint | None:
    """Processes hold memory on the service's GPUs for no configured service's run."""
    if gpus is None or not gpus.orphans:
        return None
    found = gpus.orphans
    now = gpus.apps_read_at if gpus.apps_read_at is not None else max(o.started_at for o in found)
    words = HostWords(gpus.utc_offset, now)
    pids = list(dict.fromkeys(o.pid for o in found))
    known = [o.memory_mib for o in found if o.memory_mib is not None]
    held = f"{sum(known):,.0f} MiB" if known else "memory"
    who = f"process {pids[0]}" if len(pids) == 1 else f"{len(pids)} processes"
    listed = ", ".join(str(pid) for pid in pids[:ORPHANS_NAMED])
    more = f" and {len(pids) - ORPHANS_NAMED} more" if len(pids) > ORPHANS_NAMED else ""
    named = "" if len(pids) == 1 else f" ({listed}{more})"
    message = (
        f"{who}{named} {'holds' if len(pids) == 1 else 'hold'} {held} on this service's GPUs "
        "and belong to no run of a configured service (workers a dead server left behind, "
        f"or a run started by hand): the next launch may fail for want of memory; {WHAT_TO_DO}"
    )
    evidence = [_evidence(o, words) for o in found[:ORPHANS_NAMED]]
    if len(found) > ORPHANS_NAMED:
        evidence.append(f"{len(found) - ORPHANS_NAMED} more rows of nvidia-smi's process list")
    return Hint(HintRule.ORPHANS, message, tuple(evidence))


def _evidence(orphan: Orphan, words: HostWords) -> str:
    user = f" (user {printable(orphan.user)})" if orphan.user else ""
    memory = f"{orphan.memory_mib:,.0f} MiB" if orphan.memory_mib is not None else "memory"
    gpu = f"GPU {orphan.gpu}" if orphan.gpu is not None else "a GPU nvidia-smi did not name"
    looks = f"; it looks like a worker of {printable(orphan.worker_of)}" if orphan.worker_of else ""
    return (
        f"pid {orphan.pid}{user} holds {memory} on {gpu}, started {words.when(orphan.started_at)}, "
        f"parent {orphan.ppid}: {command_short(orphan.cmdline, COMMAND_SHOWN)}{looks}"
    )
