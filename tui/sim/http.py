"""The HTTP side of a simulated server: stdlib ``http.server``, one thread per connection.

Answers look like uvicorn's (``server: uvicorn``, HTTP/1.1 keep-alive, 5 s idle
timeout); a streamed answer goes out with ``transfer-encoding: chunked``, each chunk
written the moment the route yields it. Access lines are written by the engine in
uvicorn's format, and only once the engine has "started" uvicorn, as a real server
prints none while loading.
"""

from __future__ import annotations

import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

from tui.sim.engine import Engine
from tui.sim.response import Response


class Site(Protocol):
    """What the HTTP thread needs from the running sim."""

    engine: Engine | None
    http_logging: bool

    def report_error(self, text: str) -> None: ...


class SimHTTPServer(ThreadingHTTPServer):
    """Listening socket bound at construction (so a taken port fails at once)."""

    daemon_threads = True
    allow_reuse_address = True
    # uvicorn's default backlog: with socketserver's 5, a burst of clients on a busy
    # machine overflows the accept queue and gets connection resets a real server never gives.
    request_queue_size = 2048

    def __init__(self, address: tuple[str, int], site: Site) -> None:
        self.site = site
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    timeout = 5.0
    server: SimHTTPServer

    def version_string(self) -> str:
        return "uvicorn"

    def log_message(self, format: str, *args: object) -> None:
        """Dropped on purpose: the engine writes uvicorn-style access lines instead."""

    def _dispatch(self, method: str) -> None:
        site = self.server.site
        length_text = self.headers.get("Content-Length") or "0"
        try:
            length = max(int(length_text), 0)
        except ValueError:
            length = 0
        body = self.rfile.read(length) if length else b""
        engine = site.engine
        if engine is None:
            response = Response(503)
        else:
            try:
                response = engine.handle(method, self.path, body)
            except Exception:  # a sim bug: shown like uvicorn's ASGI error, answered with 500
                site.report_error(traceback.format_exc())
                response = Response(500, b"Internal Server Error", "text/plain; charset=utf-8")
        if engine is not None and site.http_logging:
            # uvicorn logs when the response starts, so the line is in the log before the
            # client can have read the answer
            client = f"{self.client_address[0]}:{self.client_address[1]}"
            engine.access(client, f"{method} {self.path} {self.request_version}", response.status)
        self.send_response(response.status)
        if response.content_type:
            self.send_header("content-type", response.content_type)
        for name, value in response.headers:
            self.send_header(name, value)
        if response.chunks is not None:
            self._send_chunks(response, method)
            return
        self.send_header("content-length", str(len(response.body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(response.body)

    def _send_chunks(self, response: Response, method: str) -> None:
        """The chunked body: one HTTP chunk per item as it comes, then the last chunk."""
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        if method == "HEAD" or response.chunks is None:
            return
        try:
            for chunk in response.chunks:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client went away mid-stream
            return
        except Exception:  # a sim bug mid-stream: shown like uvicorn's, the connection dropped
            self.server.site.report_error(traceback.format_exc())
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")
