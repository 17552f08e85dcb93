"""The client connections open to a run's serving port: pending work the log may not show.

A run's ``clients`` in the probe answer (read by tui/core/serving.py ``Clients``)::

    {"source": "netlink", "port": 30000, "open": 3,
     "clients": [{"peer": "127.0.0.1:53312", "quiet_ms": 181000, "waiting_ms": 181000}]}

The connections counted are the established TCP sockets whose own port is the port
(the service's ``port``, else every port the run's processes listen on) and whose
inode one of the run's processes holds. A connection whose other end is held by
babysit's own processes (an agent's /health, /metrics or canary) or by the run itself
(its workers' connections to one another) is no client. Over netlink each one has
its times from the kernel's tcp_info: ``quiet_ms`` since the server last sent on it,
``waiting_ms`` since the client last sent when the server has sent nothing after
that (a request not answered at all), else null. Where netlink is refused, or the
run is in another network namespace (a container on a bridge network), its
namespace's /proc/PID/net/tcp gives the counts alone (``source: "proc"``, times null).
All runs of one probe share one netlink dump, and one table read per namespace.
"""

import os

from .protocol import AGENT_MARK
from .sockets import (
    established_by_netlink,
    established_by_proc,
    listening_by_proc,
    listening_sockets,
)

#: Client connections listed in a run's ``clients`` at most (tui/core/serving.py
#: MAX_CLIENTS_SHOWN): the longest waiting first, then the longest quiet.
MAX_CLIENTS = 16
SOURCE_NETLINK = "netlink"
SOURCE_PROC = "proc"
SOCKET_LINK = "socket:["


def socket_inodes(links):
    """The socket inodes among a process's fd links."""
    return set(
        int(target[len(SOCKET_LINK) : -1])
        for _, target in links
        if target.startswith(SOCKET_LINK) and target.endswith("]")
    )


def net_namespace(pid):
    try:
        return os.readlink("/proc/%d/ns/net" % pid)
    except OSError:
        return None


class RunSockets(object):
    """One run's processes as the clients count needs them: the socket inodes they
    hold, their network namespace and the ports to count on."""

    def __init__(self, view, run, port):
        self.run = run
        self.pids = [run["pid"]] + [m["pid"] for m in run.get("members") or []]
        self.inodes = set()
        self.readable = False
        for pid in self.pids:
            links = view.links(pid)
            if links is not None:
                self.readable = True
                self.inodes |= socket_inodes(links)
        namespace = net_namespace(run["pid"])
        self.namespace = None if namespace == net_namespace(os.getpid()) else namespace
        self.port = port
        self.ports = set([port]) if port else set()

    @property
    def root(self):
        """Where this run's namespace's tables are: /proc/PID for another namespace."""
        return "/proc/%d" % self.run["pid"] if self.namespace else "/proc"

    @property
    def needs_listeners(self):
        """Whether the ports to count on come from what the run listens on: no port
        was given, or the run is in a namespace of its own, where the service's port
        (this host's) may be mapped to another."""
        return not self.port or bool(self.namespace)

    def find_ports(self, listening):
        """The ports the run's processes listen on (``listening``: port -> {inode: uid}
        of its namespace), or the service's port when the run listens on it there."""
        held = set(p for p, sockets in listening.items() if self.inodes & set(sockets))
        self.ports = set([self.port]) if self.port in held else held


def add_clients(view, wanted):
    """Give each run of ``wanted`` ([(run, the service's port or None)]) its ``clients``,
    when its sockets can be read and a port is known."""
    runs = [RunSockets(view, run, port) for run, port in wanted]
    runs = [r for r in runs if r.readable]
    listening = {}
    for r in runs:
        if r.needs_listeners:
            if r.root not in listening:
                here = not r.namespace
                listening[r.root] = listening_sockets() if here else listening_by_proc(r.root)
            r.find_ports(listening[r.root])
    runs = [r for r in runs if r.ports]
    if not runs:
        return
    tables = {}
    here = set().union(*[r.ports for r in runs if not r.namespace] or [set()])
    if here:
        try:
            tables["/proc"] = (SOURCE_NETLINK, established_by_netlink(here))
        except (OSError, ValueError):
            tables["/proc"] = (SOURCE_PROC, established_by_proc(here))
    for r in runs:
        if r.root not in tables:
            ports = set().union(*[o.ports for o in runs if o.root == r.root])
            tables[r.root] = (SOURCE_PROC, established_by_proc(ports, r.root))
    not_clients = OwnSockets(view)
    for r in runs:
        source, connections = tables[r.root]
        r.run["clients"] = clients_of(r, source, connections, not_clients)


class OwnSockets(object):
    """The socket inodes of babysit's own processes on this host (this agent, the
    processes above it, any other agent), read once, when first asked."""

    def __init__(self, view):
        self.view = view
        self._inodes = None

    def holds(self, inode):
        if self._inodes is None:
            pids = set(self.view.own) | set(
                pid
                for pid, info in self.view.table.items()
                if any(AGENT_MARK in part for part in info["cmdline"])
            )
            self._inodes = set()
            for pid in pids:
                self._inodes |= socket_inodes(self.view.links(pid) or [])
        return inode in self._inodes


def clients_of(run_sockets, source, connections, not_clients):
    """The ``clients`` of one run from its namespace's ``connections``."""
    ends = dict(((c.local, c.local_port, c.peer, c.peer_port), c.inode) for c in connections)
    served = []
    for c in connections:
        if c.local_port not in run_sockets.ports or c.inode not in run_sockets.inodes:
            continue
        other = ends.get((c.peer, c.peer_port, c.local, c.local_port))
        if other is not None and (other in run_sockets.inodes or not_clients.holds(other)):
            continue
        served.append(c)
    shown = sorted(served, key=waiting_then_quiet)[:MAX_CLIENTS]
    return {
        "source": source,
        "port": min(run_sockets.ports) if len(run_sockets.ports) == 1 else None,
        "open": len(served),
        "clients": [client_json(c) for c in shown],
    }


def waiting_ms(connection):
    """Milliseconds since the client's last data when the server sent nothing after it:
    it last sent before it last received, or it never sent data on this connection
    while the client did (a request sent as the connection opened: both times are
    then counted from the same millisecond)."""
    sent, recv = connection.last_sent_ms, connection.last_recv_ms
    if sent is None or recv is None:
        return None
    never_answered = connection.data_out == 0 and bool(connection.data_in)
    return recv if sent > recv or never_answered else None


def waiting_then_quiet(connection):
    waiting = waiting_ms(connection)
    quiet = connection.last_sent_ms
    return (waiting is None, -(waiting or 0), quiet is None, -(quiet or 0))


def client_json(connection):
    peer = connection.peer
    if ":" in peer:
        peer = "[%s]" % peer
    return {
        "peer": "%s:%d" % (peer, connection.peer_port),
        "quiet_ms": connection.last_sent_ms,
        "waiting_ms": waiting_ms(connection),
    }
