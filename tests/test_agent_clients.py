"""A run's client connections in the probe answer: what a server that answers nothing
leaves behind in the kernel's sockets, read from real connections to a real process.

The server here writes its log (stdout appended to it), listens on a port, answers
``/answer`` and keeps the connection, answers nothing to ``/hang``, and holds one
connection to itself (its own, never a client). The clients are processes of their
own (the test's process is above the agent, so babysit's own)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.dockerd import Dockerd, sim_command, wait_running
from support.ports import free_port
from support.wait import wait_until

from tui import procfs
from tui.agent import clients as agent_clients
from tui.agent import protocol, sockets
from tui.agent.probe import probe
from tui.core.answers import read
from tui.core.serving import MAX_CLIENTS_SHOWN, Clients
from tui.remote.agentcall import run_agent
from tui.remote.canary import ask_canary
from tui.remote.local import LocalTransport

pytestmark = pytest.mark.integration

SERVER = textwrap.dedent(
    """
    import socket, sys, threading, time
    port = int(sys.argv[1])
    listener = socket.socket()
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    held = [socket.create_connection(("127.0.0.1", port))]  # to itself: no client
    def serve(conn):
        data = b""
        while b"\\r\\n\\r\\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        path = data.split()[1]
        print("got", path.decode(), flush=True)
        if path == b"/answer":
            conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok")
        while conn.recv(4096):  # /hang: nothing, ever; both: kept until the client goes
            pass
    print("listening on", port, flush=True)
    while True:
        conn, _ = listener.accept()
        held.append(conn)
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
    """
)

CLIENT = textwrap.dedent(
    """
    import socket, sys, time
    port, path = int(sys.argv[1]), sys.argv[2]
    conn = socket.create_connection(("127.0.0.1", port))
    conn.sendall(b"GET " + path.encode() + b" HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
    if path == "/answer":
        got = b""
        while not got.endswith(b"ok"):
            got += conn.recv(4096)
    print("sent", flush=True)
    time.sleep(3600)
    """
)


class Served:
    """The server above, its log, and the client processes started against it."""

    def __init__(self, folder: Path, wrap: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.wrap = wrap
        self.folder = folder
        self.log = folder / "server.log"
        (folder / "server.py").write_text(SERVER)
        (folder / "client.py").write_text(CLIENT)
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [*wrap, sys.executable, str(folder / "server.py"), str(self.port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.clients: list[subprocess.Popen[bytes]] = []
        wait_until(lambda: "listening on" in self.log.read_text(), 15, "the server listening")

    def client(self, path: str) -> subprocess.Popen[bytes]:
        """A client process that sent ``path`` (and read its answer, for /answer)."""
        seen = self.log.read_text().count(f"got {path}")
        inside = (f"--net=/proc/{self.proc.pid}/ns/net",) if self.wrap else ()
        client = subprocess.Popen(
            [
                *(("nsenter", *inside) if inside else ()),
                sys.executable,
                str(self.folder / "client.py"),
                str(self.port),
                path,
            ],
            stdout=subprocess.PIPE,
        )
        self.clients.append(client)
        assert client.stdout is not None
        assert client.stdout.readline() == b"sent\n"
        wait_until(
            lambda: self.log.read_text().count(f"got {path}") > seen, 15, f"the server got {path}"
        )
        return client

    def service(self, *, port: bool | int = True) -> dict[str, object]:
        return {
            "name": "s",
            "log": str(self.log),
            "match": f"server.py {self.port}$",
            "port": port if not isinstance(port, bool) else self.port if port else None,
            "health": False,
        }

    def stop(self) -> None:
        for client in self.clients:
            client.kill()
            client.wait(10)
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    running = Served(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def clients_of(served: Served, *, port: bool | int = True) -> dict:
    """The run's ``clients`` in the answer of the real agent (python3 -I -S, the bundle)."""
    request = {"mode": protocol.MODE_PROBE, "services": [served.service(port=port)]}
    result = asyncio.run(run_agent(LocalTransport(), request, timeout=30))
    assert result.ok, result.completed.stderr
    (entry,) = json.loads(result.completed.stdout)["services"]
    (run,) = entry["runs"]
    assert run["pid"] == served.proc.pid
    return run["clients"]


def test_a_request_not_answered_waits_and_its_wait_grows(served: Served) -> None:
    assert clients_of(served) == {
        "source": "netlink",
        "port": served.port,
        "open": 0,  # its connection to itself is no client
        "clients": [],
    }
    served.client("/hang")
    first = clients_of(served)
    assert first["source"] == "netlink" and first["open"] == 1
    (client,) = first["clients"]
    assert client["peer"].startswith("127.0.0.1:")
    assert client["waiting_ms"] is not None
    assert client["quiet_ms"] >= client["waiting_ms"]  # it connected, then sent
    grown = wait_until(
        lambda: (c := clients_of(served)["clients"]) and c[0]["waiting_ms"] > client["waiting_ms"],
        15,
        "the wait to grow",
    )
    assert grown
    # core reads what the agent wrote
    read_back = Clients.from_json(read(first, "clients"))
    assert read_back.timed and read_back.open == 1 and read_back.port == served.port
    (shown,) = read_back.shown
    assert shown.peer == client["peer"]
    assert shown.waiting_s == client["waiting_ms"] / 1000


def test_an_answered_idle_client_is_not_waiting(served: Served) -> None:
    served.client("/answer")
    served.client("/hang")
    got = clients_of(served)
    assert got["open"] == 2
    waiting, answered = got["clients"]  # the longest waiting first
    assert waiting["waiting_ms"] is not None
    assert answered["waiting_ms"] is None and answered["quiet_ms"] is not None


def test_without_a_port_the_ports_it_listens_on(served: Served) -> None:
    served.client("/hang")
    got = clients_of(served, port=False)
    assert got["port"] == served.port and got["open"] == 1


def test_at_most_sixteen_are_listed_and_all_are_counted(served: Served) -> None:
    for _ in range(MAX_CLIENTS_SHOWN + 2):
        served.client("/answer")
    served.client("/hang")
    got = clients_of(served)
    assert got["open"] == MAX_CLIENTS_SHOWN + 3
    assert len(got["clients"]) == MAX_CLIENTS_SHOWN
    assert got["clients"][0]["waiting_ms"] is not None
    quiet = [c["quiet_ms"] for c in got["clients"][1:]]
    assert quiet == sorted(quiet, reverse=True)


def test_an_agent_s_own_connection_is_no_client(served: Served) -> None:
    """A canary in flight (another agent's connection to the port) is not counted."""
    ticks = procfs.start_ticks(served.proc.pid)
    canary = {
        "pid": served.proc.pid,
        "start_ticks": ticks,
        "port": served.port,
        "path": "/hang",
        "body": {},
        "timeout": 30.0,
        "limit": 1024,
    }

    async def probe_during_canary() -> tuple[dict, list]:
        asked = asyncio.create_task(ask_canary(LocalTransport(), canary, timeout=30))
        await asyncio.to_thread(
            wait_until, lambda: "got /hang" in served.log.read_text(), 15, "the canary sent"
        )
        seen = sockets.established_by_netlink({served.port})
        got = await asyncio.to_thread(clients_of, served)
        asked.cancel()
        return got, seen

    got, seen = asyncio.run(probe_during_canary())
    # the canary's connection is there (both its ends, and the server's self-connection)
    assert len([c for c in seen if c.port == served.port]) == 2
    assert got["open"] == 0 and got["clients"] == []


def test_without_netlink_proc_counts_without_times(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    served.client("/hang")
    served.client("/answer")

    def refused(*_: object) -> list:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(agent_clients, "established_by_netlink", refused)
    answer = probe({"services": [served.service()]})
    (run,) = answer["services"][0]["runs"]
    got = run["clients"]
    assert got["source"] == "proc" and got["open"] == 2
    assert all(c["quiet_ms"] is None and c["waiting_ms"] is None for c in got["clients"])
    read_back = Clients.from_json(read(got, "clients"))
    assert not read_back.timed and read_back.open == 2


def test_a_failure_to_count_clients_fails_no_service(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    served.client("/hang")

    def broken(*_: object) -> list:
        raise RuntimeError("a table the agent cannot read")

    monkeypatch.setattr(agent_clients, "established_by_netlink", broken)
    answer = probe({"services": [served.service()]})
    assert answer["clients_problem"] == "RuntimeError: a table the agent cannot read"
    (entry,) = answer["services"]
    assert "error" not in entry
    (run,) = entry["runs"]
    assert run["ready"] is not None and "clients" not in run


def test_proc_and_netlink_see_the_same_connections(served: Served) -> None:
    client = served.client("/hang")
    held = {
        int(os.readlink(f"/proc/{pid}/fd/{fd}")[len("socket:[") : -1])
        for pid in (served.proc.pid, client.pid)
        for fd in os.listdir(f"/proc/{pid}/fd")
        if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")
    }

    def ours(connections: list[sockets.Connection]) -> list[sockets.Connection]:
        # (other test runs on this machine may connect to this port too)
        return sorted(
            c._replace(last_sent_ms=None, last_recv_ms=None, data_in=None, data_out=None)
            for c in connections
            if c.inode in held
        )

    by_netlink = ours(sockets.established_by_netlink({served.port}))
    by_proc = ours(sockets.established_by_proc({served.port}, f"/proc/{os.getpid()}"))
    assert len(by_netlink) == 4  # two ends of the client's, two of the self-connection
    assert by_netlink == by_proc


def test_a_run_that_writes_no_log_has_no_clients(served: Served, tmp_path: Path) -> None:
    other = tmp_path / "other.log"
    other.write_text("")
    service = dict(served.service(), log=str(other))
    answer = probe({"services": [service]})
    (run,) = answer["services"][0]["runs"]
    assert "clients" not in run


def test_the_agent_s_own_health_probe_is_no_client(served: Served) -> None:
    """With readiness unknown the agent asks /health (this server never answers it):
    its connection is the agent's, never the run's client."""
    request = {"mode": protocol.MODE_PROBE, "services": [dict(served.service(), health=True)]}
    result = asyncio.run(run_agent(LocalTransport(), request, timeout=30))
    (entry,) = json.loads(result.completed.stdout)["services"]
    assert entry["health_asked"] is True
    assert "got /health" in served.log.read_text()
    (run,) = entry["runs"]
    assert run["clients"]["open"] == 0


@pytest.fixture
def in_own_netns(tmp_path: Path) -> Iterator[Served]:
    """The server in a network namespace of its own (as in a container on a bridge
    network), its loopback up; its clients join that namespace."""
    tried = subprocess.run(
        ["unshare", "--net", "ip", "link", "set", "lo", "up"], capture_output=True, check=False
    )
    if tried.returncode != 0:
        pytest.skip(f"no network namespace here: {tried.stderr.decode().strip()}")
    wrap = ("unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh")
    running = Served(tmp_path, wrap)
    try:
        yield running
    finally:
        running.stop()


def test_a_run_in_another_network_namespace_is_counted_from_its_table(
    in_own_netns: Served,
) -> None:
    served = in_own_netns
    assert os.readlink(f"/proc/{served.proc.pid}/ns/net") != os.readlink("/proc/self/ns/net")
    served.client("/hang")
    served.client("/answer")
    got = clients_of(served)
    assert got["source"] == "proc" and got["port"] == served.port
    assert got["open"] == 2  # its connection to itself left out there too
    assert all(c["quiet_ms"] is None and c["waiting_ms"] is None for c in got["clients"])
    # the service's port of this host, mapped to the one it listens on in there
    mapped = clients_of(served, port=free_port())
    assert mapped["port"] == served.port and mapped["open"] == 2


#: A request whose headers never end: the server reads it and answers nothing.
UNFINISHED = textwrap.dedent(
    """
    import socket, sys, time
    conn = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    conn.sendall(b"POST /v1/completions HTTP/1.1\\r\\nHost: x\\r\\n")
    print("sent", flush=True)
    time.sleep(3600)
    """
)


def test_a_container_s_run_has_its_clients(dockerd: Dockerd, tmp_path: Path) -> None:
    port = free_port()
    name = "clients-vllm"
    dockerd.run_container(name, sim_command("vllm", port))
    wait_running(dockerd, name)
    service = {"name": "s", "log": "", "port": port, "container": {"name": name}}

    def entry() -> dict:
        request = {"mode": protocol.MODE_PROBE, "services": [service]}
        result = asyncio.run(run_agent(LocalTransport(), request, timeout=30))
        (got,) = json.loads(result.completed.stdout)["services"]
        return got

    def listening() -> bool:
        return port in sockets.listening_sockets()

    wait_until(listening, 60, "the container's sim to listen")
    script = tmp_path / "unfinished.py"
    script.write_text(UNFINISHED)
    client = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE)
    try:
        assert client.stdout is not None and client.stdout.readline() == b"sent\n"

        def waiting() -> dict | None:
            (run,) = entry()["runs"]
            got = run["clients"]
            return got if got["clients"] and got["clients"][0]["waiting_ms"] else None

        got = wait_until(waiting, 15, "the container's run to have a waiting client")
        assert got["source"] == "netlink" and got["port"] == port and got["open"] == 1
    finally:
        client.kill()
        client.wait(10)
