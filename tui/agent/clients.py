"""The client connections open to a run's serving port: pending work the log may not show.

A run's ``clients`` in the probe answer (read by tui/core/serving.py ``Clients``)::

    {"source": "netlink", "port": 30000, "open": 3,
     "clients": [{"peer": "127.0.0.1:53312", "quiet_ms": 181000, "waiting_ms": 181000}]}

The connections counted are the established TCP sockets whose own port is the port
(the service's ``port``, else every port the run's processes listen on; in a network
namespace of its own, where this host's port may be mapped to another, the service's
port when the run listens on it there, else the ports it listens on) and whose inode
one of the run's processes holds. A connection whose other end is held by babysit's
own processes (an agent's /health, /metrics or canary) or by the run itself (its
workers' connections to one another) is no client. Over netlink each one has its
times from the kernel's tcp_info: ``quiet_ms`` since the server last sent on it,
``waiting_ms`` since the client last sent when the server has sent nothing after
that (a request not answered at all), else null. Where netlink is refused, or the
run is in another network namespace (a container on a bridge network), its
namespace's /proc/PID/net/tcp gives the counts alone (``source: "proc"``, times null).

Listing connections makes the kernel walk its whole connection hash table, which
takes milliseconds on a host with much memory however idle it is. So the tables are
read only for runs whose processes hold TCP sockets other than their listeners (sockfs
tells a TCP socket from the others), once per probe for all of them: one netlink
dump, of the address families they use, and one table read per other namespace.
"""

import os

from .protocol import AGENT_MARK
from .sockets import (
    INET_FAMILIES,
    established_by_netlink,
    established_by_proc,
    listening_by_proc,
    listening_sockets,
    tcp_family,
)

#: Client connections listed in a run's ``clients`` at most (tui/core/serving.py
#: MAX_CLIENTS_SHOWN): the longest waiting first, then the longest quiet.
MAX_CLIENTS = 16
SOURCE_NETLINK = "netlink"
SOURCE_PROC = "proc"
SOCKET_LINK = "socket:["
#: Where the tables of the agent's own network namespace are.
OWN_TABLES = "/proc"


def tcp_sockets(pid, links):
    """{inode: AF_INET, AF_INET6 or None (not told)} of the TCP sockets among a
    process's fd links."""
    found = {}
    for fd, target in links:
        if target.startswith(SOCKET_LINK) and target.endswith("]"):
            family = tcp_family("/proc/%d/fd/%s" % (pid, fd))
            if family != 0:
                found[int(target[len(SOCKET_LINK) : -1])] = family
    return found


def net_namespace(pid):
    try:
        return os.readlink("/proc/%d/ns/net" % pid)
    except OSError:
        return None


class RunSockets(object):
    """One run's processes as the clients count needs them: the TCP sockets they hold,
    their network namespace and the ports to count on."""

    def __init__(self, view, run, port, own_namespace):
        self.run = run
        self.tcp = {}
        self.readable = False
        for pid in [run["pid"]] + [m["pid"] for m in run.get("members") or []]:
            links = view.links(pid)
            if links is not None:
                self.readable = True
                self.tcp.update(tcp_sockets(pid, links))
        namespace = net_namespace(run["pid"])
        self.namespace = None if namespace == own_namespace else namespace
        self.root = "/proc/%d" % run["pid"] if self.namespace else OWN_TABLES
        self.port = port
        self.ports = set([port]) if port else set()
        #: {inode: family} of its TCP sockets that listen on no port
        self.connected = {}

    def sort_sockets(self, listening):
        """Tell its listeners from its connections (``listening``: port -> {inode: uid}
        of its namespace), and with no port given, or in a namespace of its own where
        the service's port (this host's) may be mapped to another, count on the ports
        the run listens on (the service's port when it listens on that one)."""
        listeners = set()
        held = set()
        for port, sockets in listening.items():
            mine = set(sockets) & set(self.tcp)
            if mine:
                held.add(port)
                listeners |= mine
        if not self.port or self.namespace:
            self.ports = set([self.port]) if self.port in held else held
        self.connected = dict((i, f) for i, f in self.tcp.items() if i not in listeners)


def add_clients(view, wanted):
    """Give each run of ``wanted`` ([(run, the service's port or None)]) its ``clients``,
    when its sockets can be read and a port is known. The kernel's connection tables
    are read only for runs that hold TCP sockets other than their listeners."""
    own_namespace = net_namespace(os.getpid())
    runs = [RunSockets(view, run, port, own_namespace) for run, port in wanted]
    runs = [r for r in runs if r.readable and (r.tcp or r.ports)]
    listening = {}
    for r in runs:
        if r.tcp:
            if r.root not in listening:
                here = r.root == OWN_TABLES
                listening[r.root] = listening_sockets() if here else listening_by_proc(r.root)
            r.sort_sockets(listening[r.root])
    runs = [r for r in runs if r.ports]
    busy = [r for r in runs if r.connected]
    not_clients = OwnSockets(view)
    tables = {}
    here = [r for r in busy if r.root == OWN_TABLES]
    if here:
        ports = set().union(*[r.ports for r in here])
        families = set(f for r in here for f in r.connected.values())
        families |= not_clients.families()
        families = INET_FAMILIES if None in families else sorted(families)
        try:
            tables[OWN_TABLES] = (SOURCE_NETLINK, established_by_netlink(ports, families))
        except (OSError, ValueError):
            tables[OWN_TABLES] = (SOURCE_PROC, established_by_proc(ports))
    for r in busy:
        if r.root not in tables:
            ports = set().union(*[o.ports for o in busy if o.root == r.root])
            tables[r.root] = (SOURCE_PROC, established_by_proc(ports, r.root))
    for r in runs:
        quiet = (SOURCE_PROC if r.namespace else SOURCE_NETLINK, [])
        source, connections = tables.get(r.root, quiet) if r.connected else quiet
        r.run["clients"] = clients_of(r, source, connections, not_clients)


class OwnSockets(object):
    """The TCP sockets of babysit's own processes on this host (this agent, the
    processes above it, any other agent), read once, when first asked."""

    def __init__(self, view):
        self.view = view
        self._sockets = None

    def sockets(self):
        """{inode: family} of their TCP sockets."""
        if self._sockets is None:
            pids = set(self.view.own) | set(
                pid
                for pid, info in self.view.table.items()
                if any(AGENT_MARK in part for part in info["cmdline"])
            )
            self._sockets = {}
            for pid in pids:
                self._sockets.update(tcp_sockets(pid, self.view.links(pid) or []))
        return self._sockets

    def families(self):
        return set(self.sockets().values())

    def holds(self, inode):
        return inode in self.sockets()


def clients_of(run_sockets, source, connections, not_clients):
    """The ``clients`` of one run from its namespace's ``connections``."""
    ends = dict(((c.address, c.port, c.peer, c.peer_port), c.inode) for c in connections)
    served = []
    for c in connections:
        if c.port not in run_sockets.ports or c.inode not in run_sockets.connected:
            continue
        other = ends.get((c.peer, c.peer_port, c.address, c.port))
        if other is not None and (other in run_sockets.tcp or not_clients.holds(other)):
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
