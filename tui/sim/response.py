"""An HTTP answer of a simulated route, and the request bodies the routes read."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: the content type of a stream of server-sent events
EVENT_STREAM = "text/event-stream; charset=utf-8"


@dataclass(frozen=True)
class Response:
    """An HTTP answer. ``body`` is sent as is, or, when ``chunks`` is given, the chunks
    one HTTP chunk each as they come (``transfer-encoding: chunked``) and ``body`` unused.
    ``headers`` are sent after the content type."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    chunks: Iterable[bytes] | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, status: int, payload: object) -> Response:
        return cls(status, json.dumps(payload).encode())

    @classmethod
    def stream(
        cls,
        chunks: Iterable[bytes],
        content_type: str = EVENT_STREAM,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> Response:
        """A 200 whose body is sent chunk by chunk as ``chunks`` yields them."""
        return cls(200, b"", content_type, chunks, headers)


NOT_FOUND = Response(404, b'{"detail":"Not Found"}')
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
METHOD_NOT_ALLOWED = Response(405, b'{"detail":"Method Not Allowed"}')
#: one HTTP route: the request body in, the answer out (may block on the load model)
Handler = Callable[[bytes], Response]


def parse_json_body(body: bytes) -> dict[str, object] | None:
    """The request body as a JSON object, or None if it is not one."""
    try:
        value = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None
