"""The probe of a service in a container: its container, its log and its one run.

The answer's ``container`` is container_facts (see tui/core/containers.py for its
shape). The log is the service's own ``log:`` when hosts.yaml gives one, else the
container's json-file (``LogPath``, format ``docker-json``). ``runs`` holds the
container's processes as one run while the container runs (``State.Pid`` the root,
the other pids of its cgroup its members, babysit's own never among them), and no
run otherwise. The run's readiness counts from its start: in the json-file from
the first record of this run (see jsonlog), in a log of its own as any run's, when
one of the container's processes writes it. The run is kept in the service's run
history as any run (see phases.startup_history).
"""

import stat

from .candidates import LogFile
from .container import container_facts
from .files import stat_or_none
from .jsonlog import json_log_times, json_readiness
from .logfacts import log_facts
from .phases import startup_history
from .readiness import readiness

#: The log format of a container's json-file (tui/core/containers.py DOCKER_JSON).
FORMAT_DOCKER_JSON = "docker-json"
FORMAT_PLAIN = "plain"
#: The runtime and log driver whose file babysit reads as a json-file.
JSON_RUNTIME = "docker"
JSON_DRIVER = "json-file"
#: Why a run's processes are the run's, in its ``sources``.
SOURCE_CONTAINER = "container"


def container_entry(view, service):
    """The service entry of a probe answer for a ``container:`` service (without the
    fields probe_service adds for every service: health, GPUs, /metrics)."""
    ref = service["container"]
    facts = container_facts(ref["name"], ref.get("runtime") or "docker")
    tail_bytes = int(service.get("tail_bytes") or 0)
    own_log = service.get("log") or ""
    if own_log:
        log = dict(log_facts(own_log, tail_bytes, service.get("stamps")), format=FORMAT_PLAIN)
    else:
        log = container_log(facts, tail_bytes)
    runs = []
    run = container_run(view, facts)
    if run is not None:
        mark_log_files(run, log.get("path") or "")
        if own_log:
            if writes_this_log(run, log):
                run["ready"] = readiness(own_log, run, None, service)
        elif log.get("format") == FORMAT_DOCKER_JSON and log.get("path"):
            run["ready"] = json_readiness(
                log["path"], run_bound(facts), facts.get("started_at"), service
            )
        else:  # no file to read it in (another log driver): /health tells
            run["ready"] = {"anchor": None, "seen": None, "source": log.get("problem") or "no log"}
        runs.append(run)
    entry = {
        "name": service["name"],
        "container": facts,
        "log": log,
        "runs": runs,
        "unreadable": [],
        "hidden_listeners": [],
        "record": None,
        "record_state": None,
    }
    entry.update(startup_history(service, view.boot_id, runs))
    return entry


def container_log(facts, tail_bytes):
    """The log facts of the container's json-file (see logfacts.log_facts), its
    ``first_ts`` and ``last_ts`` the times of its first and last records; a
    container whose log is no json-file babysit can read says why in ``problem``."""
    path = facts.get("log_path") or ""
    if not facts.get("found"):
        return {"path": "", "exists": False, "regular": False, "format": FORMAT_DOCKER_JSON}
    driver = facts.get("log_driver") or "unknown"
    if facts.get("runtime") != JSON_RUNTIME or driver != JSON_DRIVER or not path:
        log = {"path": path, "exists": False, "regular": False, "format": FORMAT_PLAIN}
        st = stat_or_none(path) if path else None
        log["exists"] = st is not None and stat.S_ISREG(st.st_mode)
        log["problem"] = "container %s logs through %s's %s driver, no file babysit reads " % (
            facts.get("name") or facts.get("ref"),
            facts.get("runtime"),
            driver,
        ) + "as a log: its lines come from `%s logs`" % facts.get("runtime")
        return log
    log = dict(log_facts(path, tail_bytes, ()), format=FORMAT_DOCKER_JSON)
    if log.get("regular") and "problem" not in log:
        log["first_ts"], log["last_ts"] = json_log_times(path, log["dev"], log["inode"])
    return log


def run_bound(facts):
    """The earliest time a json-file record of the container's current run may carry,
    or None when every record is this run's. A record of an earlier run was read
    before that run finished; the current run's first lines may be read a little
    before docker stamps its StartedAt. So the bound is the last run's FinishedAt
    when docker kept one that precedes StartedAt, else StartedAt; a container that
    never finished a run has only this one's records."""
    started, finished = facts.get("started_at"), facts.get("finished_at")
    if finished is None:
        return None
    if started is None or finished <= started:
        return finished
    return started


def container_run(view, facts):
    """The container's processes as one run (see module doc), or None when it does
    not run: exited, created, restarting, dead, or its first process is not seen."""
    if not facts.get("running") or facts.get("restarting"):
        return None
    root = facts.get("pid") or 0
    if root <= 0 or root not in view.table or root in view.own:
        return None
    run = view.describe(root, [SOURCE_CONTAINER])
    members = [
        pid
        for pid in facts.get("pids") or []
        if pid != root and pid in view.table and pid not in view.own and view.alive(pid)
    ]
    run["members"] = [view.describe(pid, [SOURCE_CONTAINER]) for pid in members]
    return run


def mark_log_files(run, path):
    """Each open file of the run's processes, with ``at_log``: it is the log at ``path``."""
    log_file = LogFile(path) if path else None
    for member in [run, *run["members"]]:
        if member["files"] is not None:
            member["files"] = [
                dict(f, at_log=log_file is not None and log_file.holds(f)) for f in member["files"]
            ]


def writes_this_log(run, log):
    """Whether a process of ``run`` has the log (by device and inode) open for writing."""
    return bool(log.get("regular")) and any(
        f["write"] and (f["dev"], f["inode"]) == (log["dev"], log["inode"])
        for member in [run, *run["members"]]
        for f in (member["files"] or [])
    )
