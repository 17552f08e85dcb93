"""A container's facts from its runtime's CLI (``docker inspect``), read on the host.

The answer's shape is the ``container`` object described in tui/core/containers.py.
The CLI is run with an argv list (never a shell), with a timeout, and what it says
when it cannot answer (no CLI, no daemon, no such container) is kept in its own
words as ``problem``.
"""

import calendar
import json
import os
import re
import time

#: Seconds one runtime CLI call may take.
RUNTIME_TIMEOUT = 15.0
#: Docker's zero time (a container never started or never finished).
ZERO_YEAR = "0001-"
_RFC3339 = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")
#: Processes listed of one container's cgroup, at most.
MAX_CGROUP_PIDS = 4096
#: How far back the daemon's event log is asked for a removed container's last exit
#: (the daemon itself keeps only its last few hundred events).
EVENTS_WINDOW = 24 * 3600
#: A container id, or the start of one, as hosts.yaml may give it.
HEX_ID = re.compile(r"^[0-9a-f]{12,64}$")
#: Lines of ``docker events`` read, at most (the last ones are the newest).
MAX_EVENTS = 1024


def docker_time(text):
    """Epoch seconds of an RFC 3339 time as Docker writes it (nanoseconds, Z or an
    offset); None for the zero time or what is not such a time."""
    if not isinstance(text, str) or text.startswith(ZERO_YEAR):
        return None
    match = _RFC3339.match(text)
    if not match:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = float("0." + match.group(7)) if match.group(7) else 0.0
    zone = match.group(8)
    offset = 0
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    try:
        base = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    except (OverflowError, ValueError):
        return None
    return base - offset + fraction


def run_runtime(runtime, args, timeout=RUNTIME_TIMEOUT):
    """(exit status, stdout, stderr) of the runtime's CLI; 127 when it cannot run."""
    import subprocess

    try:
        done = subprocess.run(
            [runtime, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 124, b"", ("%s did not answer within %g s" % (runtime, timeout)).encode()
    except (OSError, subprocess.SubprocessError) as error:
        return 127, b"", ("%s not found on the host (%s)" % (runtime, error)).encode()
    return done.returncode, done.stdout, done.stderr


def runtime_words(stderr):
    """The last line the runtime's CLI wrote to stderr, without its ``Error:`` prefix."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    last = lines[-1] if lines else ""
    for prefix in ("Error: ", "Error response from daemon: ", "Error: error "):
        if last.startswith(prefix):
            last = last[len(prefix) :]
    return last[:300]


def cgroup_pids(pid):
    """The host pids in the cgroup of ``pid`` (``pid`` first), or [pid] when the cgroup
    cannot be read. cgroup v2 has one path; v1 is read through its pids (or memory)
    hierarchy."""
    try:
        with open("/proc/%d/cgroup" % pid) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return [pid]
    candidates = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            candidates.append("/sys/fs/cgroup" + path)
            candidates.append("/sys/fs/cgroup/unified" + path)
        elif "pids" in controllers.split(","):
            candidates.insert(0, "/sys/fs/cgroup/pids" + path)
        elif "memory" in controllers.split(","):
            candidates.append("/sys/fs/cgroup/memory" + path)
    for directory in candidates:
        try:
            with open(os.path.join(directory, "cgroup.procs")) as handle:
                found = [int(p) for p in handle.read().split()[:MAX_CGROUP_PIDS] if p.isdigit()]
        except (OSError, ValueError):
            continue
        if pid in found:
            return [pid, *sorted(p for p in found if p != pid)]
    return [pid]


def container_facts(ref, runtime="docker"):
    """The ``container`` object of a probe answer for the container ``ref``."""
    facts = {"ref": ref, "runtime": runtime, "found": False, "problem": None}
    status, out, err = run_runtime(runtime, ["inspect", "--type", "container", "--", ref])
    if status != 0:
        words = runtime_words(err) or "%s inspect exited with status %d" % (runtime, status)
        if "no such container" in words.lower() or "no such object" in words.lower():
            facts["problem"] = "no container %s on this host (%s)" % (ref, words)
            facts["absent"] = True
            if runtime == "docker":
                facts["last_exit"] = last_exit(runtime, ref)
        else:
            facts["problem"] = words
        return facts
    try:
        found = json.loads(out.decode("utf-8", "replace"))
        data = found[0]
        state = data.get("State") or {}
        host = data.get("HostConfig") or {}
        log_config = host.get("LogConfig") or {}
        policy = host.get("RestartPolicy") or {}
    except (ValueError, IndexError, KeyError, TypeError, AttributeError) as error:
        facts["problem"] = "%s inspect gave an answer babysit cannot read (%s)" % (runtime, error)
        return facts
    pid = state.get("Pid") if isinstance(state.get("Pid"), int) else 0
    facts.update(
        {
            "found": True,
            "id": data.get("Id") or "",
            "name": (data.get("Name") or "").lstrip("/"),
            "image": (data.get("Config") or {}).get("Image") or data.get("Image") or "",
            "status": state.get("Status") or "",
            "running": bool(state.get("Running")),
            "restarting": bool(state.get("Restarting")),
            "paused": bool(state.get("Paused")),
            "oom_killed": bool(state.get("OOMKilled")),
            "dead": bool(state.get("Dead")),
            "pid": pid,
            "exit_code": state.get("ExitCode") if isinstance(state.get("ExitCode"), int) else None,
            "error": state.get("Error") or "",
            "started_at": docker_time(state.get("StartedAt")),
            "finished_at": docker_time(state.get("FinishedAt")),
            "created": docker_time(data.get("Created")),
            "restart_count": data.get("RestartCount") or 0,
            "restart_policy": policy.get("Name") or "",
            "auto_remove": bool(host.get("AutoRemove")),
            "log_driver": log_config.get("Type") or "",
            "log_path": data.get("LogPath") or "",
            "log_opts": {str(k): str(v) for k, v in (log_config.get("Config") or {}).items()},
            "pids": cgroup_pids(pid) if pid > 0 else [],
        }
    )
    return facts


def last_exit(runtime, ref):
    """The last exit the daemon remembers of a container named (or with the id) ``ref``
    that is gone, from its ``die`` events: {id, exit_code, at, image}, or None. A ``--rm``
    container's exit status lives on only there once the runtime removed it."""
    # To the nanosecond: a whole second would leave out an exit within this second.
    now = time.time()
    status, out, _ = run_runtime(
        runtime,
        [
            "events",
            "--since", "%.9f" % (now - EVENTS_WINDOW),
            "--until", "%.9f" % now,
            "--filter", "type=container",
            "--filter", "event=die",
            "--filter", "container=" + ref,
            "--format", "{{json .}}",
        ],
    )  # fmt: skip
    if status != 0:
        return None
    found = None
    for line in out.splitlines()[-MAX_EVENTS:]:
        try:
            event = json.loads(line.decode("utf-8", "replace"))
            actor = event.get("Actor") or {}
            attributes = actor.get("Attributes") or {}
            cid = actor.get("ID") or event.get("id") or ""
            # The daemon's filter matches names by prefix (qwen finds qwen-2): only this
            # very name, or an id it begins.
            if attributes.get("name") != ref and not (HEX_ID.match(ref) and cid.startswith(ref)):
                continue
            code = str(attributes.get("exitCode", ""))
            found = {
                "id": cid,
                "exit_code": int(code) if code.isdigit() else None,
                "at": (event.get("timeNano") or 0) / 1e9 or event.get("time"),
                "image": attributes.get("image") or event.get("from") or "",
            }
        except (ValueError, AttributeError, TypeError):
            continue
    return found
