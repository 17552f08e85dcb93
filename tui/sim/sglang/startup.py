"""SGLang's startup, first line to ready: the args line, distributed init, weights, KV pool,
CUDA graphs, uvicorn and the warmup request."""

from __future__ import annotations

from collections.abc import Callable

from tui.sim.load import Request
from tui.sim.out import STDERR
from tui.sim.sglang.lines import MODEL_INFO_DEPRECATED, SglangLines
from tui.sim.version import V
from tui.sim.weights_bar import safetensors_bar


class Startup(SglangLines):
    """The startup plan and the lines it writes."""

    def plan(self) -> list[tuple[float, Callable[[], None]]]:
        slow = self.cfg.scenario.name == "slow-load"
        total = self.cfg.load_seconds * (4.0 if slow else 1.0)
        rng = self.host.rng
        mem = self.mem
        avail_weights = mem.total - rng.uniform(0.45, 0.75) - mem.context
        avail_kv = avail_weights - mem.weights
        avail_graph = avail_kv - mem.kv
        avail_final = avail_graph - mem.graph if self.cuda_graph else avail_graph
        shards = self.model.shards
        shard_rate = rng.uniform(0.9, 1.6) / (4.0 if slow else 1.0)
        graph_secs = rng.uniform(3.5, 9.0)
        dist_usage = mem.context if self.cfg.tp > 1 else 0.0
        if self.model.mla:
            kv_line = f"KV Cache is allocated. #tokens: {mem.kv_tokens}, KV size: {mem.kv:.2f} GB"
        else:
            kv_line = (
                f"KV Cache is allocated. #tokens: {mem.kv_tokens}, "
                f"K size: {mem.kv / 2:.2f} GB, V size: {mem.kv / 2:.2f} GB"
            )
        limits = (
            f"max_total_num_tokens={self.max_total_tokens}, "
            f"chunked_prefill_size={self.args['chunked_prefill_size']}, "
            f"max_prefill_tokens={self.args['max_prefill_tokens']}, "
            f"max_running_requests={self.max_running}, context_len={self.context_len}, "
            f"available_gpu_mem={avail_final:.2f} GB"
        )
        steps: list[tuple[float, Callable[[], None]]] = []

        def at(fraction: float, *actions: Callable[[], None]) -> None:
            steps.extend((total * fraction, action) for action in actions)

        def ranks(*messages: str) -> Callable[[], None]:
            def action() -> None:
                for message in messages:
                    self.every_rank(message)

            return action

        def memory(stage: str) -> Callable[[], None]:
            return lambda: self.host.set_memory([mem.used_after(stage)] * self.cfg.tp)

        if self.v >= V("0.5.20"):  # logger.info(f"server_args={server_args.resolved_dict()}")
            args_line = f"server_args={self.args!r}"
        else:  # logger.info(f"{server_args=}"): the dataclass repr
            args = ", ".join(f"{key}={value!r}" for key, value in self.args.items())
            args_line = f"server_args=ServerArgs({args})"
        at(
            0.0,
            lambda: self.main(args_line),
            lambda: self.host.set_phase("loading"),
        )
        at(0.04, ranks("Init torch distributed begin."))
        at(
            0.10,
            ranks(f"Init torch distributed ends. mem usage={dist_usage:.2f} GB"),
            memory("context"),
        )
        at(0.12, ranks(f"Load weight begin. avail mem={avail_weights:.2f} GB"))
        for index in range(shards + 1):
            at(
                0.14 + 0.42 * index / shards,
                lambda i=index: self._shard_line(i, shards, shard_rate),
            )
        at(0.56, lambda: self._shard_line(shards, shards, shard_rate, closing=True))
        at(
            0.58,
            ranks(
                f"Load weight end. type={self.model.arch}, dtype=torch.bfloat16, "
                f"avail mem={avail_kv:.2f} GB, mem usage={mem.weights:.2f} GB."
            ),
            memory("weights"),
        )
        if self.cfg.scenario.name == "oom":
            at(0.62, self.oom)
            return steps
        if self.cfg.scenario.name == "killed-at-load":
            at(0.59, self.scheduler_killed_at_load)
            return steps
        at(0.62, ranks(kv_line, f"Memory pool end. avail mem={avail_graph:.2f} GB"), memory("kv"))
        if self.cuda_graph:
            at(
                0.66,
                ranks(
                    "Capture cuda graph begin. This can take up to several minutes. "
                    f"avail mem={avail_graph:.2f} GB"
                ),
            )
            at(
                0.84,
                ranks(
                    f"Capture cuda graph end. Time elapsed: {graph_secs:.2f} s. "
                    f"mem usage={mem.graph:.2f} GB. avail mem={avail_final:.2f} GB."
                ),
                memory("graph"),
            )
        at(0.87, lambda: self.sched(limits))
        at(0.90, self._uvicorn_start)
        at(0.93, self._warmup)
        return steps

    def _shard_line(self, done: int, shards: int, rate: float, *, closing: bool = False) -> None:
        """tqdm writes to stderr without SGLang's prefix; closing adds tqdm's final newline."""
        self.host.out.write(safetensors_bar(done, shards, rate) + ("\n" if closing else ""), STDERR)

    def _uvicorn_start(self) -> None:
        self.uvicorn(f"Started server process [{self.host.pid}]")
        self.uvicorn("Waiting for application startup.")
        self.uvicorn("Application startup complete.")
        host = self.args.get("host", "127.0.0.1")
        self.uvicorn(f"Uvicorn running on http://{host}:{self.host.port} (Press CTRL+C to quit)")
        self.host.http_logging = True

    def _warmup(self) -> None:
        rng = self.host.rng
        client = f"127.0.0.1:{rng.randrange(32768, 60999)}"
        if self.v >= V("0.5.8"):
            self.access(client, "GET /model_info HTTP/1.1", 200)
        else:
            if self.v >= V("0.5.6"):
                self.main(MODEL_INFO_DEPRECATED)
            self.access(client, "GET /get_model_info HTTP/1.1", 200)
        warm_client = f"127.0.0.1:{rng.randrange(32768, 60999)}"
        request = self.host.load.submit(6 if "qwen" in self.model.model_type else 7, 8, None)
        self._warmup_request = (request, warm_client)

    def _check_warmup(self, finished: tuple[Request, ...]) -> None:
        pending = self._warmup_request
        if pending is None or pending[0] not in finished:
            return
        self._warmup_request = None
        self.access(pending[1], "POST /generate HTTP/1.1", 200)
        self.host.mark_ready(lambda: self.main("The server is fired up and ready to roll!"))
