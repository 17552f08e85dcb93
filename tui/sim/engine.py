"""What the SGLang and vLLM simulations share: the host interface and the engine base.

An :class:`Engine` turns events (a startup step is due, the load model
advanced, a signal arrived, an HTTP request came in) into the lines and
answers of one engine and version. It never sleeps and never touches
sockets: :class:`tui.sim.server.SimServer` owns time, processes and I/O and
calls the engine from its main thread (HTTP answers come from server threads).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from tui.sim.config import SimConfig
from tui.sim.flags import ModelInfo
from tui.sim.gpus import GpuSpec
from tui.sim.load import Advance, LoadModel, LoadProfile, Request
from tui.sim.out import Output
from tui.sim.response import (
    EVENT_STREAM,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    Handler,
    Response,
    parse_json_body,
)
from tui.sim.stream import OpenAIStream
from tui.sim.text import generated, piece
from tui.sim.version import Version


@dataclass(frozen=True)
class MemoryPlan:
    """GiB per rank at each loading stage. Invariant: every part is non-negative."""

    total: float
    context: float
    weights: float
    kv: float
    graph: float
    kv_tokens: int

    def used_after(self, stage: str) -> float:
        parts = {"context": 1, "weights": 2, "kv": 3, "graph": 4}[stage]
        return sum((self.context, self.weights, self.kv, self.graph)[:parts])


@dataclass(frozen=True)
class EngineKind:
    """What the command line needs to know about an engine before building one."""

    name: str
    default_version: str
    default_port: int
    aliases: Mapping[str, str]
    tp_flags: tuple[str, ...]
    releases: tuple[tuple[Version, Version], ...]
    factory: Callable[[SimConfig, Host], Engine]
    #: Why a scenario is not simulated for a release (the lines it would print are not
    #: known for it), or None when it is.
    unsupported: Callable[[Version, str], str | None] = lambda _version, _name: None
    #: How ``--engine-version`` is read (llama.cpp names builds ``bNNNN``).
    parse_version: Callable[[str], Version] = Version.parse
    #: ``--log-format`` choices, the release default first; with the release, why one is
    #: not simulated for it (or None)
    log_formats: tuple[str, ...] = ("default",)
    log_format_unsupported: Callable[[Version, str], str | None] = lambda _version, _name: None

    def supports(self, version: Version) -> bool:
        return any(low <= version <= high for low, high in self.releases)

    def describe_releases(self) -> str:
        return " and ".join(f"{low} to {high}" for low, high in self.releases)


class Host(Protocol):
    """What an engine may ask of the server that runs it (see SimServer)."""

    out: Output
    rng: random.Random
    pid: int
    port: int
    load: LoadModel
    ready: bool
    ready_at: float | None
    http_logging: bool
    gpus: Sequence[GpuSpec]

    def schedule(self, delay: float, action: Callable[[], None]) -> None: ...
    def set_memory(self, per_rank_gib: Sequence[float]) -> None: ...
    def set_phase(self, phase: str) -> None: ...
    def mark_ready(self, announce: Callable[[], None]) -> None: ...
    def is_ready(self) -> bool: ...
    def finish(self, status: int | None, *, sigkill: bool = False) -> None: ...
    def child_pid(self, rank: int) -> int: ...
    def engine_core_pid(self) -> int | None: ...
    def end_engine_core(self, signum: int) -> None: ...


class Engine:
    """Base of the two engines. Subclasses fill in lines, routes and metrics.

    ``spec_on`` is fixed at construction: speculative decoding runs only when
    the server flags ask for it and the scenario does not drop it.
    """

    name = "engine"

    def __init__(self, cfg: SimConfig, host: Host, model: ModelInfo, spec_on: bool) -> None:
        self.cfg = cfg
        self.host = host
        self.model = model
        self.spec_on = spec_on
        self.started_wall = time.time()
        self._route_map: dict[str, dict[str, Handler]] | None = None
        #: the engine stopped stepping (wedged, nccl-timeout) while the process lives on
        self.wedged = False

    # -- lifecycle hooks ----------------------------------------------------------------
    def load_profile(self) -> LoadProfile:
        """Capacity and speed of this server for the load model."""
        raise NotImplementedError

    def plan(self) -> list[tuple[float, Callable[[], None]]]:
        """Startup steps as (seconds after start, action)."""
        raise NotImplementedError

    def on_advance(self, advance: Advance, now: float) -> None:
        """The load model moved; print stats lines that are due."""

    def on_finished(self, request: Request) -> None:
        """A request completed (metrics bookkeeping)."""

    def shutdown(self, signum: int) -> None:
        """Print the lines of a graceful SIGTERM/SIGINT shutdown."""
        raise NotImplementedError

    def ignored_signal(self, signum: int) -> None:
        """A signal arrived that this run ignores (ignore-sigterm)."""

    def crash(self) -> None:
        """Print a runtime crash and end the process (crash-after)."""
        raise NotImplementedError

    def child_killed(self) -> None:
        """A child process was killed (SIGKILL) while serving; the rest says so (killed-after)."""
        raise NotImplementedError

    def bind_failed(self, error: OSError) -> None:
        """The port is taken: print what the engine would."""
        raise NotImplementedError

    # -- the engine stops while the process lives on ------------------------------------
    def wedge(self) -> None:
        """The engine stops stepping for good (wedged): nothing progresses and nothing says
        so; /health keeps its answer and requests wait."""
        self.wedged = True
        self.host.load.freeze()

    def nccl_timeout(self) -> None:
        """A collective never completes: the engine wedges and torch's NCCL watchdog says so
        (nccl-timeout; SGLang and vLLM)."""
        raise NotImplementedError

    def engine_dies(self) -> None:
        """The engine core dies while the API server stays up (engine-dead; vLLM)."""
        raise NotImplementedError

    # -- HTTP ---------------------------------------------------------------------------
    def routes(self) -> dict[str, dict[str, Handler]]:
        """Path -> method -> handler, for this engine and release."""
        raise NotImplementedError

    def serving(self) -> bool:
        """True while generation requests are accepted (ready and not crashed)."""
        return self.host.is_ready()

    def handle(self, method: str, path: str, body: bytes) -> Response:
        """Answer one request: 404 for unknown paths, 405 for a known path's wrong method."""
        if self._route_map is None:
            self._route_map = self.routes()
        methods = self._route_map.get(path.split("?", 1)[0])
        if methods is None:
            return NOT_FOUND
        handler = methods.get("GET" if method == "HEAD" else method)
        return METHOD_NOT_ALLOWED if handler is None else handler(body)

    def json_post(
        self, body: bytes, answer: Callable[[dict[str, object]], Response], refused: Response
    ) -> Response:
        """Common shape of the generation routes: ``refused`` unless serving, 400 on bad JSON."""
        if not self.serving():
            return refused
        payload = parse_json_body(body)
        if payload is None:
            return Response.json(
                400,
                {
                    "object": "error",
                    "message": "invalid JSON body",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                },
            )
        return answer(payload)

    def access(self, client: str, request_line: str, status: int) -> None:
        raise NotImplementedError

    # -- shared helpers -----------------------------------------------------------------
    def memory_plan(self, fraction: float, activation_gib: float, graph_gib: float) -> MemoryPlan:
        """Split one rank's memory: weights, then KV cache up to ``fraction`` of the card."""
        gpu = self.host.gpus[0]
        total = gpu.usable_mib / 1024
        context = 0.52 if self.cfg.tp == 1 else 0.52 + 0.21 * self.cfg.tp / 8
        weights = min(self.model.weights_gib / self.cfg.tp, total * 0.55)
        kv = max(total * fraction - context - weights - activation_gib, total * 0.04)
        per_token = self.model.kv_bytes_per_token / max(1, min(self.cfg.tp, self.model.kv_heads))
        if self.model.mla:
            per_token = self.model.kv_bytes_per_token
        kv_tokens = int(kv * 2**30 / per_token)
        return MemoryPlan(total, context, weights, kv, graph_gib, kv_tokens)

    def base_tps(self) -> float:
        """Decode tokens/s of one request alone, without speculative decoding."""
        speed = 1100.0 / max(self.model.active_b, 0.5) * self.cfg.tp**0.35
        return max(12.0, min(speed, 240.0))

    @property
    def repeat(self) -> bool:
        return self.cfg.scenario.name == "repeat"

    def text(self, tokens: int, rid: int) -> str:
        """Generated text of about ``tokens`` tokens (looping in the repeat scenario)."""
        return generated(tokens, rid, repeat=self.repeat)

    @staticmethod
    def prompt_tokens(prompt: object) -> int:
        """Rough token count: ids count one each, text about four characters per token."""
        if isinstance(prompt, list):
            if prompt and all(isinstance(item, int) for item in prompt):
                return len(prompt)
            return sum(Engine.prompt_tokens(item) for item in prompt)
        if isinstance(prompt, str):
            return max(1, (len(prompt) + 3) // 4)
        return 1

    def text_piece(self, rid: int) -> Callable[[int, int], str]:
        """Tokens ``first`` to ``end`` of request ``rid``'s text (a stream's pieces)."""
        return lambda first, end: piece(first, end, rid, repeat=self.repeat)

    #: the content type of this server's streamed answers
    stream_type = EVENT_STREAM

    def stream_headers(self) -> tuple[tuple[str, str], ...]:
        """Headers a streamed answer of this server carries besides the content type."""
        return ()

    def generate(self, prompt_tokens: int, max_new: int, key: str | None) -> Request | None:
        """Run one request through the load model; None if the server went away meanwhile."""
        request = self.host.load.submit(prompt_tokens, max_new, key)
        self.host.load.wait(request, timeout=3600.0)
        if request.aborted or request.finished is None:
            return None
        return request

    def openai(self, path: str, body: dict[str, object], model_id: str) -> Response:
        """/v1/completions and /v1/chat/completions, shaped like the OpenAI API."""
        chat = path.endswith("/chat/completions")
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list):
                return Response.json(
                    400,
                    {
                        "object": "error",
                        "message": "messages is required",
                        "type": "BadRequestError",
                        "param": None,
                        "code": 400,
                    },
                )
            prompt_text = json.dumps(messages)
            prompt_tokens = self.prompt_tokens(
                [m.get("content", "") for m in messages if isinstance(m, dict)]
            ) + 4 * len(messages)
            default_max = 256
        else:
            prompt = body.get("prompt", "")
            prompt_text = json.dumps(prompt)
            prompt_tokens = self.prompt_tokens(prompt)
            default_max = 16
        raw_max = body.get("max_completion_tokens", body.get("max_tokens"))
        max_new = raw_max if isinstance(raw_max, int) and raw_max > 0 else default_max
        if body.get("stream") is True:
            streamed = self.host.load.submit(prompt_tokens, max_new, prompt_text, streamed=True)
            options = body.get("stream_options")
            answer = OpenAIStream(
                ident=f"{'chatcmpl' if chat else 'cmpl'}-{streamed.rid:032x}",
                created=int(time.time()),
                model=model_id,
                chat=chat,
                include_usage=isinstance(options, dict) and options.get("include_usage") is True,
            )
            events = answer.events(self.host.load, streamed, self.text_piece(streamed.rid))
            return Response.stream(events, self.stream_type, self.stream_headers())
        request = self.generate(prompt_tokens, max_new, prompt_text)
        if request is None:
            return Response.json(
                503,
                {
                    "object": "error",
                    "message": "server shutting down",
                    "type": "ServiceUnavailableError",
                    "param": None,
                    "code": 503,
                },
            )
        text = self.text(request.completion_tokens, request.rid)
        created = int(time.time())
        usage = {
            "prompt_tokens": request.prompt_tokens,
            "total_tokens": request.prompt_tokens + request.completion_tokens,
            "completion_tokens": request.completion_tokens,
            "prompt_tokens_details": None,
        }
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{request.rid:032x}"
        if chat:
            choice: dict[str, object] = {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": text.strip(),
                    "tool_calls": [],
                    "reasoning_content": None,
                },
                "logprobs": None,
                "finish_reason": "length",
                "stop_reason": None,
            }
            payload = {
                "id": rid,
                "object": "chat.completion",
                "created": created,
                "model": model_id,
                "choices": [choice],
                "usage": usage,
            }
        else:
            choice = {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": "length",
                "stop_reason": None,
                "prompt_logprobs": None,
            }
            payload = {
                "id": rid,
                "object": "text_completion",
                "created": created,
                "model": model_id,
                "choices": [choice],
                "usage": usage,
            }
        return Response.json(200, payload)


def number(value: object, default: float) -> float:
    """A numeric flag value, or ``default`` when the flag is missing or not a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default
