"""An HTTP answer of a simulated route, and the request bodies the routes read."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Response:
    """An HTTP answer. ``body`` is sent as is."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"

    @classmethod
    def json(cls, status: int, payload: object) -> Response:
        return cls(status, json.dumps(payload).encode())


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
