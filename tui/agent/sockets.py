"""TCP sockets of the host: who listens on a port, and the connections open to one.

The kernel is asked over netlink (sock_diag, as ``ss`` does); /proc/net/tcp is the
fallback where netlink is refused, and the only view of another network namespace.
"""

import os
import socket
import struct
from collections import namedtuple

from .procfs import fd_links, read_text

# Asking the kernel for TCP sockets over netlink (sock_diag), as `ss -t` does.
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x1 | 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLMSG_HEADER = 16
#: struct inet_diag_msg: family, state, timer, retrans, then the sockid (ports
#: big-endian, the two addresses in 16 bytes each, the interface, the cookie), then
#: expires, rqueue, wqueue, uid and inode.
DIAG_MSG_SIZE = 72
DIAG_UID_AT = 64
TCP_ESTABLISHED = 1
TCP_LISTEN = 10
#: The netlink attribute holding a socket's struct tcp_info, and the extension bit
#: that asks for it (1 << (INET_DIAG_INFO - 1)).
INET_DIAG_INFO = 2
#: Where struct tcp_info (linux/tcp.h) holds tcpi_last_data_sent and
#: tcpi_last_data_recv: after 8 bytes of u8 fields and nine u32 (rto … fackets),
#: then last_data_sent, last_ack_sent, last_data_recv (milliseconds ago); and
#: tcpi_data_segs_in and tcpi_data_segs_out (segments that carried data, Linux 4.6+).
TCPI_LAST_DATA_SENT = 44
TCPI_LAST_DATA_RECV = 52
TCPI_DATA_SEGS_IN = 152
TCPI_DATA_SEGS_OUT = 156
#: What a socket is, as sockfs says it (the extended attribute of its fd), for TCP.
SOCKET_PROTOCOL = "system.sockprotoname"
TCP_PROTOCOLS = {b"TCP": socket.AF_INET, b"TCPv6": socket.AF_INET6}
#: The state words of /proc/net/tcp.
PROC_ESTABLISHED = "01"
PROC_LISTEN = "0A"
PROC_TABLES = ("tcp", "tcp6")

#: One TCP connection as one of its two ends sees it: its own address and port, its
#: peer's, its socket inode, and from the kernel's tcp_info (netlink only, else None)
#: the milliseconds since it last sent data and since it last received data, and how
#: many segments with data it received and sent (None before Linux 4.6).
Connection = namedtuple(
    "Connection",
    "address port peer peer_port inode last_sent_ms last_recv_ms data_in data_out",
)


#: Both address families of TCP sockets.
INET_FAMILIES = (socket.AF_INET, socket.AF_INET6)


def diag_messages(states, ext=0, families=INET_FAMILIES):
    """Yield (data, offset, length) of each inet_diag_msg of a dump of the TCP sockets
    of ``families`` in ``states`` (a bit mask), ``ext`` the attributes asked for.
    Raises OSError or ValueError when netlink refuses or answers wrongly."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    try:
        for seq, family in enumerate(families, 1):
            # inet_diag_req_v2: family, protocol, ext, pad, states, then a zero sockid.
            request = struct.pack("=BBBBI48x", family, socket.IPPROTO_TCP, ext, 0, states)
            header = struct.pack(
                "=IHHII",
                NLMSG_HEADER + len(request),
                SOCK_DIAG_BY_FAMILY,
                NLM_F_REQUEST_DUMP,
                seq,
                0,
            )
            sock.sendall(header + request)
            done = False
            while not done:
                data = sock.recv(65536)
                if not data:
                    raise ValueError("netlink closed")
                offset = 0
                while offset + NLMSG_HEADER <= len(data):
                    length, kind = struct.unpack_from("=IH", data, offset)
                    if length < NLMSG_HEADER:
                        raise ValueError("bad netlink message")
                    if kind == NLMSG_DONE:
                        done = True
                        break
                    if kind == NLMSG_ERROR:
                        raise ValueError("netlink error")
                    if kind == SOCK_DIAG_BY_FAMILY and length >= NLMSG_HEADER + DIAG_MSG_SIZE:
                        yield data, offset, length
                    offset += (length + 3) & ~3
    finally:
        sock.close()


def listening_sockets():
    """{port: {socket inode: owner uid}} for every listening TCP socket (v4 and v6).

    Asked over netlink for listening sockets only. /proc/net/tcp would do, but
    the kernel walks its whole connection hash table to print it: milliseconds
    even on an idle machine, and far more on a host with much memory or many
    clients. /proc/net/tcp stays the fallback where netlink is refused.
    """
    try:
        return listening_by_netlink()
    except (OSError, ValueError):
        return listening_by_proc()


def listening_by_netlink():
    found = {}
    for data, offset, _ in diag_messages(1 << TCP_LISTEN):
        (port,) = struct.unpack_from("!H", data, offset + NLMSG_HEADER + 4)
        uid, inode = struct.unpack_from("=II", data, offset + NLMSG_HEADER + DIAG_UID_AT)
        found.setdefault(port, {})[inode] = uid
    return found


def listening_by_proc(root="/proc"):
    """Listening sockets as listening_sockets gives them, from ``root``/net/tcp and tcp6
    (``/proc/PID`` for the network namespace of process PID)."""
    found = {}
    for parts in proc_rows(root, PROC_LISTEN):
        port = int(parts[1].rsplit(":", 1)[1], 16)
        found.setdefault(port, {})[int(parts[9])] = int(parts[7])
    return found


def listening_addresses(port):
    """The addresses that TCP sockets listen on at ``port`` (``0.0.0.0``, ``::``, ``::1``,
    one address of this host's), netlink asked first, /proc/net/tcp otherwise."""
    found = set()
    try:
        for data, offset, _ in diag_messages(1 << TCP_LISTEN):
            at = offset + NLMSG_HEADER
            if struct.unpack_from("!H", data, at + 4)[0] == port:
                size = 4 if data[at] == socket.AF_INET else 16
                found.add(address_text(data[at + 8 : at + 8 + size]))
    except (OSError, ValueError):
        for parts in proc_rows("/proc", PROC_LISTEN):
            address, listened = parts[1].split(":")
            if int(listened, 16) == port:
                found.add(proc_address(address))
    return found


def proc_rows(root, state):
    """The split rows of ``root``/net/tcp and tcp6 in ``state`` (a /proc/net/tcp word)."""
    for table in PROC_TABLES:
        for line in read_text("%s/net/%s" % (root, table)).splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 10 and parts[3] == state:
                yield parts


def address_text(packed):
    """An address in words: ``127.0.0.1``, ``::1``; an IPv4 address mapped into IPv6
    (a dual-stack listener's peer) as the IPv4 address it is."""
    if len(packed) == 4:
        return socket.inet_ntop(socket.AF_INET, packed)
    if packed[:12] == b"\0" * 10 + b"\xff\xff":
        return socket.inet_ntop(socket.AF_INET, packed[12:])
    return socket.inet_ntop(socket.AF_INET6, packed)


def established_by_netlink(ports, families=INET_FAMILIES):
    """[Connection] of every established TCP socket of ``families`` whose own port or
    peer's port is in ``ports``, with its times from the kernel's tcp_info.

    Unlike the listeners, the kernel finds these by walking its whole connection hash
    table, once per family: milliseconds on a host with much memory, however few
    connections it has. So it is asked only for what a run's sockets need."""
    found = []
    asked = diag_messages(1 << TCP_ESTABLISHED, 1 << (INET_DIAG_INFO - 1), families)
    for data, offset, length in asked:
        at = offset + NLMSG_HEADER
        family = data[at]
        local_port, peer_port = struct.unpack_from("!HH", data, at + 4)
        if local_port not in ports and peer_port not in ports:
            continue
        size = 4 if family == socket.AF_INET else 16
        local = address_text(data[at + 8 : at + 8 + size])
        peer = address_text(data[at + 24 : at + 24 + size])
        (inode,) = struct.unpack_from("=I", data, at + DIAG_UID_AT + 4)
        info = tcp_info(data, at + DIAG_MSG_SIZE, offset + length)
        found.append(Connection(local, local_port, peer, peer_port, inode, *info))
    return found


def tcp_info(data, attr, end):
    """(last_sent_ms, last_recv_ms, data_in, data_out) of the struct tcp_info among the
    netlink attributes from ``attr`` to ``end``; None for what it does not hold."""
    info = (None, None, None, None)
    while attr + 4 <= end:
        attr_length, attr_type = struct.unpack_from("=HH", data, attr)
        if attr_length < 4:
            break
        size = attr_length - 4
        if attr_type == INET_DIAG_INFO and size >= TCPI_LAST_DATA_RECV + 4:
            info = (
                struct.unpack_from("=I", data, attr + 4 + TCPI_LAST_DATA_SENT)[0],
                struct.unpack_from("=I", data, attr + 4 + TCPI_LAST_DATA_RECV)[0],
            )
            if size >= TCPI_DATA_SEGS_OUT + 4:
                info += struct.unpack_from("=II", data, attr + 4 + TCPI_DATA_SEGS_IN)
            else:
                info += (None, None)
        attr += (attr_length + 3) & ~3
    return info


def proc_address(word):
    """An address of /proc/net/tcp (hex, in the host's byte order by 32-bit word)."""
    packed = b"".join(struct.pack("=I", int(word[i : i + 8], 16)) for i in range(0, len(word), 8))
    return address_text(packed)


def established_by_proc(ports, root="/proc"):
    """[Connection] as established_by_netlink gives them, from ``root``/net/tcp and tcp6
    (``/proc/PID`` for the network namespace of process PID): no times."""
    found = []
    for parts in proc_rows(root, PROC_ESTABLISHED):
        local, local_port = parts[1].split(":")
        peer, peer_port = parts[2].split(":")
        local_port, peer_port = int(local_port, 16), int(peer_port, 16)
        if local_port not in ports and peer_port not in ports:
            continue
        found.append(
            Connection(
                proc_address(local),
                local_port,
                proc_address(peer),
                peer_port,
                int(parts[9]),
                None,
                None,
                None,
                None,
            )
        )
    return found


def tcp_family(path):
    """AF_INET or AF_INET6 for a TCP socket at ``path`` (an fd in /proc/PID/fd), 0 for
    a socket of another kind, None when it cannot be told (sockfs' sockprotoname)."""
    try:
        name = os.getxattr(path, SOCKET_PROTOCOL).rstrip(b"\0")
    except (OSError, AttributeError):
        return None
    return TCP_PROTOCOLS.get(name, 0)


def listening_inodes(port):
    """Inodes of TCP sockets listening on ``port`` (any address, v4 or v6)."""
    return set(listening_sockets().get(port, {}))


def port_owners(port):
    listening = set("socket:[%d]" % inode for inode in listening_inodes(port))
    if not listening:
        return []
    owners = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            links = fd_links(int(name)) or []
            if any(target in listening for _, target in links):
                owners.append(int(name))
    return owners or ["unknown (not readable)"]
