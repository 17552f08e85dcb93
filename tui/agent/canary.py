"""The canary mode: one small completion sent to a run's server on this host's loopback.

The request and the answer are documented at MODE_CANARY (tui/agent/protocol.py).
The agent checks first that the pid is still the run it was asked about (its start
ticks); then sets the model's recommended sampling (its generation_config.json) or
the fallback in the body, POSTs it to the port and reads the answer for at most the
request's ``timeout`` seconds and ``limit`` bytes, stamping each ``data:`` line of an
event stream as it arrives. It never signals or changes anything on the host: one
request, one answer, and it exits.
"""

import http.client
import json
import math
import os
import resource
import socket
import sys
import time

from .procfs import start_ticks_of
from .protocol import SAMPLING_CONFIG, SAMPLING_MODEL, SAMPLING_SERVER
from .sockets import listening_addresses

GENERATION_CONFIG = "generation_config.json"
#: A generation_config.json bigger than this is not read.
MAX_GENERATION_CONFIG = 64 * 1024
#: Bytes asked of the socket at once while reading the answer.
READ_SIZE = 64 * 1024
EVENT_STREAM = "text/event-stream"
DATA_FIELD = b"data:"
DONE_EVENT = "[DONE]"
LOOPBACK_V4, LOOPBACK_V6 = "127.0.0.1", "::1"
WILDCARD_V4, WILDCARD_V6 = "0.0.0.0", "::"  # noqa: S104 - addresses compared, never bound
#: Answer bytes kept when the request gives no ``limit``.
DEFAULT_LIMIT = 256 * 1024


def canary(args):
    """The canary mode: one JSON answer on stdout."""
    sys.stdout.write(json.dumps(canary_answer(args)))
    sys.stdout.write("\n")
    return 0


def canary_answer(args):
    started = time.monotonic()
    pid, ticks = int(args["pid"]), args.get("start_ticks")
    answer = {
        "run": {"pid": pid, "start_ticks": ticks, "same": False, "alive": False},
        "sampling": {},
        "sampling_source": SAMPLING_SERVER,
        "sampling_path": None,
        "recommended": None,
        "sampling_problem": None,
        "sent_at": None,
        "status": None,
        "events": [],
        "body": None,
        "timed_out": False,
        "cut": False,
        "error": None,
    }
    now_ticks = start_ticks_of(pid)
    answer["run"]["alive"] = now_ticks is not None
    answer["run"]["same"] = now_ticks is not None and now_ticks == ticks
    if now_ticks is None:
        answer["error"] = "process %d is gone: nothing was sent" % pid
    elif now_ticks != ticks:
        answer["error"] = (
            "process %d is another process now (it started at another time): nothing was sent" % pid
        )
    else:
        body = args.get("body") or {}
        choose_sampling(args, body, answer)
        send(args, body, answer)
    answer["elapsed_s"] = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    answer["cpu_s"] = usage.ru_utime + usage.ru_stime
    return answer


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def choose_sampling(args, body, answer):
    """Set the sampling parameters in ``body``: the model's recommended ones, else the
    fallback, else none (the server's defaults); say which in ``answer``."""
    keys = args.get("sampling_keys") or []
    recommended, path, problem = recommended_sampling(
        int(args["pid"]), args.get("generation_config"), keys
    )
    answer["recommended"], answer["sampling_problem"] = recommended, problem
    fallback = args.get("fallback_sampling") or {}
    if recommended:
        chosen, source = recommended, SAMPLING_MODEL
        answer["sampling_path"] = path
    else:
        chosen = dict((k, v) for k, v in fallback.items() if is_number(v))
        source = SAMPLING_CONFIG if chosen else SAMPLING_SERVER
    if chosen:
        node = body
        for key in args.get("sampling_at") or []:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node.update(chosen)
    answer["sampling"], answer["sampling_source"] = chosen, source


def recommended_sampling(pid, folder, keys):
    """(the ``keys`` that ``folder``/generation_config.json gives as finite numbers, its
    path, a problem in words): (None, None, None) when no folder is named or the file is
    not there; (None, path, problem) when it is there but cannot be used. A relative
    folder is the process's cwd's."""
    if not folder:
        return None, None, None
    opened, path = generation_config_path(pid, folder)
    try:
        with open(opened, "rb") as handle:
            raw = handle.read(MAX_GENERATION_CONFIG + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None, None, None
    except OSError as error:
        return None, path, "%s cannot be read: %s" % (path, error.strerror or error)
    data, problem = json_object(raw, path)
    if problem:
        return None, path, problem
    return dict((k, data[k]) for k in keys if is_number(data.get(k))), path, None


def generation_config_path(pid, folder):
    """(the path to open, the path in words) of ``folder``'s generation_config.json."""
    if os.path.isabs(folder):
        path = os.path.join(folder, GENERATION_CONFIG)
        return path, path
    opened = os.path.join("/proc/%d/cwd" % pid, folder, GENERATION_CONFIG)
    try:
        return opened, os.path.join(os.readlink("/proc/%d/cwd" % pid), folder, GENERATION_CONFIG)
    except OSError:
        return opened, opened


def json_object(raw, path):
    """(the JSON object in ``raw``, None) or (None, what is wrong with the file at ``path``)."""
    if len(raw) > MAX_GENERATION_CONFIG:
        return None, "%s is bigger than %d KiB: not read" % (path, MAX_GENERATION_CONFIG // 1024)
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as error:
        return None, "%s is not JSON: %s" % (path, error)
    if not isinstance(data, dict):
        return None, "%s holds no JSON object" % path
    return data, None


def loopback_for(port):
    """The address to reach ``port`` on this host at: 127.0.0.1, or ::1 when the port
    listens on IPv6 only, or the one address it listens on when it listens on one
    address only (it is this host's own)."""
    addresses = listening_addresses(port)
    if not addresses or WILDCARD_V4 in addresses or LOOPBACK_V4 in addresses:
        return LOOPBACK_V4
    if WILDCARD_V6 in addresses or LOOPBACK_V6 in addresses:
        return LOOPBACK_V6
    return sorted(addresses, key=lambda a: (":" in a, a))[0]


class Deadline(object):
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        """Seconds left; a socket.timeout when none are."""
        left = self.end - time.monotonic()
        if left <= 0:
            raise socket.timeout("deadline")
        return left


def send(args, body, answer):
    """POST ``body`` to the run's port, and read the answer into ``answer``."""
    port = int(args["port"])
    deadline = Deadline(float(args.get("timeout") or 0))
    limit = int(args.get("limit") or DEFAULT_LIMIT)
    host = loopback_for(port)
    where = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
    payload = json.dumps(body).encode("utf-8")
    connection = http.client.HTTPConnection(host, port)
    response = None
    try:
        answer["sent_at"] = time.time()
        sent = time.monotonic()
        connection.timeout = deadline.left()
        connection.connect()
        sock = connection.sock  # kept: a response that closes takes the connection over
        sock.settimeout(deadline.left())
        connection.request(
            "POST",
            args.get("path") or "/",
            body=payload,
            headers={"Content-Type": "application/json", "Connection": "close"},
        )
        sock.settimeout(deadline.left())
        response = connection.getresponse()
        answer["status"] = response.status
        reader = AnswerReader(response, sock, deadline, limit=limit, sent=sent, answer=answer)
        if EVENT_STREAM in (response.getheader("Content-Type") or "").lower():
            reader.read_events()
        else:
            reader.read_body()
    except socket.timeout:
        answer["timed_out"] = True
    except ConnectionRefusedError:
        answer["error"] = "connection refused on %s: nothing listens there" % where
    except http.client.RemoteDisconnected:  # a ConnectionResetError: before it
        answer["error"] = "the server at %s closed the connection without an answer" % where
    except ConnectionResetError:
        answer["error"] = "the server at %s reset the connection" % where
    except http.client.HTTPException as error:
        answer["error"] = "the server at %s answered what is not HTTP (%s: %s)" % (
            where,
            type(error).__name__,
            error,
        )
    except OSError as error:
        answer["error"] = "cannot reach %s: %s" % (where, error.strerror or error)
    finally:
        if response is not None:
            response.close()
        connection.close()
    if answer["error"] and answer["events"] == [] and answer["body"] is None:
        answer["status"] = None


class AnswerReader(object):
    """Reads the server's answer into the canary's ``answer`` within the deadline and
    the limit; times are seconds after ``sent`` (monotonic)."""

    def __init__(self, response, sock, deadline, *, limit, sent, answer):
        self.response, self.sock, self.deadline = response, sock, deadline
        self.limit, self.sent, self.answer = limit, sent, answer

    def chunks(self):
        """Yield the answer's bytes as they come, at most ``limit`` in all (then ``cut``)."""
        total = 0
        while True:
            self.sock.settimeout(self.deadline.left())
            chunk = self.response.read1(READ_SIZE)
            if not chunk:
                return
            if total + len(chunk) > self.limit:
                self.answer["cut"] = True
                yield chunk[: self.limit - total]
                return
            total += len(chunk)
            yield chunk

    def read_body(self):
        parts = []
        self.answer["body"] = ""
        try:
            for chunk in self.chunks():
                parts.append(chunk)
        finally:
            self.answer["body"] = b"".join(parts).decode("utf-8", "replace")

    def read_events(self):
        """Each ``data:`` line of the stream as [seconds after ``sent``, its payload],
        until the stream ends or its ``[DONE]`` (kept)."""
        pending = b""
        for chunk in self.chunks():
            at = time.monotonic() - self.sent
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if self.add_event(line, at):
                    return
        if pending and not self.answer["cut"]:
            self.add_event(pending, time.monotonic() - self.sent)

    def add_event(self, line, at):
        """Add the event of one line of the stream; True when it is the stream's last."""
        line = line.rstrip(b"\r")
        if not line.startswith(DATA_FIELD):
            return False
        payload = line[len(DATA_FIELD) :]
        if payload.startswith(b" "):
            payload = payload[1:]
        text = payload.decode("utf-8", "replace")
        self.answer["events"].append([at, text])
        return text == DONE_EVENT
