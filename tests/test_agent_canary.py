"""The canary mode: the agent sends one completion to a real server on loopback and
reads its answer, stamping each ``data:`` line of an event stream as it arrives.

The servers are real processes: a small HTTP/1.1 server written here (an event stream
in chunks, paced; a body; a stall; a flood) that records every request it gets, and
``babysit sim --engine vllm`` for its /v1/completions body."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from support.ports import free_port
from support.servers import REPO, sim_argv
from support.sshd import Sshd
from support.wait import wait_until

from tui import procfs
from tui.agent import protocol
from tui.hostsfile import parse_config
from tui.remote import SshLinks, open_transport
from tui.remote.canary import ask_canary
from tui.remote.local import LocalTransport
from tui.remote.transport import Transport

pytestmark = pytest.mark.integration

SAMPLING_KEYS = ["temperature", "top_p", "top_k", "min_p", "repetition_penalty"]
#: Events the stream of /stream sends before its [DONE], PACE seconds apart.
EVENTS = 5
PACE = 0.05

SERVER = textwrap.dedent(
    """
    import json, socket, struct, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    PORT, LOG, EVENTS, PACE = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    HOST = sys.argv[5]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def chunk(self, data):
            self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(data), data))
            self.wfile.flush()

        def start(self, kind):
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with open(LOG, "a") as log:
                at = self.connection.getsockname()[0]
                got = {"path": self.path, "body": json.loads(body), "at": at}
                log.write(json.dumps(got) + "\\n")
            if self.path == "/stream":
                received, written = time.monotonic(), []
                self.start("text/event-stream; charset=utf-8")
                self.chunk(b": a comment line\\nevent: message\\n")
                for i in range(EVENTS):
                    time.sleep(PACE)
                    written.append(time.monotonic())
                    # one line in two chunks: the agent must join them
                    self.chunk(b'data: {"i": %d,' % i)
                    self.chunk(b' "text": "tok\\xc3\\xa9"}\\r\\n\\n')
                with open(LOG + ".times", "w") as times:
                    json.dump([t - received for t in written], times)
                self.chunk(b"data: [DONE]\\n\\n")
                self.chunk(b"data: after the end\\n\\n")
                self.chunk(b"")
            elif self.path == "/stall":
                self.start("text/event-stream")
                self.chunk(b"data: one\\n\\ndata: two\\n\\n")
                time.sleep(3600)
            elif self.path == "/flood":
                self.start("text/event-stream")
                for i in range(100000):
                    self.chunk(b"data: %08d\\n\\n" % i)
            elif self.path == "/hang":
                time.sleep(3600)
            elif self.path == "/reset":
                # SO_LINGER 0: closing sends a reset
                linger = struct.pack("ii", 1, 0)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                self.connection.close()
                self.close_connection = True
            else:
                answer = json.dumps({"error": "bad request", "path": self.path}).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in HOST else socket.AF_INET

    server = Server((HOST, PORT), Handler)
    server.daemon_threads = True
    print("listening", flush=True)
    server.serve_forever()
    """
)


class CanaryServer:
    """The server above, run as its own process in ``cwd``; ``requests`` what it got."""

    def __init__(self, folder: Path, cwd: Path, host: str = "127.0.0.1") -> None:
        self.port = free_port()
        self.log = folder / "requests.jsonl"
        script = folder / "server.py"
        script.write_text(SERVER)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(script),
                str(self.port),
                str(self.log),
                str(EVENTS),
                str(PACE),
                host,
            ],
            cwd=cwd,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == b"listening\n"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[CanaryServer]:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    running = CanaryServer(tmp_path, cwd)
    try:
        yield running
    finally:
        running.stop()


def request(pid: int, port: int, path: str = "/stream", **extra: object) -> dict[str, object]:
    ticks = procfs.start_ticks(pid)
    assert ticks is not None
    return {
        "pid": pid,
        "start_ticks": ticks,
        "port": port,
        "path": path,
        "body": {"prompt": "The capital of France is", "max_tokens": 8, "stream": True},
        "sampling_at": [],
        "sampling_keys": SAMPLING_KEYS,
        "generation_config": None,
        "fallback_sampling": None,
        "timeout": 10.0,
        "limit": 64 * 1024,
        **extra,
    }


def canary(args: dict[str, object], transport: Transport | None = None) -> Mapping:
    timeout = float(args["timeout"])  # type: ignore[arg-type]
    return asyncio.run(ask_canary(transport or LocalTransport(), args, timeout=timeout))


def test_a_stream_is_read_event_by_event_in_order(server: CanaryServer) -> None:
    answer = canary(request(server.pid, server.port))
    assert answer["error"] is None
    assert answer["run"] == {
        "pid": server.pid,
        "start_ticks": procfs.start_ticks(server.pid),
        "same": True,
        "alive": True,
    }
    assert answer["status"] == 200
    assert answer["timed_out"] is False and answer["cut"] is False
    assert answer["body"] is None
    events = answer["events"]
    # the comment and event lines are not events; the one after [DONE] is never read
    assert [payload for _, payload in events] == [
        *(f'{{"i": {i}, "text": "toké"}}' for i in range(EVENTS)),
        "[DONE]",
    ]
    stamps = [at for at, _ in events]
    assert stamps == sorted(stamps)
    # Each is stamped as it came: never before the server wrote it, counted from when
    # the server had the request (the same monotonic clock, after the agent sent it).
    written = json.loads(Path(f"{server.log}.times").read_text())
    assert all(stamp >= wrote for stamp, wrote in zip(stamps, written, strict=False))
    assert answer["sent_at"] is not None and answer["elapsed_s"] >= stamps[-1]
    assert answer["cpu_s"] > 0
    # the server's defaults: no sampling set, none said
    assert answer["sampling"] == {} and answer["sampling_source"] == protocol.SAMPLING_SERVER
    assert answer["recommended"] is None and answer["sampling_path"] is None
    (got,) = server.requests()
    assert got["body"] == {"prompt": "The capital of France is", "max_tokens": 8, "stream": True}


def test_the_limit_cuts_the_stream(server: CanaryServer) -> None:
    answer = canary(request(server.pid, server.port, "/flood", limit=4096))
    assert answer["cut"] is True and answer["timed_out"] is False
    payloads = [payload for _, payload in answer["events"]]
    assert payloads == [f"{i:08d}" for i in range(len(payloads))]
    assert sum(len(f"data: {p}\n\n") for p in payloads) <= 4096
    assert len(payloads) >= 4096 // len("data: 00000000\n\n") - 1


def test_the_deadline_keeps_what_arrived(server: CanaryServer) -> None:
    answer = canary(request(server.pid, server.port, "/stall", timeout=1.0))
    assert answer["timed_out"] is True
    assert answer["status"] == 200 and answer["error"] is None
    assert [payload for _, payload in answer["events"]] == ["one", "two"]
    assert answer["elapsed_s"] >= 1.0


def test_a_server_that_answers_nothing_times_out(server: CanaryServer) -> None:
    answer = canary(request(server.pid, server.port, "/hang", timeout=1.0))
    assert answer["timed_out"] is True
    assert answer["status"] is None and answer["events"] == [] and answer["body"] is None
    assert len(server.requests()) == 1  # it was sent


def test_a_body_that_is_no_stream_is_kept(server: CanaryServer) -> None:
    answer = canary(request(server.pid, server.port, "/nowhere"))
    assert answer["status"] == 400 and answer["events"] == []
    assert json.loads(answer["body"]) == {"error": "bad request", "path": "/nowhere"}


def test_a_reset_and_a_refused_port_are_said_in_words(server: CanaryServer) -> None:
    reset = canary(request(server.pid, server.port, "/reset"))
    assert reset["status"] is None and reset["timed_out"] is False
    assert str(server.port) in reset["error"] and "connection" in reset["error"]
    closed = free_port()
    refused = canary(request(server.pid, closed))
    assert refused["error"] == f"connection refused on 127.0.0.1:{closed}: nothing listens there"
    assert refused["status"] is None and refused["sent_at"] is not None


@pytest.mark.parametrize("host", ["::1", "127.0.0.2"])
def test_a_port_that_listens_on_one_address_is_asked_there(tmp_path: Path, host: str) -> None:
    """Not only 127.0.0.1: ::1 for a port that listens on IPv6 only, and the one address
    of this host a port is bound to."""
    try:
        server = CanaryServer(tmp_path, tmp_path, host)
    except AssertionError:
        pytest.skip(f"cannot listen on {host} here")
    try:
        answer = canary(request(server.pid, server.port))
        assert answer["error"] is None and answer["events"][-1][1] == "[DONE]"
        (got,) = server.requests()
        assert got["at"] == host
    finally:
        server.stop()


def test_a_changed_run_is_sent_nothing(server: CanaryServer, tmp_path: Path) -> None:
    args = request(server.pid, server.port)
    other = canary({**args, "start_ticks": int(args["start_ticks"]) - 1})  # type: ignore[call-overload]
    assert other["run"]["alive"] is True and other["run"]["same"] is False
    assert "another process" in other["error"] and "nothing was sent" in other["error"]
    assert other["sent_at"] is None and other["status"] is None
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = canary(request(os.getpid(), server.port) | {"pid": gone.pid})
    assert dead["run"] == {
        "pid": gone.pid,
        "start_ticks": procfs.start_ticks(os.getpid()),
        "same": False,
        "alive": False,
    }
    assert "gone" in dead["error"]
    # the server got nothing: the canary sent after these is its first request
    canary(args)
    assert len(server.requests()) == 1


def write_config(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "generation_config.json"
    path.write_text(text)
    return path


def test_generation_config_sampling_is_set_in_the_body(
    server: CanaryServer, tmp_path: Path
) -> None:
    model = tmp_path / "models" / "qwen"
    path = write_config(
        model,
        json.dumps(
            {
                "temperature": 0.6,
                "top_p": 0.95,
                "top_k": 20,
                "min_p": True,  # a bool is no number
                "repetition_penalty": "1.1",  # nor a string
                "do_sample": True,
                "eos_token_id": [1, 2],
            }
        ),
    )
    fallback = {"temperature": 1.0}
    answer = canary(
        request(
            server.pid,
            server.port,
            generation_config=str(model),
            fallback_sampling=fallback,
            sampling_at=["extra", "sampling"],
        )
    )
    want = {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
    assert answer["recommended"] == want and answer["sampling"] == want
    assert answer["sampling_source"] == protocol.SAMPLING_MODEL
    assert answer["sampling_path"] == str(path) and answer["sampling_problem"] is None
    (got,) = server.requests()
    assert got["body"]["extra"] == {"sampling": want}
    assert got["body"]["max_tokens"] == 8


def test_a_relative_folder_is_the_process_cwd(server: CanaryServer, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    write_config(cwd / "model", json.dumps({"temperature": 0.7}))
    answer = canary(request(server.pid, server.port, generation_config="model"))
    assert answer["sampling"] == {"temperature": 0.7}
    assert answer["sampling_path"] == str(cwd / "model" / "generation_config.json")
    (got,) = server.requests()
    assert got["body"]["temperature"] == 0.7  # at the body's top level


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, None),
        ("{not json", "is not JSON"),
        ("[0.6]", "holds no JSON object"),
        (" " * (64 * 1024) + "{}", "is bigger than 64 KiB"),
        ('{"do_sample": true}', None),  # there, but with no key to use
    ],
)
def test_without_a_usable_generation_config_the_fallback_is_used(
    server: CanaryServer, tmp_path: Path, text: str | None, problem: str | None
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    if text is not None:
        write_config(model, text)
    answer = canary(
        request(
            server.pid,
            server.port,
            generation_config=str(model),
            fallback_sampling={"temperature": 0.5, "top_p": True},
            sampling_at=["parameters"],
        )
    )
    assert answer["sampling"] == {"temperature": 0.5}
    assert answer["sampling_source"] == protocol.SAMPLING_CONFIG
    assert answer["sampling_path"] is None
    if problem is None:
        assert answer["sampling_problem"] is None
        assert answer["recommended"] == ({} if text else None)
    else:
        assert answer["recommended"] is None
        assert answer["sampling_problem"].startswith(str(model / "generation_config.json"))
        assert problem in answer["sampling_problem"]
    (got,) = server.requests()
    assert got["body"]["parameters"] == {"temperature": 0.5}


def test_a_non_stream_answer_of_the_vllm_sim(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "vllm.log"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with log.open("ab") as out:
        sim = subprocess.Popen(
            sim_argv("vllm", port),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
            start_new_session=True,
        )
    try:
        wait_until(
            lambda: "Application startup complete" in log.read_text(errors="replace"),
            30,
            "the vLLM sim ready",
        )
        args = request(sim.pid, port, "/v1/completions")
        args["body"] = {"model": "Qwen/Qwen3-8B", "prompt": "hello", "max_tokens": 4}
        answer = canary(args)
        assert answer["status"] == 200 and answer["error"] is None
        assert answer["events"] == [] and answer["cut"] is False
        completion = json.loads(answer["body"])
        assert completion["choices"][0]["text"]
    finally:
        os.killpg(sim.pid, signal.SIGKILL)
        sim.wait(10)


def test_a_canary_over_ssh(server: CanaryServer, sshd: Sshd) -> None:
    """The same agent, reached over a real ssh session (the sshd runs on this machine)."""
    config = parse_config(
        "hosts:\n" + "".join(f"  {x}\n" for x in sshd.host_yaml("viassh").splitlines())
    )

    async def over_ssh() -> Mapping:
        links = SshLinks()
        try:
            transport = open_transport(config.hosts["viassh"], links)
            return await ask_canary(transport, request(server.pid, server.port), timeout=10)
        finally:
            await links.close()

    answer = asyncio.run(over_ssh())
    assert answer["run"]["same"] is True
    assert [payload for _, payload in answer["events"]][-1] == "[DONE]"
    assert len(answer["events"]) == EVENTS + 1
