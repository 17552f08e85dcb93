"""vLLM's startup, first line to ready: version and args, engine config, weights, KV cache,
graphs, the route table and uvicorn's lines.

Every step falls at a fixed share of the startup's length (``--load-seconds``, four
times that for ``slow-load``): args at 0, the engine config at 6%, the weights from 12%
(shards from 15% to 50%, loaded at 52%), the KV cache at 58%, CUDA graphs from 62% to 80%,
the engine's init time at 83%, the routes at 90% and ready at 95%. ``slow-load`` loads
``--shards`` files with the bar's rate following its own pace, and prints the CUDA-graph
capture bars of the release between 62% and 80%.
"""

from __future__ import annotations

from collections.abc import Callable

from tui.sim import tqdm_bar
from tui.sim.version import V
from tui.sim.vllm.lines import VllmLines
from tui.sim.vllm.namespace import NAMESPACE, ORDER
from tui.sim.vllm.releases import DEFAULT_PORT
from tui.sim.weights_bar import safetensors_bar
from tui.sim.weights_bar import shard_rate as shard_rate_of

#: share of the startup the weight shards take (from 15%), and the CUDA-graph bars (from 62%)
SHARD_SHARE = 0.35
GRAPH_START = 0.62
GRAPH_SHARE = 0.18
SHAPES_BAR = "Capturing CUDA graph shapes"
#: capture sizes: V0's [1, 2, 4] + 8..256; V1's [1, 2, 4] + 8..512 and, for FULL decode, up
#: to max_num_seqs 256
V0_GRAPH_SIZES = 35
V1_GRAPH_SIZES = 67
V1_DECODE_GRAPH_SIZES = 35

V0_CUDAGRAPH_NOTE = (
    "Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is "
    "not static. To run the model in eager mode, set 'enforce_eager=True' or use "
    "'--enforce-eager' in the CLI."
)
V0_CUDAGRAPH_OOM_NOTE = (
    "If out-of-memory error occurs during cudagraph capture, consider decreasing "
    "`gpu_memory_utilization` or switching to eager mode. You can also reduce the `max_num_seqs` "
    "as needed to decrease memory usage."
)


class Startup(VllmLines):
    """The startup plan and the lines it writes."""

    def _listen(self) -> str:
        host = self.cfg.flags.get("host")
        return f"http://{host if isinstance(host, str) else '0.0.0.0'}:{self.host.port}"  # noqa: S104 - printed, not bound

    def _args_line(self) -> str:
        flags = self.cfg.flags.as_dict()
        dropped = (
            {"speculative_config", "speculative_model", "num_speculative_tokens"}
            if (self.cfg.scenario.name == "spec-off")
            else set()
        )
        given = {k: v for k, v in flags.items() if k not in dropped}
        if self.host.port != DEFAULT_PORT:
            given["port"] = self.host.port
        if self.cfg.tp != 1:
            given["tensor_parallel_size"] = self.cfg.tp
        if self.model_tag is not None:
            given["model_tag"] = self.model_tag
            given.setdefault("model", self.model_tag)
        if self.v < V("0.9.0"):
            parts = []
            for raw_name, default in NAMESPACE:
                name, _, since = raw_name.partition("@")
                if since == "<0.8" and not self.v0:
                    continue
                if since == "0.8" and self.v0:
                    continue
                parts.append(f"{name}={given.get(name, default)!r}")
            parts.extend(f"{k}={v!r}" for k, v in given.items() if k not in ORDER)
            address = 0x7F0000000000 + self.host.rng.randrange(2**32) * 16
            func = "serve" if self.v0 else "ServeSubcommand.cmd"
            parts.append(f"dispatch_function=<function {func} at {address:#x}>")
            return "args: Namespace(" + ", ".join(parts) + ")"
        ordered = {k: given[k] for k in ORDER if k in given}
        ordered.update({k: v for k, v in given.items() if k not in ordered})
        return f"non-default args: {ordered!r}"

    def _config_text(self) -> str:
        spec = "None"
        if self.spec_config is not None:
            method = self.spec_config.get(
                "method", "eagle" if self.spec_config.get("model") else "ngram"
            )
            spec = (
                f"SpeculativeConfig(method={method!r}, model={self.spec_config.get('model')!r}, "
                f"num_spec_tokens={self.k})"
            )
        load_format = "LoadFormat.AUTO" if self.v < V("0.10.0") else "auto"
        quant = self.cfg.flags.get("quantization")
        text = (
            f"model={self.model_path!r}, speculative_config={spec}, tokenizer={self.model_path!r}, "
            "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
            "tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
            f"max_seq_len={self.max_model_len}, download_dir=None, load_format={load_format}, "
            f"tensor_parallel_size={self.cfg.tp}, pipeline_parallel_size=1, "
            f"{'' if self.v0 else 'data_parallel_size=1, '}disable_custom_all_reduce=False, "
            f"quantization={quant}, enforce_eager={self.enforce_eager}, kv_cache_dtype=auto, "
            "device_config=cuda, seed=0, "
            f"served_model_name={self.served}, "
            f"enable_prefix_caching={not self.v0}, "
            f"{'chunked_prefill_enabled' if self.v0 else 'enable_chunked_prefill'}={not self.v0}, "
            "pooler_config=None"
        )
        if not self.v0:
            text += (
                ', compilation_config={"level":3,"debug_dump_path":"",'
                '"cache_dir":"","backend":"","custom_ops":[],'
                '"use_inductor":true,"cudagraph_mode":[2,1]}'
            )
        return text

    def plan(self) -> list[tuple[float, Callable[[], None]]]:
        slow = self.cfg.slow
        total = self.cfg.startup_seconds
        rng = self.host.rng
        v = self.v
        mem = self.mem
        shards = self.cfg.shards if slow else self.model.shards
        shard_rate = shard_rate_of(self.cfg, rng.uniform(0.9, 1.6), total * SHARD_SHARE, shards)
        load_secs = shards / shard_rate + rng.uniform(0.4, 2.5)
        graph_secs = rng.uniform(4.0, 19.0)
        compile_secs = rng.uniform(8.0, 40.0)
        loader = "worker" if (self.cfg.tp > 1 or self.v0) else "engine"
        if v < V("0.7.0"):
            loaded = f"Loading model weights took {mem.weights:.4f} GB"
        elif v < V("0.15.0"):
            loaded = f"Model loading took {mem.weights:.4f} GiB and {load_secs:.6f} seconds"
        else:
            loaded = f"Model loading took {mem.weights:.2f} GiB memory and {load_secs:.6f} seconds"
        init_secs = load_secs + graph_secs + compile_secs
        took = "init engine (profile, create kv cache, warmup model) took"
        if v >= V("0.33.0"):
            init_took = f"{took} {init_secs:.2f} s (compilation: {compile_secs:.2f} s)"
        else:
            init_took = f"{took} {init_secs:.2f} seconds"
        steps: list[tuple[float, Callable[[], None]]] = []

        def at(fraction: float, *actions: Callable[[], None]) -> None:
            steps.extend((total * fraction, action) for action in actions)

        def memory(stage: str) -> Callable[[], None]:
            return lambda: self.host.set_memory([mem.used_after(stage)] * self.cfg.tp)

        at(0.0, lambda: self.host.set_phase("loading"), self._version_lines)
        at(0.06, self._init_line)
        at(
            0.12,
            lambda: self.per_rank("load_start", f"Starting to load model {self.model_path}..."),
            memory("context"),
        )
        for index in range(shards + 1):
            at(
                0.15 + SHARD_SHARE * index / shards,
                lambda i=index: self._shard_line(i, shards, shard_rate, loader),
            )
        at(0.50, lambda: self._shard_line(shards, shards, shard_rate, loader, closing=True))
        at(0.52, lambda: self.per_rank("load_done", loaded), memory("weights"))
        if self.cfg.scenario.name == "oom":
            at(0.58, self.oom)
            return steps
        at(0.58, self._kv_lines)
        if not self.enforce_eager:
            if self.v0:
                at(
                    0.62,
                    lambda: self.per_rank("cudagraph", V0_CUDAGRAPH_NOTE),
                    lambda: self.per_rank("cudagraph2", V0_CUDAGRAPH_OOM_NOTE),
                )
            self._plan_graph_bars(at, total, loader)
            graphs = f"Graph capturing finished in {graph_secs:.0f} secs, took {mem.graph:.2f} GiB"
            at(0.80, lambda: self.per_rank("graph_done", graphs), memory("graph"))
        if not self.v0:
            at(0.83, lambda: self.log("init_took", init_took, proc="engine"))
        if v >= V("0.10.0"):
            blocks = self.kv_tokens // 16
            at(
                0.86,
                lambda: self.log(
                    "cache_info",
                    "Engine 000: vllm cache_config_info with "
                    f"initialization after num_gpu_blocks is: {blocks}",
                ),
            )
        at(0.90, self._route_lines)
        at(0.95, self._uvicorn_start)
        return steps

    def _graph_bars(self) -> list[tuple[str, int]]:
        """(description, sizes) of each CUDA-graph capture bar this release prints."""
        if self.v0:
            return [(SHAPES_BAR, V0_GRAPH_SIZES)] if self.v >= V("0.7.0") else []
        if self.v < V("0.10.2"):
            return [(SHAPES_BAR, V1_GRAPH_SIZES)]
        mixed = ("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", V1_GRAPH_SIZES)
        if self.v < V("0.11.0"):
            return [mixed]
        return [mixed, ("Capturing CUDA graphs (decode, FULL)", V1_DECODE_GRAPH_SIZES)]

    def _plan_graph_bars(self, at: Callable[..., None], total: float, proc: str) -> None:
        """``slow-load``: each capture bar, one update per size, spread evenly from 62% to 80%."""
        bars = self._graph_bars() if self.cfg.slow else []
        steps = sum(sizes + 1 for _, sizes in bars)
        step_secs = total * GRAPH_SHARE / max(steps, 1)
        index = 0
        for desc, sizes in bars:
            updates = [
                tqdm_bar.bar(done, sizes, done * step_secs, desc) for done in range(sizes + 1)
            ]
            for done, text in enumerate(tqdm_bar.redraws(updates)):
                at(
                    GRAPH_START + GRAPH_SHARE * index / steps,
                    lambda t=text, m=done > 0: self.raw(t, proc=proc, midline=m),
                )
                index += 1

    def _version_lines(self) -> None:
        if self.v < V("0.15.0"):
            self.log("version", f"vLLM API server version {self.v}")
        else:
            self.log("version", f"vLLM server version {self.v}, serving model {self.served}")
        self.log("args", self._args_line())

    def _init_line(self) -> None:
        if self.v0:
            self.log(
                "init",
                f"Initializing an LLM engine (v{self.v}) with config: "
                f"{self._config_text()}, use_cached_outputs=True, ",
            )
        else:
            self.log(
                "init",
                f"Initializing a V1 LLM engine (v{self.v}) with config: {self._config_text()}",
                proc="engine",
            )

    def _kv_lines(self) -> None:
        mem = self.mem
        v = self.v
        concurrency = self.kv_tokens / self.max_model_len
        if self.v0:
            cpu_blocks = int(4 * 2**30 / (16 * self.model.kv_bytes_per_token / self.cfg.tp))
            self.log(
                "blocks",
                f"# GPU blocks: {self.kv_tokens // 16}, # CPU blocks: {cpu_blocks}",
                proc="worker",
            )
            self.log(
                "concurrency",
                f"Maximum concurrency for {self.max_model_len} tokens per "
                f"request: {concurrency:.2f}x",
                proc="worker",
            )
        else:
            self.per_rank("kv_mem", f"Available KV cache memory: {mem.kv:.2f} GiB")
            size = f"GPU KV cache size: {self.kv_tokens:,} tokens"
            most = (
                f"Maximum concurrency for {self.max_model_len:,} tokens per request: "
                f"{concurrency:.2f}x"
            )
            if v >= V("0.28.0"):
                self.log("kv_size", f"{size}, {most}", proc="engine")
            else:
                self.log("kv_size", size, proc="engine")
                self.log("concurrency", most, proc="engine")
        self.host.set_memory([mem.used_after("kv")] * self.cfg.tp)

    def _shard_line(
        self, done: int, shards: int, rate: float, proc: str, *, closing: bool = False
    ) -> None:
        """tqdm on stderr; the stdout/stderr wrapper (0.8-0.30) tags it like any write."""
        self.raw(safetensors_bar(done, shards, rate), proc=proc)
        if closing:
            self.raw("\n", proc=proc)

    def _route_table(self) -> list[tuple[str, str]]:
        v = self.v
        routes = [
            ("/openapi.json", "HEAD, GET"),
            ("/docs", "HEAD, GET"),
            ("/docs/oauth2-redirect", "HEAD, GET"),
            ("/redoc", "HEAD, GET"),
            ("/health", "GET"),
        ]
        if v >= V("0.8.5"):
            routes.append(("/load", "GET"))
        if v >= V("0.7.0"):
            routes += [("/ping", "POST"), ("/ping", "GET")]
        routes += [
            ("/tokenize", "POST"),
            ("/detokenize", "POST"),
            ("/v1/models", "GET"),
            ("/version", "GET"),
            ("/v1/chat/completions", "POST"),
            ("/v1/completions", "POST"),
            ("/v1/embeddings", "POST"),
        ]
        if v >= V("0.7.0"):
            routes += [
                ("/pooling", "POST"),
                ("/score", "POST"),
                ("/v1/score", "POST"),
                ("/rerank", "POST"),
                ("/v1/rerank", "POST"),
                ("/v2/rerank", "POST"),
            ]
        if v >= V("0.8.5"):
            routes += [
                ("/v1/audio/transcriptions", "POST"),
                ("/invocations", "POST"),
                ("/metrics", "GET"),
            ]
        return routes

    def _route_lines(self) -> None:
        v = self.v
        if v < V("0.9.0"):
            self.log("starting", f"Starting vLLM API server on {self._listen()}")
        elif v < V("0.20.0"):
            self.log("starting", f"Starting vLLM API server 0 on {self._listen()}")
        else:
            self.log("starting", f"Starting vLLM server on {self._listen()}")
        self.log("routes", "Available routes are:")
        for path, methods in self._route_table():
            self.log("route", f"Route: {path}, Methods: {methods}")

    def _uvicorn_start(self) -> None:
        self.uvicorn(f"Started server process [{self.host.pid}]")
        self.uvicorn("Waiting for application startup.")
        self.host.mark_ready(lambda: self.uvicorn("Application startup complete."))
        self.host.http_logging = True
        if self.v <= V("0.7.0"):
            self.uvicorn(f"Uvicorn running on {self._listen()} (Press CTRL+C to quit)")
        self.host.schedule(self.interval, self._tick)
