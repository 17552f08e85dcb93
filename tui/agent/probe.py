"""Which run is this? The probe and serve-probes modes.

One round trip answers it for a list of services: the processes that could be each
service's run, what files they hold open, the log's inode and timestamps, and where
this run's bytes begin in the log.
"""

import json
import os
import sys
import time

from .candidates import (
    LogFile,
    find_candidates,
    last_record,
    record_candidate,
    split_leftovers,
)
from .clients import add_clients
from .containerprobe import container_entry, writes_this_log
from .gpu import gpu_readings
from .logfacts import log_facts
from .phases import startup_history
from .readiness import readiness
from .view import ProcessView


def http_text(port, path="/metrics", limit=4 * 1024 * 1024):
    """(status, body text) of a GET on loopback, or (None, the error) when it fails."""
    try:
        import urllib.request

        url = "http://127.0.0.1:%d%s" % (port, path)  # always http on loopback
        with urllib.request.urlopen(url, timeout=2.0) as r:  # noqa: S310
            return r.status, r.read(limit).decode("utf-8", "replace")
    except Exception as error:  # any failure is an answer here
        return getattr(error, "code", None), str(error)


def http_status(port, path="/health"):
    try:
        import urllib.request

        url = "http://127.0.0.1:%d%s" % (port, path)  # always http on loopback
        with urllib.request.urlopen(url, timeout=1.0) as r:  # noqa: S310
            return r.status
    except Exception as error:  # any failure (refused, timeout, HTTP error) is an answer
        code = getattr(error, "code", None)
        return code if isinstance(code, int) else None


def probe_service(view, service):
    """The service's entry of a probe answer: its log, its candidate runs and, when the
    log cannot tell whether the run is ready, the answer of its /health."""
    if service.get("container"):
        entry = container_entry(view, service)
    else:
        entry = process_entry(view, service)
    # Only when the log cannot tell (readiness unknown, or no ready line in a log that
    # may have lost the run's first bytes): SGLang answers /health by running a
    # generation, which would add a line to its log and work to its GPU on every refresh.
    health = None
    unsure = any(
        run["ready"].get("seen") is None or run["ready"].get("cut")
        for run in entry["runs"]
        if "ready" in run
    )
    asked = bool(service.get("port") and service.get("health", True) and unsure)
    if asked:
        health = http_status(service["port"])
    entry.update(
        {
            "health": health,
            "health_asked": asked,
            "gpu_csv": False,  # True once probe() read the host's GPUs for it (see probe())
            "prometheus": http_text(service["port"]) if service.get("prometheus") else None,
        }
    )
    return entry


def process_entry(view, service):
    """The entry of a service found by its processes: those that run its launch
    command or match its ``match:``, listen on its port or write its log. A candidate
    that carries one of the engine's worker titles below no other candidate is a
    worker its server left behind: one of ``leftovers``, never a run."""
    log_path = service["log"]
    try:
        log = log_facts(log_path, int(service.get("tail_bytes") or 0), service.get("stamps"))
    except OSError as error:
        raise ServiceFailed("cannot read the log %s: %s" % (log_path, reason_of(error))) from None
    log_file = LogFile(log_path)
    record = last_record(service["record_dir"]) if service.get("record_dir") else None
    record_state, record_pid = record_candidate(view, record)
    sources, unreadable, hidden = find_candidates(view, service, log_file)
    if record_pid is not None and record_pid not in view.own and view.alive(record_pid):
        sources.setdefault(record_pid, set()).add("record")
    roots, leftovers = split_leftovers(
        view, view.roots(set(sources)), sources, service.get("workers")
    )
    runs = []
    for pid in roots:
        run = view.describe(pid, sources[pid])
        run["members"] = []
        for child in run["children"]:
            if child in sources:
                run["sources"] = sorted(set(run["sources"]) | sources[child])
            run["members"].append(view.describe(child, sources.get(child, ())))
        for member in [run, *run["members"]]:
            if member["files"] is not None:
                member["files"] = [dict(f, at_log=log_file.holds(f)) for f in member["files"]]
        if writes_this_log(run, log):
            try:
                run["ready"] = readiness(
                    log_path, run, record if "record" in run["sources"] else None, service
                )
            except OSError as error:
                raise ServiceFailed(
                    "cannot read the log %s: %s" % (log_path, reason_of(error))
                ) from None
        runs.append(run)
    entry = {
        "name": service["name"],
        "log": log,
        "runs": runs,
        "unreadable": unreadable,
        "hidden_listeners": hidden,
        "record": record,
        "record_state": record_state,
        "leftovers": leftovers,
    }
    # the run history: when each phase of the run that writes the log began
    entry.update(startup_history(service, view.boot_id, runs))
    return entry


class ServiceFailed(Exception):
    """What went wrong probing one service, in plain words."""


def reason_of(error):
    if isinstance(error, ServiceFailed):
        return str(error)
    if isinstance(error, OSError) and error.strerror:
        if error.filename:
            return "%s: %s" % (error.filename, error.strerror)
        return error.strerror
    return "%s: %s" % (type(error).__name__, error)


def probe(args):
    view = ProcessView(args.get("client"))
    services = args.get("services", [])
    entries = []
    for service in services:
        # What fails for one service (a log on a failing disk) is that service's answer.
        try:
            entries.append(probe_service(view, service))
        except Exception as error:  # any failure is this service's answer
            entries.append({"name": service.get("name"), "error": reason_of(error), "runs": []})
    # After every service's /health and /metrics: no connection of this agent is open.
    # The clients are evidence for the runs: what fails there fails no service's answer.
    clients_problem = None
    try:
        add_clients(view, serving_runs(services, entries))
    except Exception as error:  # any failure is said in the answer
        clients_problem = reason_of(error)
    # The host's GPUs are read once and sent once, whichever services asked for them:
    # each of those says so (gpu_csv: true) and takes the answer's own gpu_csv.
    wanting = [entries[i] for i, s in enumerate(services) if s.get("gpus") is not None]
    readings = None
    if wanting:
        readings = gpu_readings(
            view,
            services,
            entries,
            float(args.get("apps_max_age") or 0),
            args.get("gpu_owners") or [],
        )
        for entry in wanting:
            entry["gpu_csv"] = True
    return {
        "boot_id": view.boot_id,
        "boot_time": view.btime,
        "now": time.time(),
        "utc_offset": time.localtime().tm_gmtoff,
        "uid": os.getuid(),
        "hostname": os.uname()[1],
        "agent_pid": os.getpid(),
        "services": entries,
        "gpu_csv": readings,
        "clients_problem": clients_problem,
    }


def serving_runs(services, entries):
    """[(run, the service's port or None)] of every run that serves its service: it
    writes the service's log (it has ``ready``), or it is the service's container."""
    return [
        (run, service.get("port") or None)
        for i, service in enumerate(services)
        for run in entries[i]["runs"]
        if "ready" in run or "container" in entries[i]
    ]


def probe_once(args):
    """The probe mode: one JSON answer for the services ``args`` asks about."""
    sys.stdout.write(json.dumps(probe(args)))
    sys.stdout.write("\n")
    return 0


def serve_probes(_start):
    """The serve-probes mode (``_start``, its first request, asks no probe itself).
    Answer probe requests, one JSON line each on stdin, with one JSON line each on
    stdout, until stdin closes. Each answer is a fresh look: nothing is kept between
    requests but the uid→name cache and nvidia-smi's last process list (reused only
    as gpu_readings allows). A request that fails is answered with ``{"error": ...}``
    and the agent waits for the next one."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        line = stdin.readline()
        if not line:
            return 0
        try:
            answer = probe(json.loads(line.decode("utf-8")))
        except Exception as error:
            answer = {"error": "%s: %s" % (type(error).__name__, error)}
        try:
            stdout.write(json.dumps(answer).encode("utf-8") + b"\n")
            stdout.flush()
        except OSError:  # the reader is gone
            return 0
