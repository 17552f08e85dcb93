"""vLLM's HTTP routes: health, version, models, metrics and the OpenAI generation routes."""

from __future__ import annotations

import time

from tui.sim.response import PROMETHEUS_TEXT, Handler, Response
from tui.sim.version import V
from tui.sim.vllm.lines import VllmLines
from tui.sim.vllm.stalls import ENGINE_DEAD


class Routes(VllmLines):
    """Path -> method -> handler for this release."""

    api_stays_up: bool

    def serving(self) -> bool:
        return self.host.is_ready() and not self.engine_dead

    def routes(self) -> dict[str, dict[str, Handler]]:
        def alive(_body: bytes) -> Response:
            return Response(200) if self.serving() or self.api_stays_up else Response(503)

        def load(_body: bytes) -> Response:
            load = self.host.load
            return Response.json(200, {"server_load": load.running + load.queued})

        refused = Response.json(
            503,
            {
                "object": "error",
                "message": "Service Unavailable",
                "type": "ServiceUnavailableError",
                "param": None,
                "code": 503,
            },
        )
        table: dict[str, dict[str, Handler]] = {
            "/health": {"GET": alive},
            "/version": {"GET": lambda _: Response.json(200, {"version": str(self.v)})},
            "/v1/models": {"GET": lambda _: Response.json(200, self._models())},
            "/metrics": {
                "GET": lambda _: Response(200, self.metrics_text().encode(), PROMETHEUS_TEXT)
            },
        }

        def complete(body: bytes, path: str) -> Response:
            if self.api_stays_up:
                return ENGINE_DEAD
            answer = self.json_post(
                body, lambda payload: self.openai(path, payload, self.served), refused
            )
            return ENGINE_DEAD if self.api_stays_up else answer

        for path in ("/v1/completions", "/v1/chat/completions"):
            table[path] = {"POST": lambda body, path=path: complete(body, path)}
        if self.v >= V("0.7.0"):
            table["/ping"] = {"GET": alive, "POST": alive}
        if self.v >= V("0.8.5"):
            table["/load"] = {"GET": load}
        return table

    def _models(self) -> dict[str, object]:
        created = int(time.time())
        return {
            "object": "list",
            "data": [
                {
                    "id": self.served,
                    "object": "model",
                    "created": created,
                    "owned_by": "vllm",
                    "root": self.model_path,
                    "parent": None,
                    "max_model_len": self.max_model_len,
                    "permission": [
                        {
                            "id": f"modelperm-{self.host.pid:032x}",
                            "object": "model_permission",
                            "created": created,
                            "allow_create_engine": False,
                            "allow_sampling": True,
                            "allow_logprobs": True,
                            "allow_search_indices": False,
                            "allow_view": True,
                            "allow_fine_tuning": False,
                            "organization": "*",
                            "group": None,
                            "is_blocking": False,
                        }
                    ],
                }
            ],
        }
