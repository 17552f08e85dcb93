"""TGI's own streaming endpoint as a canary speaks it: ``POST /generate_stream``.

Request: ``{"inputs": P, "parameters": {"max_new_tokens": N, "details": true}}``; the
sampling keys go into ``parameters`` (TGI has no ``min_p``; it refuses a ``top_p`` of
1.0 or more and a ``temperature`` of 0, as its validation says). Each ``data:`` event
is ``{"token": {"text": T, "special": bool, ...}, "generated_text": null, "details":
null}``; the last one holds ``generated_text`` and ``details`` with ``finish_reason``
(``length``, ``eos_token``, ``stop_sequence``) and ``generated_tokens``. An error is
``{"error": M, "error_type": KIND}``, as an event of the stream or as the whole answer.
"""

from __future__ import annotations

import json

from tui.engines._json_lines import json_object
from tui.engines.spec import CanaryApi, CanaryEvent

PATH = "/generate_stream"
#: A message longer than this is cut.
MESSAGE_CHARS = 500


def body(prompt: str, max_tokens: int) -> dict[str, object]:
    return {"inputs": prompt, "parameters": {"max_new_tokens": max_tokens, "details": True}}


def _error(data: dict[str, object]) -> str | None:
    error = data.get("error")
    if error is None or error == "":
        return None
    text = error if isinstance(error, str) else json.dumps(error)
    kind = data.get("error_type")
    if isinstance(kind, str) and kind:
        text = f"{text} ({kind})"
    return text[:MESSAGE_CHARS]


def read_event(payload: str) -> CanaryEvent | None:
    """One ``data:`` event: its token's text (none for a special token), and on the last
    one the finish reason and the generated tokens; an error event's message."""
    data = json_object(payload)
    if data is None:
        return CanaryEvent(error=f"an event that is not a JSON object: {payload[:80]!r}")
    error = _error(data)
    if error is not None:
        return CanaryEvent(error=error)
    token = data.get("token")
    text = ""
    if isinstance(token, dict) and token.get("special") is not True:
        found = token.get("text")
        text = found if isinstance(found, str) else ""
    details = data.get("details")
    reason, tokens = None, None
    if isinstance(details, dict):
        found_reason = details.get("finish_reason")
        reason = found_reason if isinstance(found_reason, str) and found_reason else None
        count = details.get("generated_tokens")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            tokens = count
    if not isinstance(token, dict) and reason is None and tokens is None:
        return None
    return CanaryEvent(text=text, finish_reason=reason, tokens=tokens)


def read_answer(text: str) -> CanaryEvent | None:
    """A whole answer that was not a stream: its error, or None when it holds none."""
    data = json_object(text)
    if data is None:
        return None
    error = _error(data)
    return CanaryEvent(error=error) if error is not None else None


CANARY = CanaryApi(
    path=PATH,
    body=body,
    read_event=read_event,
    read_answer=read_answer,
    sampling_at=("parameters",),
    sampling_keys=("temperature", "top_p", "top_k", "repetition_penalty"),
)
