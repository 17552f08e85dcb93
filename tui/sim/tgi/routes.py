"""TGI's HTTP routes: health, info, metrics, ``/generate`` (and ``/``), the OpenAI routes.

The router listens only once it is ``Connected``; the simulated socket is
bound from the start, so before that every route answers 503 as ``/health``
does for an unhealthy server. Each generation ends with the ``Success`` line in
the handler's span (``generate``, ``generate_stream``, ``chat_completions``,
``completions``).
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tui.sim.load import Request
from tui.sim.response import Handler, Response
from tui.sim.stream import event, feed
from tui.sim.tgi.lines import Field, Span, TgiLines
from tui.sim.tgi.releases import V3
from tui.sim.tgi.rust import NANOS_PER_SECOND, Some, duration_debug, struct_debug
from tui.sim.version import Version


@dataclass(frozen=True)
class _Call:
    """One generation request as the router validated it."""

    inputs: str
    params: dict[str, object]
    prompt_tokens: int
    max_new: int
    span: Span


UNHEALTHY = Response.json(503, {"error": "unhealthy", "error_type": "healthcheck"})
TEXT_PLAIN = "text/plain; charset=utf-8"
#: ``max_new_tokens`` when a 2.x request gives none (3.x fills the rest of max_total_tokens)
LEGACY_MAX_NEW = 100
#: GenerateParameters in declaration order with the value a request that sets nothing gets
_PARAMETERS: tuple[tuple[str, object], ...] = (
    ("adapter_id", None),
    ("best_of", None),
    ("temperature", None),
    ("repetition_penalty", None),
    ("frequency_penalty", None),
    ("top_k", None),
    ("top_p", None),
    ("typical_p", None),
    ("do_sample", False),
    ("max_new_tokens", None),
    ("return_full_text", None),
    ("stop", []),
    ("truncate", None),
    ("watermark", False),
    ("details", False),
    ("decoder_input_details", False),
    ("seed", None),
    ("top_n_tokens", None),
    ("grammar", None),
)
_OPTIONAL = {
    "adapter_id",
    "best_of",
    "temperature",
    "repetition_penalty",
    "frequency_penalty",
    "top_k",
    "top_p",
    "typical_p",
    "return_full_text",
    "truncate",
    "seed",
    "top_n_tokens",
}


def parameters_debug(params: dict[str, object], max_new: int) -> str:
    """``{:?}`` of the request's GenerateParameters (the ``parameters`` span field)."""
    fields: list[tuple[str, object]] = []
    for name, default in _PARAMETERS:
        value = params.get(name, default)
        if name == "max_new_tokens":
            value = Some(max_new)
        elif name in _OPTIONAL and value is not None:
            value = Some(value)
        elif name == "stop" and not isinstance(value, list):
            value = []
        elif name == "grammar":
            value = None
        fields.append((name, value))
    return struct_debug("GenerateParameters", fields, pretty=False)


class Routes(TgiLines):
    """Path -> method -> handler for this release."""

    v: Version
    model_id: str
    max_input_tokens: int
    max_total_tokens: int
    max_concurrent: int
    shard_dead: bool
    #: the span and parameters of the request this HTTP thread is handling
    _call: threading.local

    def serving(self) -> bool:
        return self.host.is_ready() and not self.shard_dead

    def routes(self) -> dict[str, dict[str, Handler]]:
        def post(answer: Callable[[dict[str, object]], Response]) -> dict[str, Handler]:
            return {"POST": lambda body: self.json_post(body, answer, UNHEALTHY)}

        return {
            "/health": {
                "GET": lambda _: Response(200, b"", TEXT_PLAIN) if self.serving() else UNHEALTHY
            },
            "/info": {"GET": lambda _: Response.json(200, self._info())},
            "/metrics": {"GET": lambda _: Response(200, self.metrics_text().encode(), TEXT_PLAIN)},
            "/v1/models": {"GET": lambda _: Response.json(200, self._models())},
            "/generate": post(lambda payload: self._generate(payload, compat=False)),
            "/generate_stream": post(self._generate_stream),
            "/": post(lambda payload: self._generate(payload, compat=True)),
            "/v1/chat/completions": post(lambda p: self._openai("/v1/chat/completions", p)),
            "/v1/completions": post(lambda p: self._openai("/v1/completions", p)),
        }

    def _info(self) -> dict[str, object]:
        return {
            "model_id": self.model_id,
            "model_sha": None,
            "model_pipeline_tag": "text-generation",
            "max_concurrent_requests": self.max_concurrent,
            "max_best_of": 2,
            "max_stop_sequences": 4,
            "max_input_tokens": self.max_input_tokens,
            "max_total_tokens": self.max_total_tokens,
            "validation_workers": 2,
            "max_client_batch_size": 4,
            "router": "text-generation-router",
            "version": str(self.v),
            "sha": None,
            "docker_label": None,
        }

    def _models(self) -> dict[str, object]:
        model = {"id": self.model_id, "object": "model", "created": 0, "owned_by": self.model_id}
        return {"object": "list", "data": [model]}

    def _read(self, payload: dict[str, object], span: str) -> _Call | Response:
        """A generation request's inputs and parameters, or the 422 TGI answers."""
        inputs = payload.get("inputs")
        if not isinstance(inputs, str):
            self.record_failure("validation")
            return Response.json(
                422, {"error": "Failed to deserialize the JSON body", "error_type": "validation"}
            )
        params = payload.get("parameters")
        params = params if isinstance(params, dict) else {}
        prompt_tokens = self.prompt_tokens(inputs)
        raw_max = params.get("max_new_tokens")
        default_max = (
            max(1, self.max_total_tokens - prompt_tokens) if self.v >= V3 else LEGACY_MAX_NEW
        )
        max_new = raw_max if isinstance(raw_max, int) and raw_max > 0 else default_max
        parameters = Field.debug("parameters", parameters_debug(params, max_new))
        return _Call(inputs, params, prompt_tokens, max_new, Span(span, (parameters,)))

    def _generate(self, payload: dict[str, object], *, compat: bool) -> Response:
        call = self._read(payload, "generate")
        if isinstance(call, Response):
            return call
        self._call.span = call.span
        self._call.params = call.params
        request = self.generate(call.prompt_tokens, call.max_new, call.inputs)
        if request is None:
            return Response.json(
                424, {"error": "Request failed during generation", "error_type": "generation"}
            )
        text = self.text(request.completion_tokens, request.rid)
        answer: dict[str, object] = {"generated_text": text}
        if call.params.get("details"):
            answer["details"] = {
                "finish_reason": "length",
                "generated_tokens": request.completion_tokens,
                "seed": None,
                "prefill": [],
                "tokens": [],
            }
        return Response.json(200, [answer] if compat else answer)

    def _generate_stream(self, payload: dict[str, object]) -> Response:
        """``/generate_stream``: one ``data:{...}`` event per token as it is made (axum's
        SSE, no space after the colon), the last with ``generated_text`` and ``details``."""
        call = self._read(payload, "generate_stream")
        if isinstance(call, Response):
            return call
        self.record_request(call.max_new, call.prompt_tokens)
        request = self.host.load.submit(
            call.prompt_tokens, call.max_new, call.inputs, streamed=True
        )
        return Response.stream(self._stream_events(call, request), "text/event-stream")

    def _stream_events(self, call: _Call, request: Request) -> Iterator[bytes]:
        rng = self.host.rng
        text = self.text_piece(request.rid)
        pieces: list[str] = []
        last: dict[str, object] | None = None
        for first, end in feed(self.host.load, request):
            for index in range(first, end):
                if last is not None:
                    yield event(last, b"data:")
                piece = text(index, index + 1)
                pieces.append(piece)
                token = {
                    "id": 1000 + zlib.crc32(piece.encode()) % 150000,
                    "text": piece,
                    "logprob": round(-rng.expovariate(4.0), 4),
                    "special": False,
                }
                last = {"index": index + 1, "token": token, "generated_text": None, "details": None}
        if request.aborted or self.shard_dead or last is None:
            self.record_failure("generation")
            return
        last["generated_text"] = "".join(pieces)
        last["details"] = {
            "finish_reason": "length",
            "generated_tokens": request.completion_tokens,
            "seed": None,
        }
        self._success(call.span, request, call.params)
        yield event(last, b"data:")

    def _openai(self, path: str, payload: dict[str, object]) -> Response:
        name = "chat_completions" if path.endswith("/chat/completions") else "completions"
        self._call.span = Span(name)
        self._call.params = payload
        return self.openai(path, payload, self.model_id)

    def generate(self, prompt_tokens: int, max_new: int, key: str | None) -> Request | None:
        """Count the request, run it, then log its ``Success`` in the handler's span."""
        self.record_request(max_new, prompt_tokens)
        request = super().generate(prompt_tokens, max_new, key)
        if request is None or self.shard_dead:
            self.record_failure("generation")
            return None
        span = getattr(self._call, "span", Span("generate"))
        self._success(span, request, getattr(self._call, "params", {}))
        return request

    def _success(self, span: Span, request: Request, params: dict[str, object]) -> None:
        """The handler's timings into its span, the metrics, then ``Success``."""
        rng = self.host.rng
        finished = request.finished or request.arrived
        admitted = request.admitted or request.arrived
        validation = int(rng.uniform(150e-6, 900e-6) * NANOS_PER_SECOND)
        queue = int(max(admitted - request.arrived, 0.0) * NANOS_PER_SECOND) + int(
            rng.uniform(20e-6, 90e-6) * NANOS_PER_SECOND
        )
        inference = max(int((finished - admitted) * NANOS_PER_SECOND), 1)
        total = validation + queue + inference + int(rng.uniform(5e-6, 40e-6) * NANOS_PER_SECOND)
        per_token = inference // max(request.completion_tokens, 1)
        seed = params.get("seed")
        if params.get("do_sample") and not isinstance(seed, int):
            seed = rng.randrange(2**63)
        timings = (
            ("total_time", total),
            ("validation_time", validation),
            ("queue_time", queue),
            ("inference_time", inference),
            ("time_per_token", per_token),
        )
        fields = span.fields + tuple(
            Field.string(key, duration_debug(nanos)) for key, nanos in timings
        )
        fields += (Field.string("seed", f"Some({seed})" if isinstance(seed, int) else "None"),)
        names = (
            "tgi_request_duration",
            "tgi_request_validation_duration",
            "tgi_request_queue_duration",
            "tgi_request_inference_duration",
            "tgi_request_mean_time_per_token_duration",
        )
        self.record_success(
            request,
            {
                name: nanos / NANOS_PER_SECOND
                for name, (_, nanos) in zip(names, timings, strict=True)
            },
        )
        self.router("success", "Success", spans=(Span(span.name, fields),))
