"""Who listens on a TCP port: the kernel asked over netlink, /proc/net/tcp otherwise."""

import os

from .procfs import fd_links, read_text

# Asking the kernel for listening sockets over netlink (sock_diag), as `ss -lt` does.
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x1 | 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10


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
    import socket
    import struct

    found = {}
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    try:
        for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), 1):
            # inet_diag_req_v2: family, protocol, ext, pad, states, then a zero sockid.
            request = struct.pack("=BBBBI48x", family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN)
            header = struct.pack(
                "=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST_DUMP, seq, 0
            )
            sock.sendall(header + request)
            done = False
            while not done:
                data = sock.recv(65536)
                if not data:
                    raise ValueError("netlink closed")
                offset = 0
                while offset + 16 <= len(data):
                    length, kind = struct.unpack_from("=IH", data, offset)
                    if length < 16:
                        raise ValueError("bad netlink message")
                    if kind == NLMSG_DONE:
                        done = True
                        break
                    if kind == NLMSG_ERROR:
                        raise ValueError("netlink error")
                    if kind == SOCK_DIAG_BY_FAMILY and length >= 16 + 72:
                        # inet_diag_msg: family, state, timer, retrans, sockid
                        # (sport big-endian first), expires, rqueue, wqueue, uid, inode.
                        (port,) = struct.unpack_from("!H", data, offset + 16 + 4)
                        uid, inode = struct.unpack_from("=II", data, offset + 16 + 64)
                        found.setdefault(port, {})[inode] = uid
                    offset += (length + 3) & ~3
    finally:
        sock.close()
    return found


def listening_by_proc():
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in read_text(table).splitlines()[1:]:
            parts = line.split()
            if len(parts) < 10 or parts[3] != "0A":  # 0A = LISTEN
                continue
            port = int(parts[1].rsplit(":", 1)[1], 16)
            found.setdefault(port, {})[int(parts[9])] = int(parts[7])
    return found


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
