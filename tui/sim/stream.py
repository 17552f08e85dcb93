"""Streamed generation: a request's tokens as the load model makes them, and the
server-sent events the OpenAI-style routes send them in.

Each event is ``data: {compact json}\\n\\n`` (pydantic's and nlohmann's dumps are compact);
the chunks follow the OpenAI shapes vLLM's and SGLang's ``serving_completion`` /
``serving_chat`` write: ``object`` ``text_completion`` (``choices[0].text``) or
``chat.completion.chunk`` (``choices[0].delta``, the role in the first),
``finish_reason`` null until the last chunk, which says ``length``; with
``stream_options.include_usage`` every chunk carries ``"usage": null`` and a last chunk
with no choices carries the usage; then ``data: [DONE]``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tui.sim.load import LoadModel, Request

#: how long one wait for more tokens lasts before the feed looks again; a wedged engine
#: makes none, so the feed waits on and on with the connection open
FEED_WAIT = 1.0
DONE = b"data: [DONE]\n\n"


def feed(load: LoadModel, request: Request) -> Iterator[tuple[int, int]]:
    """``(first, end)`` token ranges of ``request`` as they are made; ends when it finished
    (or is aborted because the server goes away)."""
    seen = 0
    while True:
        count = load.wait_progress(request, seen, FEED_WAIT)
        if request.aborted:
            return
        if count > seen:
            yield seen, count
            seen = count
        elif request.finished is not None:
            return


def event(payload: object, prefix: bytes = b"data: ") -> bytes:
    """One server-sent event holding ``payload`` as compact JSON."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return prefix + text.encode() + b"\n\n"


@dataclass(frozen=True)
class OpenAIStream:
    """The chunks of one streamed ``/v1/completions`` or ``/v1/chat/completions`` answer."""

    ident: str
    created: int
    model: str
    chat: bool
    include_usage: bool

    def _chunk(self, text: str | None, finish: str | None, *, first: bool) -> bytes:
        choice: dict[str, object]
        if self.chat:
            delta: dict[str, object] = {}
            if first:
                delta["role"] = "assistant"
            if text is not None:
                delta["content"] = text
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        else:
            choice = {
                "index": 0,
                "text": text or "",
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": None,
            }
        payload: dict[str, object] = {
            "id": self.ident,
            "object": "chat.completion.chunk" if self.chat else "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }
        if self.include_usage:
            payload["usage"] = None
        return event(payload)

    def events(
        self,
        load: LoadModel,
        request: Request,
        text: Callable[[int, int], str],
    ) -> Iterator[bytes]:
        """The events of ``request`` as its tokens come; ``text(first, end)`` is their text."""
        first = True
        if self.chat:
            yield self._chunk("", None, first=True)
            first = False
        for start, end in feed(load, request):
            yield self._chunk(text(start, end), None, first=first)
            first = False
        if request.aborted:
            return
        yield self._chunk(None if self.chat else "", "length", first=first)
        if self.include_usage:
            usage = {
                "prompt_tokens": request.prompt_tokens,
                "total_tokens": request.prompt_tokens + request.completion_tokens,
                "completion_tokens": request.completion_tokens,
            }
            yield event(
                {
                    "id": self.ident,
                    "object": "chat.completion.chunk" if self.chat else "text_completion",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": usage,
                }
            )
        yield DONE
