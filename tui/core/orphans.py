"""Orphans: processes holding memory on a service's GPUs that belong to no live run of
any service hosts.yaml names for the host.

The agent lists, with nvidia-smi's process list, who each process it can see is
(``gpu_csv.procs``: its start, parent, user, command line) and which configured
service's live run holds it (``owner``), probed or not. Here that list and the apps
list become the service's :class:`~tui.core.gpu.Orphan` s:

* a row of nvidia-smi's process list whose process holds memory (more than 0 MiB,
  or an amount nvidia-smi cannot say) and whose ``owner`` is null;
* on one of the service's GPUs: those hosts.yaml gives it (``gpus:``); without
  them, the GPUs its live run holds memory on; when it holds none (no run, or one
  still loading), every GPU of the host — a row whose GPU is unknown counts only then;
* a pid the agent cannot see (a container's host pids) has no entry and is never an
  orphan; neither is a process of the service's own run.

One orphan per (process, GPU) row, the largest memory first. Every string a host
gave is made printable here, where the answer is read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from tui.core.gpu import AppsQuery, ComputeApp, GpuQuery, Orphan, ServiceGpus
from tui.core.sanitize import printable


@dataclass(frozen=True)
class GpuProc:
    """Who one process nvidia-smi lists is, as the agent saw it (``gpu_csv.procs``)."""

    pid: int
    start_ticks: int
    started_at: float
    ppid: int
    cmdline: tuple[str, ...]
    comm: str = ""
    uid: int | None = None
    user: str | None = None
    #: the configured service whose live run holds it, None when none does
    owner: str | None = None
    #: the service whose engine's worker title it carries, when it does
    worker_of: str | None = None


def read_procs(raw: object) -> dict[int, GpuProc]:
    """{pid: GpuProc} of the agent's ``procs`` list; an entry without a pid, a start
    or a parent as integers is left out (it cannot be told from another process)."""
    found: dict[int, GpuProc] = {}
    if not isinstance(raw, list):
        return found
    for item in raw:
        proc = _proc(item) if isinstance(item, Mapping) else None
        if proc is not None:
            found.setdefault(proc.pid, proc)
    return found


def _proc(item: Mapping[str, object]) -> GpuProc | None:
    pid, ticks, ppid = item.get("pid"), item.get("start_ticks"), item.get("ppid")
    started = item.get("started_at")
    if not all(_is_int(v) for v in (pid, ticks, ppid)) or not _is_number(started):
        return None
    cmdline = item.get("cmdline")
    words = cmdline if isinstance(cmdline, list) else []
    uid = item.get("uid")
    return GpuProc(
        pid=int(pid),  # type: ignore[arg-type]
        start_ticks=int(ticks),  # type: ignore[arg-type]
        started_at=float(started),  # type: ignore[arg-type]
        ppid=int(ppid),  # type: ignore[arg-type]
        cmdline=tuple(printable(w) for w in words if isinstance(w, str)),
        comm=_string(item.get("comm")) or "",
        uid=int(uid) if _is_int(uid) else None,  # type: ignore[arg-type]
        user=_string(item.get("user")),
        owner=_string(item.get("owner")),
        worker_of=_string(item.get("worker_of")),
    )


def with_orphans(
    tied: ServiceGpus,
    query: GpuQuery,
    apps: AppsQuery | None,
    procs: Mapping[int, GpuProc],
    *,
    csv: Mapping[str, object],
    run_pids: Collection[int],
    service_gpus: Sequence[int],
    utc_offset: int,
) -> ServiceGpus:
    """``tied`` (the service's GPUs as attribute made them) with its orphans among
    ``procs`` (:func:`read_procs` of the agent's ``procs`` in ``csv``), and the host's
    offset its times are said in. When the agent could not tell whose some processes
    are, the note says so."""
    orphans = find_orphans(query, apps, procs, run_pids, service_gpus)
    problem = csv.get("owners_problem")
    note = tied.note
    if isinstance(problem, str) and problem:
        note += (
            "; whose some GPU processes are could not be told (none of them is taken for "
            f"an orphan): {printable(problem)}"
        )
    return replace(tied, orphans=orphans, utc_offset=utc_offset, note=note)


def find_orphans(
    query: GpuQuery,
    apps: AppsQuery | None,
    procs: Mapping[int, GpuProc],
    run_pids: Collection[int],
    service_gpus: Sequence[int] = (),
) -> tuple[Orphan, ...]:
    """The service's orphans (see the module's rule), the largest memory first."""
    if query.problem is not None or apps is None or apps.problem is not None:
        return ()
    mine = set(run_pids)
    scope = set(service_gpus)
    if not scope:
        scope = {a.gpu for a in apps.apps if a.pid in mine and a.gpu is not None and _holds(a)}
    everywhere = not scope
    if everywhere:
        scope = {g.index for g in query.gpus}
    found = []
    for app in apps.apps:
        proc = procs.get(app.pid)
        if proc is None or proc.owner is not None or app.pid in mine or not _holds(app):
            continue
        if (app.gpu is None and not everywhere) or (app.gpu is not None and app.gpu not in scope):
            continue
        found.append(
            Orphan(
                pid=proc.pid,
                start_ticks=proc.start_ticks,
                memory_mib=app.used_memory,
                gpu=app.gpu,
                cmdline=proc.cmdline,
                started_at=proc.started_at,
                ppid=proc.ppid,
                user=proc.user,
                worker_of=proc.worker_of,
            )
        )
    found.sort(key=lambda o: (-(o.memory_mib or 0.0), o.pid, -1 if o.gpu is None else o.gpu))
    return tuple(found)


def _holds(app: ComputeApp) -> bool:
    return app.used_memory is None or app.used_memory > 0


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _string(value: object) -> str | None:
    return printable(value) if isinstance(value, str) else None
