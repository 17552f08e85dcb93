"""The benches' fleet: sshd hosts on loopback, each with its simulated servers.

bench/fleet.py (the fleet view's refresh) and bench/export.py (``babysit export``
over the same fleet) both measure against it: ``hosts`` OpenSSH sshd instances
from tests/support/sshd.py (each one "host", with its own connection), ``per_host``
``babysit sim`` servers on each, the nvidia-smi stand-in on each host's PATH (unless
told not to) reading that host's sims, and the hosts.yaml text naming them all.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support.servers import Server
from support.sshd import Sshd, start_sshd


@dataclass
class Fleet:
    """A started fleet: its hosts.yaml text, its sims and its sshds."""

    hosts_yaml: str
    servers: list[Server]
    sshds: list[Sshd]

    @property
    def services(self) -> int:
        return len(self.servers)


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports (all held open while chosen, so none comes twice)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def wait_ready(servers: list[Server], timeout: float = 120.0) -> None:
    """Every sim ready; a sim that died first is said with the end of its log."""
    deadline = time.monotonic() + timeout
    for server in servers:
        while "The server is fired up" not in server.log.read_text(errors="replace"):
            if server.proc.poll() is not None or time.monotonic() > deadline:
                tail = server.log.read_text(errors="replace")[-600:]
                state = "exited" if server.proc.poll() is not None else "not ready"
                raise SystemExit(f"sim on port {server.port} {state}; its log ends:\n{tail}")
            time.sleep(0.05)


def install_nvidia_smi(bin_dir: Path, state: Path) -> None:
    """The nvidia-smi stand-in on one host's PATH, reading that host's sims."""
    shim = bin_dir / "nvidia-smi"
    stand_in = ROOT / "tui" / "sim" / "nvidia-smi"
    shim.write_text(
        "#!/bin/sh\n"
        f"BABYSIT_SIM_STATE={shlex.quote(str(state))} "
        f"BABYSIT_SIM_PYTHON={shlex.quote(sys.executable)} "
        f'exec {shlex.quote(str(stand_in))} "$@"\n'
    )
    shim.chmod(0o755)


@contextlib.contextmanager
def started_fleet(
    root: Path, hosts: int, per_host: int, *, nvidia_smi: bool = True
) -> Iterator[Fleet]:
    """The fleet under ``root`` (hosts ``node00``…, services ``gpu0``… on each), every sim
    ready; every sim and sshd is ended when the block ends, however it ends."""
    servers: list[Server] = []
    sshds: list[Sshd] = []
    try:
        text = "hosts:\n"
        sshds.extend(start_sshd(root / f"sshd{h}") for h in range(hosts))
        # The sshds listen already: the sims' ports, chosen at once, are all different.
        ports = iter(free_ports(hosts * per_host))
        for h, sshd in enumerate(sshds):
            state = root / f"node{h:02d}-gpus"
            if nvidia_smi:
                install_nvidia_smi(sshd.bin_dir, state)
            entry = sshd.host_yaml(f"node{h:02d}").rstrip("\n") + "\n  services:\n"
            for i in range(per_host):
                port = next(ports)
                log = root / f"node{h:02d}-gpu{i}.log"
                servers.append(Server(log, port=port, load=0.5, state=state))
                entry += (
                    f"    gpu{i}: {{engine: sglang, log: {json.dumps(str(log))}, "
                    f"port: {port}, match: 'tui sim .*--port {port} '}}\n"
                )
            text += "".join(f"  {line}\n" for line in entry.splitlines())
        wait_ready(servers)
        yield Fleet(text, servers, sshds)
    finally:
        for server in servers:
            server.kill()
        for sshd in sshds:
            sshd.stop()
