"""SGLang's startup, first line to ready: the args line, distributed init, weights, KV pool,
CUDA graphs, uvicorn and the warmup request.

Every step falls at a fixed share of the startup's length (``--load-seconds``, four
times that for ``slow-load``): args at 0, distributed init from 4%, the weights from 12%
(shards from 14% to 56%, loaded at 58%), the KV cache at 62%, CUDA graphs from 66% to 84%,
the limits at 87%, uvicorn at 90% and the warmup request from 93% (ready once it is
answered). ``slow-load`` loads ``--shards`` files with the bar's rate following its own
pace, and prints ``Capture cuda graph bs [...]`` and the ``Capturing batches (...)`` bar
between 66% and 84%.
"""

from __future__ import annotations

from collections.abc import Callable

from tui.sim import tqdm_bar
from tui.sim.load import Request
from tui.sim.out import STDERR
from tui.sim.sglang.lines import MODEL_INFO_DEPRECATED, SglangLines
from tui.sim.version import V
from tui.sim.weights_bar import safetensors_bar
from tui.sim.weights_bar import shard_rate as shard_rate_of

#: share of the startup the weight shards take (from 14%), and the CUDA-graph bar (from 66%)
SHARD_SHARE = 0.42
GRAPH_START = 0.66
GRAPH_SHARE = 0.18
#: batch sizes SGLang captures without speculative decoding, up to ``cuda_graph_max_bs``
CAPTURE_BS = (1, 2, 4, 8, 12, *range(16, 257, 8))


class Startup(SglangLines):
    """The startup plan and the lines it writes."""

    def plan(self) -> list[tuple[float, Callable[[], None]]]:
        slow = self.cfg.slow
        total = self.cfg.startup_seconds
        rng = self.host.rng
        mem = self.mem
        avail_weights = mem.total - rng.uniform(0.45, 0.75) - mem.context
        avail_kv = avail_weights - mem.weights
        avail_graph = avail_kv - mem.kv
        avail_final = avail_graph - mem.graph if self.cuda_graph else avail_graph
        shards = self.cfg.shards if slow else self.model.shards
        shard_rate = shard_rate_of(self.cfg, rng.uniform(0.9, 1.6), total * SHARD_SHARE, shards)
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
                0.14 + SHARD_SHARE * index / shards,
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
            if slow:
                self._plan_graph_bar(at, total, avail_graph, avail_final)
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

    def _plan_graph_bar(
        self, at: Callable[..., None], total: float, avail: float, avail_after: float
    ) -> None:
        """The batch sizes to capture (rank 0), then tqdm's bar: a bare first update, then
        for each size, largest first, its description and the count it reaches."""
        sizes = [bs for bs in CAPTURE_BS if bs <= self.graph_bs] or [1]
        at(GRAPH_START, lambda: self.sched(f"Capture cuda graph bs {sizes}"))
        count = len(sizes)
        updates = [tqdm_bar.bar(0, count, 0.0)]
        step_secs = total * GRAPH_SHARE / (2 * count + 1)
        for index, bs in enumerate(reversed(sizes)):
            mem = avail - (avail - avail_after) * index / count
            desc = f"Capturing batches (bs={bs} avail_mem={mem:.2f} GB)"
            elapsed = (2 * index + 1) * step_secs
            updates.append(tqdm_bar.bar(index, count, elapsed, desc))
            updates.append(tqdm_bar.bar(index + 1, count, elapsed + step_secs, desc))
        for index, text in enumerate(tqdm_bar.redraws(updates)):
            at(
                GRAPH_START + GRAPH_SHARE * (index + 1) / (len(updates) + 1),
                lambda t=text: self.host.out.write(t, STDERR),
            )

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
