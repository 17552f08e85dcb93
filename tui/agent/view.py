"""One consistent look at the host's processes, and babysit's own among them."""

import os

from .procfs import boot_facts, fd_links, open_files, process_table
from .protocol import AGENT_MARK
from .sockets import listening_sockets
from .users import user_name


class ProcessView(object):
    """One consistent look at the host's processes, with per-pid caches for this probe."""

    def __init__(self, client=None):
        self.boot_id, self.btime, self.hz = boot_facts()
        self.table = process_table()
        self.me = os.getpid()
        self.children = {}
        for info in self.table.values():
            self.children.setdefault(info["ppid"], []).append(info["pid"])
        self._files = {}
        self._links = {}
        self._listening = None
        # babysit's own processes here: this agent and every process above it (the
        # shells and the session that started it, and the babysit client when it runs
        # on this host), which may hold a service's log open for their own output.
        # Never pid 1, which may be the server itself in a container.
        self.chain = [self.me]
        pid = os.getppid()
        while pid > 1 and pid in self.table and pid not in self.chain:
            self.chain.append(pid)
            pid = self.table[pid]["ppid"]
        # The babysit that asks, and what is above it, when it runs on this very host
        # (same boot; each pid still with the start it had there).
        self.client = []
        if client and client.get("boot_id") == self.boot_id:
            for pid, ticks in client.get("processes") or []:
                info = self.table.get(pid)
                if info is not None and info["start_ticks"] == ticks:
                    self.client.append(pid)
        self.own = set(self.chain) | set(self.client)

    def listening(self, port):
        """{socket inode: owner uid} of the sockets listening on ``port``."""
        if self._listening is None:
            self._listening = listening_sockets()
        return self._listening.get(port, {})

    def files(self, pid):
        if pid not in self._files:
            self._files[pid] = open_files(pid)
        return self._files[pid]

    def links(self, pid):
        if pid not in self._links:
            self._links[pid] = fd_links(pid)
        return self._links[pid]

    def alive(self, pid):
        """A live process that is not one of babysit's agents (this one included), nor a
        shell that started one. (The processes above this agent are in ``own``.)"""
        info = self.table.get(pid)
        if info is None or pid == self.me or info["state"] == "Z":
            return False
        # An agent's command line is python3 -I -S -c BOOTSTRAP, and BOOTSTRAP names the
        # agent; the shells that started one hold that text too. No request's text is in
        # any command line (requests travel on stdin), so none can forge or hide this.
        return not any(AGENT_MARK in part for part in info["cmdline"])

    def descendants(self, pid):
        out, stack = [], list(self.children.get(pid, []))
        while stack:
            child = stack.pop()
            out.append(child)
            stack.extend(self.children.get(child, []))
        return sorted(out)

    def describe(self, pid, sources):
        info = self.table[pid]
        files = self.files(pid)
        try:
            cwd = os.readlink("/proc/%d/cwd" % pid)
        except OSError:
            cwd = None
        return {
            "pid": pid,
            "ppid": info["ppid"],
            "pgrp": info["pgrp"],
            "start_ticks": info["start_ticks"],
            "start_time": self.btime + info["start_ticks"] / float(self.hz),
            "uid": info["uid"],
            "user": user_name(info["uid"]),
            "cmdline": info["cmdline"],
            "cwd": cwd,
            "children": self.descendants(pid),
            "sources": sorted(sources),
            "files": files,
            "readable": files is not None,
        }

    def roots(self, candidates):
        """Candidates that are not below another candidate: one per run."""
        roots = []
        for pid in sorted(candidates):
            parent = self.table[pid]["ppid"]
            inside = False
            while parent in self.table and parent > 1:
                if parent in candidates:
                    inside = True
                    break
                parent = self.table[parent]["ppid"]
            if not inside:
                roots.append(pid)
        return roots
