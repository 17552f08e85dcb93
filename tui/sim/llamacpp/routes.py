"""llama-server's HTTP routes: ``/health``, ``/metrics``, ``/slots``, ``/props``, the models
list, ``/completion`` and the OpenAI routes.

Answers are nlohmann ``ordered_json`` dumps: compact, keys in the order the server inserts
them. Errors are ``{"error":{"code":N,"message":"...","type":"..."}}``; while the model
loads every route answers 503 ``Loading model``. A streamed OpenAI answer is
``text/event-stream`` with cpp-httplib's ``Keep-Alive`` header.
"""

from __future__ import annotations

import json
import time

from tui.sim.llamacpp.lines import LlamaLines
from tui.sim.response import Handler, Response

#: the content type llama-server gives its Prometheus page
METRICS_TYPE = "text/plain; version=0.0.4"
#: error types (server-common.h ``error_type``) by HTTP status
ERROR_TYPES = {
    400: "invalid_request_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}
#: n_predict when a request gives none (the server's -1 generates until end of text)
DEFAULT_PREDICT = 256
#: defaults shown in a slot's params
SAMPLING = {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05}


def dump(payload: object) -> bytes:
    """nlohmann ``dump()``: compact, non-ASCII kept."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def error(status: int, message: str) -> Response:
    body = {"error": {"code": status, "message": message, "type": ERROR_TYPES[status]}}
    return Response(status, dump(body), "application/json; charset=utf-8")


def ok(payload: object) -> Response:
    return Response(200, dump(payload), "application/json; charset=utf-8")


LOADING = error(503, "Loading model")
#: cpp-httplib's keep-alive limits (``CPPHTTPLIB_KEEPALIVE_TIMEOUT_SECOND``, ``..._MAX_COUNT``)
KEEP_ALIVE = "timeout=5, max=5"


class Routes(LlamaLines):
    """Path -> method -> handler for this build."""

    #: ``set_chunked_content_provider("text/event-stream", ...)``: no charset
    stream_type = "text/event-stream"

    def stream_headers(self) -> tuple[tuple[str, str], ...]:
        """cpp-httplib's ``Keep-Alive`` header on a kept-alive connection."""
        return (("Keep-Alive", KEEP_ALIVE),)

    def handle(self, method: str, path: str, body: bytes) -> Response:
        """Every route answers 503 ``Loading model`` until the model is loaded."""
        if not self.host.is_ready():
            return LOADING
        return super().handle(method, path, body)

    def routes(self) -> dict[str, dict[str, Handler]]:
        health = {"GET": lambda _: ok({"status": "ok"})}
        models = {"GET": lambda _: self._models()}
        chat = {"POST": lambda body: self._openai(body, "/v1/chat/completions")}
        completions = {"POST": lambda body: self._openai(body, "/v1/completions")}
        return {
            "/health": health,
            "/v1/health": health,
            "/metrics": {"GET": lambda _: self._metrics()},
            "/slots": {"GET": lambda _: self._slots()},
            "/props": {"GET": lambda _: self._props()},
            "/models": models,
            "/v1/models": models,
            "/completion": {"POST": self._completion},
            "/completions": completions,
            "/v1/completions": completions,
            "/chat/completions": chat,
            "/v1/chat/completions": chat,
        }

    def _metrics(self) -> Response:
        if not self.cfg.flags.has("metrics"):
            return error(
                501, "This server does not support metrics endpoint. Start it with `--metrics`"
            )
        return Response(200, self.metrics_text().encode(), METRICS_TYPE)

    def _slots_enabled(self) -> bool:
        flags = self.cfg.flags
        if self.shape == "2024":
            return flags.has("slots")
        return not flags.has("no_slots")

    def _slots(self) -> Response:
        if not self._slots_enabled():
            return error(
                501, "This server does not support slots endpoint. Start it with `--slots`"
            )
        with self._lock:
            by_slot = {task.slot_id: task for task in self.tasks.values()}
        return ok([self._slot_json(index, by_slot.get(index)) for index in range(self.n_slots)])

    def _slot_json(self, index: int, task: object) -> dict[str, object]:
        request = getattr(task, "request", None)
        task_id = getattr(task, "task_id", -1)
        n_gen = int(request.generated) if request is not None else 0
        params: dict[str, object] = {"n_predict": -1, "seed": 4294967295, **SAMPLING}
        if self.spec is not None:
            params.update(
                {"speculative.n_max": self.draft_max, "speculative.n_min": self.draft_min}
            )
        if self.shape == "2024":
            return {
                "n_ctx": self.n_ctx_slot,
                "n_predict": -1,
                "model": self.model_path,
                **SAMPLING,
                "id": index,
                "id_task": task_id,
                "state": 1 if request is not None else 0,
                "prompt": "",
                "next_token": {
                    "has_next_token": request is not None,
                    "n_remain": -1,
                    "n_decoded": n_gen,
                    "stopped_eos": False,
                    "stopped_word": False,
                    "stopped_limit": False,
                    "stopping_word": "",
                },
            }
        slot: dict[str, object] = {
            "id": index,
            "n_ctx": self.n_ctx_slot,
            "speculative": self.spec is not None,
            "is_processing": request is not None,
        }
        next_token = {
            "has_next_token": request is not None,
            "has_new_line": False,
            "n_remain": -1,
            "n_decoded": n_gen,
        }
        if self.shape == "2025":
            return {
                "id": index,
                "id_task": task_id,
                **{key: slot[key] for key in ("n_ctx", "speculative", "is_processing")},
                "params": params,
                "prompt": "",
                "next_token": {**next_token, "stopping_word": ""},
            }
        if request is not None:
            slot.update(
                {
                    "id_task": task_id,
                    "n_prompt_tokens": request.prompt_tokens,
                    "n_prompt_tokens_processed": request.prompt_tokens - request.cached_tokens,
                    "n_prompt_tokens_cache": request.cached_tokens,
                    "params": params,
                    "next_token": [next_token],
                    "prompt": "",
                    "generated": "",
                }
            )
        return slot

    def _props(self) -> Response:
        return ok(
            {
                "default_generation_settings": {"n_ctx": self.n_ctx_slot, "params": SAMPLING},
                "total_slots": self.n_slots,
                "model_path": self.model_path,
                "endpoint_slots": self._slots_enabled(),
                "endpoint_metrics": self.cfg.flags.has("metrics"),
                "build_info": f"{self.v}-{self.commit}",
            }
        )

    def _models(self) -> Response:
        meta = {
            "vocab_type": 2,
            "n_vocab": 151936,
            "n_ctx": self.n_ctx_slot,
            "n_ctx_train": self.model.context_len,
            "n_params": int(self.model.params_b * 1e9),
            "size": int(self.weights_mib * 2**20),
        }
        model: dict[str, object] = {"id": self.model_id}
        if self.shape == "2026":
            model.update({"aliases": [self.alias] if self.alias else [], "tags": []})
        model.update(
            {"object": "model", "created": int(time.time()), "owned_by": "llamacpp", "meta": meta}
        )
        listing = {"name": self.model_id, "model": self.model_id, "type": "model"}
        return ok({"models": [listing], "object": "list", "data": [model]})

    def _parse(self, body: bytes) -> dict[str, object] | Response:
        try:
            payload = json.loads(body or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as problem:
            return error(500, f"[json.exception.parse_error.101] parse error: {problem.msg}")
        if not isinstance(payload, dict):
            return error(400, "request body must be a JSON object")
        return payload

    def _openai(self, body: bytes, path: str) -> Response:
        payload = self._parse(body)
        if isinstance(payload, Response):
            return payload
        return self.openai(path, payload, self.model_id)

    def _completion(self, body: bytes) -> Response:
        payload = self._parse(body)
        if isinstance(payload, Response):
            return payload
        prompt = payload.get("prompt", "")
        raw = payload.get("n_predict", DEFAULT_PREDICT)
        n_predict = raw if isinstance(raw, int) and raw > 0 else DEFAULT_PREDICT
        request = self.generate(self.prompt_tokens(prompt), n_predict, json.dumps(prompt))
        if request is None:
            return error(503, "Loading model")
        n_prompt = request.prompt_tokens - request.cached_tokens
        first = request.first_token or request.arrived
        prompt_ms = max((first - (request.admitted or request.arrived)) * 1000.0, 0.01)
        gen_ms = max(((request.finished or first) - first) * 1000.0, 0.01)
        n_gen = request.completion_tokens
        return ok(
            {
                "index": 0,
                "content": self.text(n_gen, request.rid),
                "tokens": [],
                "id_slot": 0,
                "stop": True,
                "model": self.model_id,
                "tokens_predicted": n_gen,
                "tokens_evaluated": request.prompt_tokens,
                "prompt": prompt if isinstance(prompt, str) else "",
                "has_new_line": False,
                "truncated": False,
                "stop_type": "limit",
                "stopping_word": "",
                "tokens_cached": request.prompt_tokens + n_gen,
                "timings": {
                    "prompt_n": n_prompt,
                    "prompt_ms": prompt_ms,
                    "prompt_per_token_ms": prompt_ms / max(n_prompt, 1),
                    "prompt_per_second": n_prompt / prompt_ms * 1000.0,
                    "predicted_n": n_gen,
                    "predicted_ms": gen_ms,
                    "predicted_per_token_ms": gen_ms / max(n_gen, 1),
                    "predicted_per_second": n_gen / gen_ms * 1000.0,
                },
            }
        )
