"""Ports for test servers: free, and never handed to two tests at once.

``bind(("127.0.0.1", 0))`` gives a free port but keeps nothing: between closing it
and a sim binding it, another test (in another xdist worker, or an outgoing
connection of the kernel's own choosing) may take it, and the sim dies of "Address
already in use". So each worker takes ports from a range of its own, below the
kernel's ephemeral range (net.ipv4.ip_local_port_range starts at 32768), in turn,
and still checks that each one is free.
"""

from __future__ import annotations

import itertools
import os
import socket

FIRST, LAST = 10_000, 30_000
#: Ports from here to the ephemeral range are handed to no test: for configs that name
#: many fixed ports (``port: '{30000 + i}'`` of ``instances: 1024``), where no test's
#: server may listen.
FIXED = 30_000
#: Ports per xdist worker (gw0, gw1, …), the range shared out among however many there
#: are; one process without xdist takes it all.
_workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1))
PER_WORKER = (LAST - FIRST) // _workers

_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
_start = FIRST + (int(_worker) % _workers if _worker.isdigit() else 0) * PER_WORKER
_next = itertools.cycle(range(_start, _start + PER_WORKER))


def free_port() -> int:
    """A port on 127.0.0.1 that is free now and that no other test of this run is given."""
    for port in itertools.islice(_next, PER_WORKER):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_start}-{_start + PER_WORKER - 1}")


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive ports, each free now and given to no other test."""
    for _ in range(PER_WORKER // max(count, 1)):
        ports = [next(_next) for _ in range(count)]
        if ports != list(range(ports[0], ports[0] + count)):
            continue  # the cycle wrapped: its end and its start are not consecutive
        socks: list[socket.socket] = []
        try:
            for port in ports:
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return ports[0]
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError(f"no {count} free consecutive ports in {_start}-{_start + PER_WORKER - 1}")
