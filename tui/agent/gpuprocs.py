"""Who each process nvidia-smi lists is, and which configured service's run owns it.

A probe answer's ``gpu_csv.procs`` (tui/agent/protocol.py, "probe extras"): one entry
per pid of nvidia-smi's process list that this agent can see, babysit's own processes
left out. ``owner`` is the service whose live run (its root or a process below it)
holds the pid: first the probed services' runs, as the probe found them; then, only
when a pid is left without one, the runs of the request's ``gpu_owners`` (the host's
other configured services), found as for a probed service but without readiness,
tails or /health. ``worker_of`` is the service whose engine's worker title it carries
(the one whose log it writes, when it is that service's leftover).

Ownership is read afresh at every probe, whatever the age of the process list: a
server that died since makes its workers' rows unowned at once.
"""

from .candidates import LogFile, find_candidates, split_leftovers, worker_title
from .container import container_facts
from .containerprobe import container_run
from .users import user_name

#: Entries of ``procs`` at most (nvidia-smi lists a few per GPU).
MAX_PROCS = 256
#: Characters of one process's command line kept, at most (the words past it are cut).
CMDLINE_KEPT = 4096


def listed_pids(apps_csv):
    """The pids of nvidia-smi's process list, in its order, each once."""
    pids = []
    for line in (apps_csv or "").splitlines():
        first = line.split(",", 1)[0].strip()
        if first.isdigit() and int(first) not in pids:
            pids.append(int(first))
    return pids


def gpu_procs(view, apps_csv, services, entries, gpu_owners):
    """(the ``procs`` entries, a problem in words or None). A pid no run owns while an
    owner's runs could not be found is left out (never taken for an orphan), and the
    problem says why."""
    seen = [
        pid
        for pid in listed_pids(apps_csv)[:MAX_PROCS]
        if pid in view.table and pid not in view.own and view.alive(pid)
    ]
    owner_of, worker_owner = {}, {}
    # A probed service whose probe failed is looked for again, as an owner is.
    unprobed = list(gpu_owners or [])
    for i, service in enumerate(services):
        entry = entries[i]
        if entry.get("error") is not None:
            unprobed.append(service)
        _own(owner_of, service.get("name"), run_pids(entry.get("runs") or []))
        for pid in entry.get("leftovers") or []:
            worker_owner.setdefault(pid, service.get("name"))
    problem = None
    if any(pid not in owner_of for pid in seen):
        for owner in unprobed:
            try:
                runs, leftovers = owner_runs(view, owner)
            except Exception as error:  # this owner's runs are unknown: said, never fatal
                problem = "the runs of %s could not be found: %s" % (owner.get("name"), error)
                continue
            _own(owner_of, owner.get("name"), runs)
            for pid in leftovers:
                worker_owner.setdefault(pid, owner.get("name"))
    titled = [(s.get("name"), s.get("workers") or []) for s in list(services) + list(gpu_owners)]
    procs = []
    for pid in seen:
        owner = owner_of.get(pid)
        if owner is None and problem is not None:
            continue
        procs.append(
            describe(view, pid, owner, worker_owner.get(pid) or _worker_of(view, pid, titled))
        )
    return procs, problem


def _own(owner_of, name, pids):
    for pid in pids:
        owner_of.setdefault(pid, name)


def run_pids(runs):
    """Every pid of the runs: each root and the processes below it."""
    return [member["pid"] for run in runs for member in [run, *run.get("members", [])]]


def owner_runs(view, owner):
    """(the pids of the live runs of a ``gpu_owners`` service, its leftover workers)."""
    if owner.get("container"):
        ref = owner["container"]
        run = container_run(view, container_facts(ref["name"], ref.get("runtime") or "docker"))
        return (run_pids([run]) if run is not None else []), []
    sources, _, _ = find_candidates(view, owner, LogFile(owner["log"]))
    roots, leftovers = split_leftovers(
        view, view.roots(set(sources)), sources, owner.get("workers")
    )
    pids = []
    for root in roots:
        pids.append(root)
        pids.extend(view.descendants(root))
    return pids, leftovers


def _worker_of(view, pid, titled):
    """The one service whose engine's worker title the process carries (None when no
    service's does, or several services' do)."""
    info = view.table[pid]
    names = [name for name, workers in titled if worker_title(info, workers) is not None]
    return names[0] if len(set(names)) == 1 else None


def describe(view, pid, owner, worker_of):
    """One ``procs`` entry."""
    info = view.table[pid]
    cmdline, used = [], 0
    for word in info["cmdline"]:
        if used + len(word) > CMDLINE_KEPT:
            cmdline.append(word[: max(0, CMDLINE_KEPT - used)])
            break
        cmdline.append(word)
        used += len(word)
    return {
        "pid": pid,
        "start_ticks": info["start_ticks"],
        "started_at": view.btime + info["start_ticks"] / float(view.hz),
        "ppid": info["ppid"],
        "uid": info["uid"],
        "user": user_name(info["uid"]),
        "cmdline": cmdline,
        "comm": info["comm"],
        "owner": owner,
        "worker_of": worker_of,
    }
