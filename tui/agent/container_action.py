"""The container mode: stop, start or restart a service's container, or say its state.

Every action that changes the container first runs ``docker inspect`` on it by its
full id and goes on only when that id still has the StartedAt and RestartCount the
user confirmed: a container restarted since then is another run, and is left alone.
Nothing is ever addressed by name or pattern, only by the full id.

A stop is a kill: it runs in a detached worker with its steps kept in the kill's
record (kill.in_kill_worker), so it finishes whatever becomes of the channel, and
its events end as any kill's do (``done``, ``refused`` or ``error``). Start and
restart answer one line: the container as ``docker inspect`` saw it after the
action, and the facts of its log file just before it (where the new run's lines
begin).
"""

import math
import os
import time

from .container import container_facts, run_runtime, runtime_words
from .kill import KILL_WAIT, gpu_held, in_kill_worker, refuse_kill
from .killlog import kill_record_path
from .nvidia import gpu_apps
from .output import emit_line
from .procfs import read_text, start_ticks_of
from .protocol import (
    ANSWER_CONTAINER,
    ANSWER_FAILED,
    CONTAINER_INSPECT,
    CONTAINER_RESTART,
    CONTAINER_START,
    CONTAINER_STOP,
    KILL_DONE,
    KILL_ERROR,
    KILL_STOPPED,
    KILL_STOPPING,
)
from .sockets import port_owners

#: Seconds past the grace a ``docker stop`` or ``restart`` may take (the daemon's own
#: SIGKILL and the container's teardown).
STOP_SLACK = 30.0
#: Two StartedAt times closer than this are the same run's (they come from one text).
SAME_START = 1e-6


def container_action(args):
    """Run the ``action`` the request names; the mode's exit status."""
    action = args.get("action")
    if action == CONTAINER_STOP:
        return stop_container(args)
    if action in (CONTAINER_START, CONTAINER_RESTART):
        return start_container(args)
    if action == CONTAINER_INSPECT:
        return inspect_container(args)
    emit_line(ANSWER_FAILED, message="the agent has no container action %r" % (action,))
    return 2


def utc_text(ts):
    if ts is None:
        return "never"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + ("%.3fZ" % (ts % 1))[1:]


def restarted_since(facts, args, undone):
    """Why the container is not the run the user confirmed (``undone``: what is then not
    done), and whether it is the same container in a later run; (None, False) when it is."""
    ref = args["id"]
    if not facts["found"]:
        return "%s; nothing was %s" % (facts.get("problem") or "no container " + ref, undone), False
    if facts["id"] != ref:
        return "%s is now another container (%s); nothing was %s" % (
            ref[:12],
            facts["id"][:12],
            undone,
        ), True
    then, now = args.get("started_at"), facts.get("started_at")
    same_start = (then is None and now is None) or (
        then is not None and now is not None and abs(float(then) - now) < SAME_START
    )
    if not same_start or int(args.get("restart_count") or 0) != facts.get("restart_count"):
        return (
            "the container was restarted since you confirmed (started %s then, %s now; "
            "restart count %s then, %s now); nothing was %s"
            % (
                utc_text(then),
                utc_text(now),
                args.get("restart_count") or 0,
                facts.get("restart_count"),
                undone,
            ),
            True,
        )
    return None, False


def log_facts(path):
    """The container's log file now (device, inode, size), or None."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return {"path": path, "dev": st.st_dev, "inode": st.st_ino, "size": st.st_size}


def grace_seconds(args):
    """The grace as the whole seconds the runtime's ``-t`` takes (at least 1)."""
    return max(1, math.ceil(float(args.get("grace") or 30)))


def ended_facts(facts):
    """How a container ended, from its facts after a stop."""
    keys = ("found", "running", "status", "exit_code", "finished_at", "oom_killed", "error")
    return dict((key, facts.get(key)) for key in keys)


def stop_container(args):
    """``docker stop -t GRACE ID`` of the confirmed run of the container, as a kill."""
    runtime = args.get("runtime") or "docker"
    path = kill_record_path(args)
    header = {
        "kill_id": args.get("kill_id"),
        "container": args["id"],
        "targets": args.get("targets") or [],
        "port": args.get("port"),
    }
    before = container_facts(args["id"], runtime)
    refused, changed = restarted_since(before, args, "stopped")
    if refused is not None:
        return refuse_kill(path, header, refused, changed=changed)
    return in_kill_worker(path, header, lambda log: run_stop(args, runtime, before, log))


def run_stop(args, runtime, before, log):
    cid = args["id"]
    seconds = grace_seconds(args)
    gpus = args.get("gpus") or []
    pids = [int(p) for p in before.get("pids") or []]
    apps_before = gpu_apps() if pids and not gpus else None
    if before["running"] or before["restarting"] or before["paused"]:
        command = [runtime, "stop", "-t", str(seconds), cid]
        log.emit(KILL_STOPPING, command=command, grace=seconds)
        status, _, err = run_runtime(runtime, command[1:], timeout=seconds + STOP_SLACK)
        if status != 0:
            words = runtime_words(err) or "exit status %d" % status
            log.emit(KILL_ERROR, message="%s: %s" % (" ".join(command), words))
            return 1
        already = False
    else:
        already = True
    after = container_facts(cid, runtime)
    log.emit(KILL_STOPPED, already=already, **ended_facts(after))
    targets = [(t["pid"], t["start_ticks"]) for t in args.get("targets") or []]
    deadline = time.time() + KILL_WAIT
    remaining = [pid for pid, ticks in targets if start_ticks_of(pid) == ticks]
    while remaining and time.time() < deadline:
        time.sleep(0.1)
        remaining = [pid for pid, ticks in targets if start_ticks_of(pid) == ticks]
    if after.get("running"):
        remaining = remaining or [after.get("pid") or 0]
    time.sleep(float(args.get("settle", 0.5)))
    apps = gpu_apps()
    held = gpu_held(gpus, pids, set(pids), apps_before, apps)
    log.emit(
        KILL_DONE,
        remaining=remaining,
        port_owners=port_owners(args["port"]) if args.get("port") else [],
        gpu_apps=apps,
        gpu=held,
    )
    return 0 if not remaining and not (held or {}).get("held") else 1


def boot_id():
    return read_text("/proc/sys/kernel/random/boot_id").strip()


def start_container(args):
    """``docker start ID`` (a stopped container) or ``docker restart -t GRACE ID`` (a
    running one) of the confirmed run; one answer line."""
    runtime = args.get("runtime") or "docker"
    action = args["action"]
    undone = "started" if action == CONTAINER_START else "restarted"
    before = container_facts(args["id"], runtime)
    refused, changed = restarted_since(before, args, undone)
    if refused is None and action == CONTAINER_START and before["running"]:
        refused = "the container is running; nothing was started"
    if refused is not None:
        emit_line(ANSWER_FAILED, message=refused, changed=changed)
        return 3
    anchor = log_facts(before.get("log_path"))
    if action == CONTAINER_START:
        command = [runtime, "start", args["id"]]
        timeout = STOP_SLACK
    else:
        seconds = grace_seconds(args)
        command = [runtime, "restart", "-t", str(seconds), args["id"]]
        timeout = seconds + STOP_SLACK
    status, _, err = run_runtime(runtime, command[1:], timeout=timeout)
    after = container_facts(args["id"], runtime)
    if status != 0:
        words = runtime_words(err) or "exit status %d" % status
        emit_line(ANSWER_FAILED, message="%s: %s" % (" ".join(command), words), container=after)
        return 1
    emit_line(ANSWER_CONTAINER, command=command, anchor=anchor, **state_of(after))
    return 0


def state_of(facts):
    """The fields of a container answer: its facts, its first process's start ticks,
    its log file now and the host's boot id."""
    pid = facts.get("pid") or 0
    return {
        "container": facts,
        "start_ticks": start_ticks_of(pid) if pid > 0 else None,
        "log": log_facts(facts.get("log_path")),
        "boot_id": boot_id(),
    }


def inspect_container(args):
    """What ``docker inspect`` says of the container ``ref`` now."""
    facts = container_facts(args["ref"], args.get("runtime") or "docker")
    emit_line(ANSWER_CONTAINER, **state_of(facts))
    return 0
