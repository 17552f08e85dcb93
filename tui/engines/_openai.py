"""The OpenAI-shaped completions API that SGLang, vLLM and llama.cpp's server all serve
(``POST /v1/completions``), as a canary speaks it.

The request asks for a stream and its usage::

    {"prompt": P, "max_tokens": N, "stream": true, "stream_options": {"include_usage": true}}

No ``model``: each server answers with the one model it serves when none is named.
Each ``data:`` event is a chunk ``{"choices": [{"text": T, "finish_reason": R}], ...}``;
with ``include_usage`` a last chunk holds ``{"choices": [], "usage":
{"completion_tokens": N, ...}}``; the stream ends with ``data: [DONE]``. An error comes
as ``{"error": {"message": M, ...}}`` (vLLM >= 0.10, llama.cpp; in the stream too) or
``{"object": "error", "message": M, ...}`` (SGLang, older vLLM), or as a bare string
``{"error": M}``.
"""

from __future__ import annotations

import json

from tui.engines._json_lines import json_object
from tui.engines.spec import CanaryApi, CanaryEvent

PATH = "/v1/completions"
#: The end of an OpenAI stream: no piece of the answer.
DONE = "[DONE]"
#: A message longer than this is cut (a server's traceback in an error answer).
MESSAGE_CHARS = 500


def body(prompt: str, max_tokens: int) -> dict[str, object]:
    """The streaming completion request, with no sampling keys."""
    return {
        "prompt": prompt,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def error_of(data: dict[str, object]) -> str | None:
    """The error an answer carries, as it came (cut at :data:`MESSAGE_CHARS`), or None."""
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        text = message if isinstance(message, str) and message else json.dumps(error)
    elif isinstance(error, str) and error:
        text = error
    elif data.get("object") == "error":
        message = data.get("message")
        text = message if isinstance(message, str) and message else json.dumps(data)
    else:
        return None
    return text[:MESSAGE_CHARS]


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_event(payload: str) -> CanaryEvent | None:
    """One ``data:`` event of the stream: a chunk's text and finish reason, the usage
    chunk's completion tokens, or an error; None for ``[DONE]`` or what is not a chunk."""
    if payload.strip() == DONE:
        return None
    data = json_object(payload)
    if data is None:
        return CanaryEvent(error=f"an event that is not a JSON object: {payload[:80]!r}")
    error = error_of(data)
    if error is not None:
        return CanaryEvent(error=error)
    usage = data.get("usage")
    tokens = _count(usage.get("completion_tokens")) if isinstance(usage, dict) else None
    choices = data.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(first, dict):
        return CanaryEvent(tokens=tokens) if tokens is not None else None
    text = first.get("text")
    reason = first.get("finish_reason")
    return CanaryEvent(
        text=text if isinstance(text, str) else "",
        finish_reason=reason if isinstance(reason, str) and reason else None,
        tokens=tokens,
    )


def read_answer(text: str) -> CanaryEvent | None:
    """A whole answer that was not a stream: its error, or None when it holds none."""
    data = json_object(text)
    if data is None:
        return None
    error = error_of(data)
    return CanaryEvent(error=error) if error is not None else None


#: The canary of a server that speaks this API. ``sampling_keys``: the five
#: generation_config.json keys SGLang and vLLM take as request fields.
CANARY = CanaryApi(path=PATH, body=body, read_event=read_event, read_answer=read_answer)
