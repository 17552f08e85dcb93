"""uvicorn's access line, the same in both engines: ``CLIENT - "REQUEST LINE" STATUS PHRASE``."""

from __future__ import annotations

#: the reason phrases of the statuses the simulated routes answer with
PHRASES = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def access_text(client: str, request_line: str, status: int) -> str:
    """The message of one access line (uvicorn's ``%s - "%s" %d`` and the phrase)."""
    return f'{client} - "{request_line}" {status} {PHRASES.get(status, "")}'.rstrip()
