"""SGLang's HTTP routes: health (which may generate), model and server info, metrics,
``/generate`` and the OpenAI routes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from tui.sim.response import NOT_FOUND, PROMETHEUS_TEXT, Handler, Response
from tui.sim.sglang.lines import MODEL_INFO_DEPRECATED, SglangLines
from tui.sim.version import V


class Routes(SglangLines):
    """Path -> method -> handler for this release."""

    def routes(self) -> dict[str, dict[str, Handler]]:
        new_paths = self.v >= V("0.5.6")  # /model_info and /server_info; old names deprecated
        served = str(self.args["served_model_name"])
        refused = Response.json(503, {"error": {"message": "Server is not ready"}})

        def post(answer: Callable[[dict[str, object]], Response]) -> dict[str, Handler]:
            return {"POST": lambda body: self.json_post(body, answer, refused)}

        table: dict[str, dict[str, Handler]] = {
            "/health": {"GET": self._health},
            "/health_generate": {"GET": self._health},
            "/get_model_info": {"GET": lambda _: self._model_info(deprecated=new_paths)},
            "/get_server_info": {"GET": lambda _: self._server_info()},
            "/v1/models": {"GET": lambda _: self._models()},
            "/metrics": {"GET": lambda _: self._metrics()},
            "/generate": post(self._generate),
            "/v1/completions": post(lambda p: self.openai("/v1/completions", p, served)),
            "/v1/chat/completions": post(lambda p: self.openai("/v1/chat/completions", p, served)),
        }
        if new_paths:
            table["/model_info"] = {"GET": lambda _: self._model_info(deprecated=False)}
            table["/server_info"] = table["/get_server_info"]
        return table

    def _models(self) -> Response:
        model = {
            "id": self.args["served_model_name"],
            "object": "model",
            "created": int(time.time()),
            "owned_by": "sglang",
            "root": self.model_path,
            "max_model_len": self.context_len,
        }
        return Response.json(200, {"object": "list", "data": [model]})

    def _metrics(self) -> Response:
        if not self.args.get("enable_metrics"):
            return NOT_FOUND  # SGLang mounts /metrics only with --enable-metrics
        return Response(200, self.metrics_text().encode(), PROMETHEUS_TEXT)

    def _health(self, _body: bytes = b"") -> Response:
        if not self.host.is_ready():
            return Response(503)
        if not self.health_generates or self.wedged or self.host.load.running > 0:
            # wedged: the probe answers 200 without a generation, the API side that stays
            # healthy while the scheduler is stuck
            return Response(200)
        request = self.generate(1, 1, None)
        return Response(200) if request is not None else Response(503)

    def _generate(self, payload: dict[str, object]) -> Response:
        params = payload.get("sampling_params")
        params = params if isinstance(params, dict) else {}
        raw_max = params.get("max_new_tokens", 128)
        max_new = raw_max if isinstance(raw_max, int) and raw_max > 0 else 128
        prompt = payload.get("input_ids", payload.get("text", ""))
        request = self.generate(self.prompt_tokens(prompt), max_new, json.dumps(prompt))
        if request is None:
            return Response.json(503, {"error": {"message": "Server is shutting down"}})
        meta: dict[str, object] = {
            "id": f"{request.rid:032x}",
            "finish_reason": {"type": "length", "length": request.completion_tokens},
            "prompt_tokens": request.prompt_tokens,
            "completion_tokens": request.completion_tokens,
            "cached_tokens": request.cached_tokens,
            "e2e_latency": round((request.finished or 0.0) - request.arrived, 6),
        }
        if self.v >= V("0.5.0"):
            meta["weight_version"] = "default"
        if self.spec is not None:
            meta["spec_verify_ct"] = max(1, round(request.completion_tokens / self.spec.mean_len))
        return Response.json(
            200,
            {"text": self.text(request.completion_tokens, request.rid).strip(), "meta_info": meta},
        )

    def _model_info(self, *, deprecated: bool) -> Response:
        if deprecated:
            self.main(MODEL_INFO_DEPRECATED)
        info: dict[str, object] = {
            "model_path": self.model_path,
            "tokenizer_path": self.args["tokenizer_path"],
            "is_generation": True,
            "preferred_sampling_params": None,
        }
        if self.v >= V("0.5.0"):
            info.update(
                {
                    "weight_version": "default",
                    "has_image_understanding": False,
                    "has_audio_understanding": False,
                    "model_type": self.model.model_type,
                    "architectures": [self.model.arch],
                }
            )
        return Response.json(200, info)

    def _server_info(self) -> Response:
        info: dict[str, object] = {
            k: v
            for k, v in self.args.items()
            if isinstance(v, (str, int, float, bool, type(None), list, dict))
        }
        with self._lock:
            state: dict[str, object] = {
                "last_gen_throughput": self.last_gen_throughput,
                "memory_usage": {
                    "weight": round(self.mem.weights, 2),
                    "kvcache": round(self.mem.kv, 2),
                    "token_capacity": self.max_total_tokens,
                    "graph": round(self.mem.graph, 2) if self.cuda_graph else 0,
                },
            }
            if self.spec is not None:
                state["avg_spec_accept_length"] = self.last_accept_len or self.spec.mean_len
        info.update(
            {
                "max_total_num_tokens": self.max_total_tokens,
                "max_req_input_len": self.context_len - 5,
                "internal_states": [state],
                "version": str(self.v),
            }
        )
        return Response.json(200, info)
