"""Who listens on a port: the agent asks the kernel over netlink (sock_diag) and
falls back to /proc/net/tcp; both must give the same answer, from real sockets."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from tui.agent import sockets as listening

pytestmark = pytest.mark.integration


def inode_of(sock: socket.socket) -> int:
    return os.fstat(sock.fileno()).st_ino


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


def test_netlink_and_proc_agree_on_real_listeners(sockets: list[socket.socket]) -> None:
    v4 = socket.socket(socket.AF_INET)
    v4.bind(("127.0.0.1", 0))
    v4.listen()
    port = v4.getsockname()[1]
    sockets.append(v4)
    v6 = None
    if socket.has_ipv6:
        try:
            v6 = socket.socket(socket.AF_INET6)
            v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            v6.bind(("::1", port))
            v6.listen()
            sockets.append(v6)
        except OSError:
            v6 = None  # no IPv6 loopback here
    # A connection to it (client and accepted ends) is not a listener.
    client = socket.create_connection(("127.0.0.1", port))
    sockets.append(client)
    accepted, _ = v4.accept()
    sockets.append(accepted)
    bound_only = socket.socket(socket.AF_INET)
    bound_only.bind(("127.0.0.1", 0))
    sockets.append(bound_only)

    # Other tests on this machine open and close listeners between two reads: the two
    # ways must agree on a moment when nothing changed (a few tries find one).
    for _ in range(20):
        by_netlink = listening.listening_by_netlink()
        by_proc = listening.listening_by_proc()
        chosen = listening.listening_sockets()
        if by_netlink == by_proc == chosen:
            break
    assert by_netlink == by_proc
    expected = {inode_of(v4)} | ({inode_of(v6)} if v6 is not None else set())
    assert set(by_netlink[port]) == expected
    assert by_netlink[port][inode_of(v4)] == os.getuid()  # each listener with its owner
    assert bound_only.getsockname()[1] not in by_netlink
    assert chosen == by_netlink


def test_without_netlink_proc_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where netlink is refused (some sandboxes), /proc/net/tcp gives the answer."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def refused() -> dict[int, dict[int, int]]:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(listening, "listening_by_netlink", refused)
        assert listening.listening_sockets()[port] == {inode_of(listener): os.getuid()}
