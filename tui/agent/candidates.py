"""Which processes may be a service's run: by command, port, log and run record."""

import json
import os
import re
import stat

from .files import stat_or_none
from .procfs import writes
from .protocol import RECORD_EARLIER_BOOT, RECORD_GONE, RECORD_PID_REUSED, RECORD_RUNNING
from .users import user_name


def last_record(record_dir):
    path = os.path.join(os.path.expanduser(record_dir), "runs.jsonl")
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 65536))
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return json.loads(line.decode("utf-8"))
        except ValueError:
            continue
    return None


def matches_launch(cmdline, launch):
    """The process runs the service's launch command: same program name and every
    launch argument, in order (the real argv may have more)."""
    if not launch or not cmdline:
        return False
    program = os.path.basename(launch[0])
    actual = os.path.basename(cmdline[0])
    if actual != program and not (program.startswith("python") and actual.startswith("python")):
        return False
    rest = iter(cmdline[1:])
    return all(any(arg == have for have in rest) for arg in launch[1:])


def record_candidate(view, record):
    """(state of babysit's last run record, its pid if that very process still runs)."""
    if record is None:
        return None, None
    pid = record.get("pid")
    if record.get("boot_id") != view.boot_id:
        return RECORD_EARLIER_BOOT, None
    if pid not in view.table:
        return RECORD_GONE, None
    if view.table[pid]["start_ticks"] != record.get("start_ticks"):
        return RECORD_PID_REUSED, None
    return RECORD_RUNNING, pid


class LogFile(object):
    """The file at a service's log path, to tell which open files are it: by device
    and inode, never by the text of a path (a symlink, a linked folder or a ``//``
    name the same file another way than the process that opened it did). A deleted
    file is the log's former self when the name it had is where the path leads."""

    def __init__(self, path):
        st = stat_or_none(path)
        regular = st is not None and stat.S_ISREG(st.st_mode)
        self.key = (st.st_dev, st.st_ino) if regular else None
        folder, base = os.path.split(path)
        self.names = set(
            [os.path.realpath(path), os.path.join(os.path.realpath(folder or "."), base)]
        )
        self.bases = set(os.path.basename(name) for name in self.names)

    def holds(self, entry):
        """Whether an entry of open_files() is this log (or its deleted former self)."""
        return (entry["dev"], entry["inode"]) == self.key or (
            entry["deleted"] and entry["path"] in self.names
        )

    def is_fd(self, pid, fd, target):
        """Whether fd ``fd`` of ``pid``, whose link reads ``target``, is this log (or its
        deleted former self). Only a file named like the log is looked at (stat on
        every open file of every process could stall on a dead network mount); its
        device and inode decide."""
        deleted = target.endswith(" (deleted)")
        name = target[: -len(" (deleted)")] if deleted else target
        if not name.startswith("/") or os.path.basename(name) not in self.bases:
            return False
        if deleted and name in self.names:
            return True
        if self.key is None:
            return False
        st = stat_or_none("/proc/%d/fd/%s" % (pid, fd))
        return st is not None and (st.st_dev, st.st_ino) == self.key


def find_candidates(view, service, log_file):
    """{pid: set of reasons} for processes that may be the service's run; the
    processes that look like it but whose files we may not read; and the sockets
    listening on its port that no process we can read holds."""
    sources = {}
    port = service.get("port")
    listeners = view.listening(port) if port else {}
    sockets = dict(("socket:[%d]" % inode, inode) for inode in listeners)
    held = set()
    pattern = re.compile(service["match"]) if service.get("match") else None
    launch = service.get("launch")
    unreadable = []
    for pid, info in view.table.items():
        if pid in view.own or not view.alive(pid) or not info["cmdline"]:
            continue
        if pattern is not None:
            by_command = pattern.search(" ".join(info["cmdline"])) is not None
        else:
            by_command = matches_launch(info["cmdline"], launch)
        links = view.links(pid)
        if links is None:
            if by_command:
                unreadable.append(
                    {
                        "pid": pid,
                        "uid": info["uid"],
                        "user": user_name(info["uid"]),
                        "cmdline": info["cmdline"],
                    }
                )
            continue
        if by_command:
            sources.setdefault(pid, set()).add("command")
        for fd, target in links:
            if target in sockets:
                held.add(sockets[target])
                sources.setdefault(pid, set()).add("port")
            elif log_file.is_fd(pid, fd, target) and writes(pid, fd):
                sources.setdefault(pid, set()).add("writes log")
    hidden = [
        {"port": port, "inode": inode, "uid": uid, "user": user_name(uid)}
        for inode, uid in sorted(listeners.items())
        if inode not in held
    ]
    return sources, unreadable, hidden


#: The bytes of a process name the kernel keeps in ``comm``.
COMM_BYTES = 15


def worker_title(info, workers):
    """The title among ``workers`` (an engine's worker titles) that the process
    ``info`` (an entry of process_table) carries, or None.

    A title is a prefix of the basename of argv[0] (what setproctitle writes), of
    argv[1] when argv[0] is a python (a console script), or of ``comm`` (what
    prctl(PR_SET_NAME) writes, cut to 15 bytes). A title longer than ``comm`` can
    hold is matched by its first 15 bytes only when argv names no other program
    (argv[0] is a python, or there is no argv): ``text-generation-launcher`` and a
    ``text-generation-server`` worker share the one ``comm``."""
    cmdline = info.get("cmdline") or []
    names = []
    pythonic = not cmdline
    if cmdline:
        first = os.path.basename(cmdline[0])
        names.append(first)
        if first.startswith("python"):
            pythonic = True
            if len(cmdline) > 1:
                names.append(os.path.basename(cmdline[1]))
    comm = info.get("comm") or ""
    for title in workers or ():
        if not title:
            continue
        if any(name.startswith(title) for name in names) or comm.startswith(title):
            return title
        cut = title.encode("utf-8")[:COMM_BYTES].decode("utf-8", "ignore")
        if pythonic and cut != title and comm and comm == cut:
            return title
    return None


def split_leftovers(view, roots, sources, workers):
    """(the roots that are runs, the pids left behind): a root that carries one of the
    engine's worker titles is a worker whose server is gone, never a run; it and the
    candidates below it are leftovers."""
    runs, leftovers = [], []
    for pid in roots:
        if worker_title(view.table[pid], workers) is None:
            runs.append(pid)
            continue
        leftovers.append(pid)
        leftovers.extend(child for child in view.descendants(pid) if child in sources)
    return runs, sorted(leftovers)
