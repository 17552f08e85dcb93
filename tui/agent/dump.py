"""The dump mode: everything that may explain a hang, gathered without changing anything.

The request and the answer are documented at MODE_DUMP (tui/agent/protocol.py).
The agent checks first that the pid is still the run it was asked about (its start
ticks, on the same boot); nothing is read of any other process. Then, for the run's
root and every process below it, the stacks (tui/agent/stacks.py: py-spy, else the
kernel's view), why ptrace was denied when it was (tui/agent/ptrace.py),
nvidia-smi's text and process list, the last lines of this run's log (from its
anchor on, out of at most the file's last MAX_LOG_READ bytes), the service's last
run record and its startups.json. Nothing is signalled, written or changed.
"""

import json
import os
import sys
import time

from .candidates import last_record
from .files import cannot_read, open_file
from .nvidia import nvidia_smi
from .procfs import boot_facts, process_table, start_ticks_of
from .protocol import STARTUPS_FILE
from .ptrace import denied_why, ptrace_facts
from .stacks import PY_SPY_TIMEOUT, find_py_spy, kernel_view, py_spy_dump
from .users import user_name

#: Processes of one run whose stacks are taken.
MAX_PROCESSES = 256
#: Log lines sent when the request does not say.
DEFAULT_LINES = 200
#: Bytes of the log's end read at most.
MAX_LOG_READ = 1024 * 1024
#: Bytes of nvidia-smi's text kept.
MAX_NVIDIA_TEXT = 256 * 1024
#: Bytes of startups.json read at most.
MAX_STARTUPS = 256 * 1024
#: Characters of stacks one answer holds at most: the processes past it are named only.
MAX_STACKS_TEXT = 64 * 1024 * 1024


def dump(args):
    """The dump mode: one JSON answer on stdout."""
    sys.stdout.write(json.dumps(dump_answer(args)))
    sys.stdout.write("\n")
    return 0


def dump_answer(args):
    started = time.monotonic()
    pid, ticks = int(args["pid"]), args.get("start_ticks")
    boot_id = boot_facts()[0]
    answer = {
        "run": {"pid": pid, "start_ticks": ticks, "same": False, "boot_id": boot_id},
        "processes": [],
        "processes_cut": False,
        "py_spy": None,
        "ptrace": ptrace_facts(),
        "nvidia_smi": None,
        "log": None,
        "record": None,
        "startups": None,
        "startups_problem": None,
        "problem": None,
        "taken_at": time.time(),
    }
    now_ticks = start_ticks_of(pid)
    asked_boot = args.get("boot_id")
    if asked_boot and asked_boot != boot_id:
        answer["problem"] = "the host booted again since: process %d is not the run" % pid
    elif now_ticks is None:
        answer["problem"] = "process %d is gone: nothing was gathered" % pid
    elif now_ticks != ticks:
        answer["problem"] = (
            "process %d is another process now (it started at another time): "
            "nothing was gathered" % pid
        )
    else:
        answer["run"]["same"] = True
        gather(args, pid, answer)
    answer["elapsed_s"] = time.monotonic() - started
    return answer


def gather(args, pid, answer):
    py_spy = find_py_spy(args.get("py_spy"))
    answer["py_spy"] = py_spy
    table = process_table()
    if table.get(pid, {}).get("start_ticks") != answer["run"]["start_ticks"]:
        answer["run"]["same"] = False
        answer["problem"] = "process %d ended as it was asked about: nothing was gathered" % pid
        return
    members, cut = run_tree(table, pid)
    answer["processes_cut"] = cut
    timeout = float(args.get("timeout") or PY_SPY_TIMEOUT)
    held = 0
    for info in members:
        if held > MAX_STACKS_TEXT:
            entry = process_facts(info)
            entry["problem"] = "not read: the dump holds %d MiB of stacks already" % (
                MAX_STACKS_TEXT // (1024 * 1024)
            )
        else:
            entry = stacks_of(info, info["pid"] == pid, py_spy, timeout, answer)
        held += len(json.dumps(entry))
        answer["processes"].append(entry)
    answer["nvidia_smi"] = nvidia_texts()
    answer["log"] = log_lines(args)
    record_dir = args.get("record_dir")
    if record_dir:
        answer["record"] = last_record(record_dir)
        answer["startups"], answer["startups_problem"] = startups_of(record_dir)


def run_tree(table, root):
    """([the root's facts, then every process below it's], whether some were left out)."""
    children = {}
    for info in table.values():
        children.setdefault(info["ppid"], []).append(info["pid"])
    order, todo = [], [root]
    while todo and len(order) < MAX_PROCESSES:
        pid = todo.pop(0)
        if pid in table:
            order.append(table[pid])
        todo.extend(sorted(children.get(pid, ())))
    return order, bool(todo)


def process_facts(info):
    """A process's entry of the answer, its stacks not read yet."""
    return {
        "pid": info["pid"],
        "ppid": info["ppid"],
        "comm": info["comm"],
        "cmdline": info["cmdline"],
        "start_ticks": info["start_ticks"],
        "user": user_name(info["uid"]),
        "how": "proc",
        "stack": None,
        "threads": [],
        "wchan": None,
        "status": None,
        "threads_cut": False,
        "problem": None,
    }


def stacks_of(info, is_root, py_spy, timeout, answer):
    pid = info["pid"]
    entry = process_facts(info)
    if start_ticks_of(pid) != info["start_ticks"]:
        entry["problem"] = "gone before its stacks were read"
        return entry
    denied = False
    if py_spy is not None:
        text, problem, denied = py_spy_dump(py_spy, pid, timeout)
        if text is not None:
            entry["how"], entry["stack"] = "py-spy", text
            answer["ptrace"]["allowed"] = True
            return entry
        entry["problem"] = problem
    else:
        entry["problem"] = "no py-spy on this host (PATH, ~/.local/bin, /usr/local/bin)"
    view = kernel_view(pid, is_root)
    for key in ("stack", "threads", "wchan", "status", "threads_cut"):
        entry[key] = view[key]
    if denied or view["stack_denied"]:
        ptrace = answer["ptrace"]
        ptrace["allowed"] = False
        if ptrace["why"] is None:
            ptrace["why"] = denied_why(ptrace, pid, user_name)
    return entry


def nvidia_texts():
    status, text, error = nvidia_smi()
    apps_status, apps, apps_error = nvidia_smi(
        "--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv"
    )
    return {
        "status": status,
        "text": text[:MAX_NVIDIA_TEXT],
        "error": error.strip()[-300:],
        "apps_status": apps_status,
        "apps": apps[:MAX_NVIDIA_TEXT],
        "apps_error": apps_error.strip()[-300:],
    }


def log_lines(args):
    """The last ``lines`` lines of the log, from the run's ``anchor`` on when the file
    is the run's (its ``dev`` and ``inode``), out of at most MAX_LOG_READ bytes."""
    path = args.get("log")
    out = {"path": path, "dev": None, "inode": None, "offset": None, "lines": []}
    out.update({"from_anchor": False, "cut": False, "problem": None})
    if not path:
        out["problem"] = "the service names no log file"
        return out
    try:
        fd = open_file(path)
    except OSError as error:
        out["problem"] = cannot_read(path, error)
        return out
    try:
        st = os.fstat(fd)
        out["dev"], out["inode"] = st.st_dev, st.st_ino
        anchor = args.get("anchor")
        asked = (args.get("dev"), args.get("inode"))
        if anchor is not None and asked[1] is not None and asked != (st.st_dev, st.st_ino):
            out["problem"] = "the file at %s is inode %d, not the run's %s: its last lines" % (
                path,
                st.st_ino,
                asked[1],
            )
            anchor = None
        if anchor is not None and anchor > st.st_size:
            out["problem"] = "the log is shorter than the run's anchor: it was cut since"
            anchor = None
        start = max(anchor or 0, st.st_size - MAX_LOG_READ)
        os.lseek(fd, start, os.SEEK_SET)
        data = b""
        while len(data) < st.st_size - start:
            chunk = os.read(fd, min(MAX_LOG_READ, st.st_size - start - len(data)))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    out["from_anchor"] = anchor is not None and start == anchor
    if start > (anchor or 0) and b"\n" in data:
        skipped = data.index(b"\n") + 1  # a line begun before the bytes read
        data, start = data[skipped:], start + skipped
    pieces = data.split(b"\n")
    if pieces and not pieces[-1]:
        pieces.pop()
    wanted = max(0, int(args.get("lines") or DEFAULT_LINES))
    kept = pieces[len(pieces) - min(wanted, len(pieces)) :]
    before = pieces[: len(pieces) - len(kept)]
    out["cut"] = bool(before) or start > (anchor or 0)
    out["offset"] = start + sum(len(piece) + 1 for piece in before)
    out["lines"] = [piece.rstrip(b"\r").decode("utf-8", "replace") for piece in kept]
    return out


def startups_of(record_dir):
    """(the service's startups.json, or None; why it could not be read, or None)."""
    path = os.path.join(os.path.expanduser(record_dir), STARTUPS_FILE)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_STARTUPS + 1)
    except FileNotFoundError:
        return None, None
    except OSError as error:
        return None, "%s cannot be read: %s" % (path, error.strerror or error)
    if len(raw) > MAX_STARTUPS:
        return None, "%s is bigger than %d KiB: not read" % (path, MAX_STARTUPS // 1024)
    try:
        return json.loads(raw.decode("utf-8")), None
    except ValueError as error:
        return None, "%s is not JSON: %s" % (path, error)
