"""The kill mode: SIGTERM a verified tree, wait the grace, SIGKILL what is left, then
wait (at most the grace again) for the GPU memory the killed processes held (killgpu).

A kill runs in a worker of its own (forked, setsid'd, its stdio on /dev/null), so it
finishes on the host whatever becomes of the channel that asked for it: the lifeline's
SIGTERM, a dropped connection, the caller's process group ended, EOF on stdin. The
front process only relays the worker's steps to the caller. Every step is also kept in
``<record_dir>/kills/<kill id>.json`` (killlog), which a caller that lost the channel
reads back.
"""

import os
import sys
import time

from .killgpu import look, wait_gpu_free
from .killlog import KillLog, kill_record_path
from .nvidia import gpu_index_of_uuid
from .procfs import read_text, start_ticks_of, uid_name_of
from .protocol import (
    KILL_CHANGED,
    KILL_DONE,
    KILL_ERROR,
    KILL_EXITED,
    KILL_GONE,
    KILL_REFUSED,
    KILL_SIGNALLED,
    KILL_STARTED,
)
from .signals import gone, pidfd_open, send_signal
from .sockets import port_owners
from .view import ProcessView

#: Seconds SIGKILLed processes get to be gone.
KILL_WAIT = 10.0
#: The bound on a run's processes when the caller gives none (one rank's worth).
DEFAULT_MAX_PROCESSES = 50
MAX_GRACE = 3600.0


def own_processes(view):
    """{pid: what it is} for babysit's own processes here: babysit and what is above it
    when the caller runs on this very machine; this agent and every process above it (the
    shells, the sshd session or pct exec that carry its channel); babysit's other agents."""
    own = {}
    for pid in view.client:
        own[pid] = "babysit itself, or a process above it (its shell or terminal)"
    for pid in view.chain:
        own.setdefault(
            pid,
            "babysit's agent for this kill"
            if pid == view.me
            else "above babysit's agent on this host: it carries babysit's own connection",
        )
    for pid, info in view.table.items():
        # ProcessView.alive is the one place that tells babysit's agents from the rest.
        if pid not in own and info["state"] != "Z" and not view.alive(pid):
            own[pid] = "one of babysit's agents"
    return own


def kill_refusal(args, view):  # noqa: PLR0911 - one return per reason
    """Why this kill must not send a single signal, or None."""
    nothing = "; nothing was signalled"
    if args.get("boot_id") and args["boot_id"] != view.boot_id:
        return "the host rebooted since the run was seen" + nothing
    try:
        grace = float(args.get("grace", 30))
    except (TypeError, ValueError):
        grace = float("nan")
    if not 0 < grace <= MAX_GRACE:  # also false for nan
        return "the grace must be more than 0 and at most %g seconds" % MAX_GRACE + nothing
    targets = [(t["pid"], t["start_ticks"]) for t in args["targets"]]
    if any(pid == 1 for pid, _ in targets):
        return (
            "pid 1 is init (the first process of this host or container): babysit never "
            "signals it" + nothing
        )
    own = own_processes(view)
    for pid, ticks in targets:
        info = view.table.get(pid)
        if pid in own and info is not None and info["start_ticks"] == ticks:
            return "pid %d (%s) is %s: babysit never signals its own processes%s" % (
                pid,
                info["comm"],
                own[pid],
                nothing,
            )
    bound = int(args.get("max_processes") or DEFAULT_MAX_PROCESSES)
    why = (
        "more than this service could have (at most %d); it may be a shell, a session or "
        "init matched by mistake" % bound
    )
    if len(targets) > bound:
        return "the run has %d processes, %s%s" % (len(targets), why, nothing)
    root, ticks = targets[0]
    info = view.table.get(root)
    if info is not None and info["start_ticks"] == ticks:
        now = 1 + len(view.descendants(root))
        if now > bound:
            return (
                "the run's tree has grown to %d processes since it was confirmed (%d then), %s%s"
                % (
                    now,
                    len(targets),
                    why,
                    nothing,
                )
            )
    return None


def kill(args):
    """SIGTERM the verified tree, wait the grace, SIGKILL what is left; report as we go.

    Refused, with the reason, before any signal: another boot, pid 1, any of babysit's
    own processes, a tree larger than the service could have. Otherwise the work is done
    by a detached worker (see above) and this process relays its steps."""
    path = kill_record_path(args)
    header = {"kill_id": args.get("kill_id"), "targets": args["targets"], "port": args.get("port")}
    refused = kill_refusal(args, ProcessView(args.get("client")))
    if refused is not None:
        return refuse_kill(path, header, refused)
    return in_kill_worker(path, header, lambda log: run_kill(args, log))


def refuse_kill(path, header, reason, **fields):
    """Say and record why a kill sends nothing; the mode's exit status."""
    log = KillLog(path, header, out_fd=1)
    log.emit(KILL_REFUSED, reason=reason, **fields)
    log.finish(3)
    return 3


def in_kill_worker(path, header, work):
    """Run ``work(log)`` in a detached worker that keeps its steps in the kill's record
    at ``path``, relaying them to stdout while the channel lasts; its exit status."""
    sys.stdout.flush()
    read_fd, write_fd = os.pipe()
    worker = os.fork()
    if worker == 0:
        status = 1
        try:
            os.close(read_fd)
            detach()
            import fcntl

            flags = fcntl.fcntl(write_fd, fcntl.F_GETFL)
            fcntl.fcntl(write_fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
            log = KillLog(path, header, out_fd=write_fd)
            log.emit(KILL_STARTED, worker=os.getpid(), record=path if log.saved else None)
            try:
                status = work(log)
            except Exception as error:  # said in the record, never lost with the channel
                log.emit(KILL_ERROR, message="%s: %s" % (type(error).__name__, error))
            log.finish(status)
        finally:
            os._exit(status)
    os.close(write_fd)
    relay(read_fd)
    _, wait_status = os.waitpid(worker, 0)
    return os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else 1


def detach():
    """The worker leaves the caller's session and stdio: nothing aimed at the channel's
    processes (a lifeline's SIGTERM, a group's SIGKILL, a hangup, a closed pipe) reaches it."""
    import signal as signal_module

    os.setsid()
    for name in ("SIGHUP", "SIGINT", "SIGPIPE"):
        signal_module.signal(getattr(signal_module, name), signal_module.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def relay(read_fd):
    """The worker's lines to stdout until the worker ends; once stdout fails, keep
    draining (so the worker never waits on us) but stop writing."""
    writing = True
    while True:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        while writing and chunk:
            try:
                chunk = chunk[os.write(1, chunk) :]
            except OSError:
                writing = False
    os.close(read_fd)


def run_kill(args, log):
    handles = []
    for target in args["targets"]:
        pid, ticks = target["pid"], target["start_ticks"]
        try:
            pidfd = pidfd_open(pid)
        except ProcessLookupError:
            log.emit(KILL_GONE, pid=pid)
            continue
        now_ticks = start_ticks_of(pid)
        if now_ticks is None:
            log.emit(KILL_GONE, pid=pid)
        elif now_ticks != ticks:
            log.emit(KILL_CHANGED, pid=pid, start_ticks=now_ticks)
            if pidfd is not None:
                os.close(pidfd)
        else:
            handles.append((pid, ticks, pidfd))
    gpus = args.get("gpus") or []
    # What the run holds now: what the wait sees freed; without gpus:, the service's GPUs.
    before = look() if handles else None
    signalled = set()
    method = "pidfd" if all(h[2] is not None for h in handles) else "kill after re-check"
    for pid, ticks, pidfd in handles:
        if pidfd is None and start_ticks_of(pid) != ticks:
            log.emit(KILL_CHANGED, pid=pid, start_ticks=start_ticks_of(pid))
            continue
        try:
            send_signal(pid, pidfd, 15)
            signalled.add(pid)
            log.emit(KILL_SIGNALLED, pid=pid, signal="SIGTERM", method=method)
        except (ProcessLookupError, OSError):
            log.emit(KILL_GONE, pid=pid)
    deadline = time.time() + float(args.get("grace", 30))
    alive = list(handles)
    while alive and time.time() < deadline:
        still = []
        for handle in alive:
            if gone(*handle):
                log.emit(KILL_EXITED, pid=handle[0])
            else:
                still.append(handle)
        alive = still
        if alive:
            time.sleep(0.1)
    for pid, ticks, pidfd in alive:
        if pidfd is None and start_ticks_of(pid) != ticks:
            continue
        try:
            send_signal(pid, pidfd, 9)
            signalled.add(pid)
            log.emit(KILL_SIGNALLED, pid=pid, signal="SIGKILL", method=method)
        except (ProcessLookupError, OSError):
            pass
    deadline = time.time() + KILL_WAIT
    while alive and time.time() < deadline:
        alive = [h for h in alive if not gone(*h)]
        if alive:
            time.sleep(0.1)
    for _pid, _ticks, pidfd in handles:
        if pidfd is not None:
            os.close(pidfd)
    pids = [h[0] for h in handles]
    after, freed = None, None
    if handles and not alive:
        after, freed = wait_gpu_free(log, before, set(pids), float(args.get("grace", 30)))
    if freed is None:
        if handles:
            time.sleep(float(args.get("settle", 0.5)))
        after = look()
    apps = after["apps"] if after is not None else None
    held = gpu_held(gpus, pids, signalled, before["apps"] if before else None, apps)
    if held is not None and freed is not None:
        held.update(freed)
    log.emit(
        KILL_DONE,
        remaining=[h[0] for h in alive],
        port_owners=port_owners(args["port"]) if args.get("port") else [],
        gpu_apps=apps,
        gpu=held,
    )
    return 0 if not alive and not (held or {}).get("held") else 1


def gpu_held(gpus, pids, signalled, before, after):
    """What holds memory on the service's GPUs once the kill is over, whoever it is (a
    process that escaped the tree holds it as surely as one that was signalled).

    The service's GPUs are its ``gpus:`` indexes; without them, the GPUs the run's
    processes held memory on just before the first signal. None when there is nothing to
    check (no gpus: and no nvidia-smi); ``checked`` false with the reason when it cannot be."""
    if after is None:
        if not gpus:
            return None
        return {"checked": False, "reason": "nvidia-smi did not answer on the host"}
    index_of = gpu_index_of_uuid()
    if not index_of:
        return {"checked": False, "reason": "nvidia-smi did not list the GPUs' uuids"}
    if gpus:
        scope, source = set(gpus), "gpus"
    else:
        scope = set(index_of.get(a["gpu_uuid"]) for a in before or [] if a["pid"] in pids)
        scope.discard(None)
        source = "run"
        if not scope:
            return (
                None
                if before is None
                else {
                    "checked": False,
                    "reason": "the service names no gpus: and nvidia-smi listed none of the "
                    "run's processes (inside a container it may show the host's pids)",
                }
            )
    held = []
    for app in after:
        index = index_of.get(app["gpu_uuid"])
        if index in scope and (app["used_mib"] or 0) > 0:
            held.append(
                {
                    "pid": app["pid"],
                    "used_mib": app["used_mib"],
                    "gpu": index,
                    "user": uid_name_of(app["pid"]),
                    "command": command_of(app["pid"]),
                    "signalled": app["pid"] in signalled,
                }
            )
    return {"checked": True, "source": source, "gpus": sorted(scope), "held": held}


def command_of(pid):
    """A process's title as ``ps`` shows it: its first argument (a worker's retitled name,
    ``VLLM::Worker_TP1``), else its comm; None when it cannot be read."""
    first = read_text("/proc/%d/cmdline" % pid).split("\0")[0]
    return first or read_text("/proc/%d/comm" % pid).strip() or None
