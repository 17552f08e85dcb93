"""A simulated SGLang server (``python -m sglang.launch_server``), 0.4.0 to 0.5.18 and
0.5.20 to 0.5.21.

Every line follows the format strings of the chosen release (see the table in
:meth:`SGLang.decode_line`): the ``[%Y-%m-%d %H:%M:%S{ TPn}]`` prefix (rank tag
always up to 0.4.6, only with tp > 1 from 0.4.7; ``.mmm`` with
``SGLANG_LOG_MS=1`` from 0.5.6), ``server_args=ServerArgs(...)`` built from the
flags (``server_args={...}``, the resolved dict, from 0.5.20), the load/KV/graph
sequence, uvicorn lines re-formatted with the timestamp (from 0.4.6), the warmup requests, then
``The server is fired up and ready to roll!``. Prefill lines come once per
scheduled batch and Decode lines every ``--decode-log-interval`` forward steps
while requests run; an idle server prints nothing (except what ``/health``
probes cause: like the real one, a probe on an idle server runs a one-token
generation and so logs a Prefill line).

Environment honoured like the real server: ``SGLANG_LOG_MS`` (≥0.5.6),
``SGLANG_LOG_FORWARD_ITERS`` (≥0.5.4.post1), ``SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION``
(≥0.5.6). ``/metrics`` answers 404 unless ``--enable-metrics`` is given, as in SGLang.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable

from tui.sim.engine import (
    NOT_FOUND,
    PROMETHEUS_TEXT,
    Engine,
    EngineKind,
    Handler,
    Histogram,
    Host,
    Response,
    SimConfig,
    number,
    safetensors_bar,
)
from tui.sim.flags import model_info
from tui.sim.load import Advance, LoadProfile, Request, SpecModel
from tui.sim.out import STDERR, STDOUT
from tui.sim.prom import Exposition
from tui.sim.version import V, Version

MIN_VERSION = V("0.4.0")
MAX_VERSION = V("0.5.21")
#: The releases simulated: 0.5.19 is left out (its format was not read), and 0.5.22 on
#: redact the args line in a way not simulated.
RELEASES = ((MIN_VERSION, V("0.5.18")), (V("0.5.20"), MAX_VERSION))
DEFAULT_VERSION = "0.5.11"
DEFAULT_PORT = 30000
DEFAULT_MODEL = "Qwen/Qwen3-8B"

#: flag spelling -> ServerArgs field, where they differ from the dashes-to-underscores rule
ALIASES = {
    "--model": "model_path",
    "--tp": "tp_size",
    "--tensor-parallel-size": "tp_size",
    "--dp": "dp_size",
    "--data-parallel-size": "dp_size",
    "--pp": "pp_size",
    "--ep": "ep_size",
    "--speculative-draft-model": "speculative_draft_model_path",
    "--speculative-draft": "speculative_draft_model_path",
    "--tokenizer": "tokenizer_path",
}

_PHRASES = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}

_PY = {
    False: "/usr/local/lib/python3.10/dist-packages",
    True: "/usr/local/lib/python3.12/dist-packages",
}

# ServerArgs fields in declaration order (0.5.x), with defaults; "@x.y" marks the first
# release that has the field. Values the simulator resolves are filled in by _server_args.
_FIELDS: tuple[tuple[str, object], ...] = (
    ("model_path", None),
    ("tokenizer_path", None),
    ("tokenizer_mode", "auto"),
    ("tokenizer_worker_num@0.5.3", 1),
    ("skip_tokenizer_init", False),
    ("load_format", "auto"),
    ("model_loader_extra_config@0.4.6", "{}"),
    ("trust_remote_code", False),
    ("context_length", None),
    ("is_embedding", False),
    ("enable_multimodal@0.4.6", None),
    ("revision", None),
    ("model_impl@0.4.7", "auto"),
    ("host", "127.0.0.1"),
    ("port", 30000),
    ("skip_server_warmup@0.4.7", False),
    ("warmups@0.4.6", None),
    ("nccl_port@0.4.6", None),
    ("dtype", "auto"),
    ("quantization", None),
    ("quantization_param_path", None),
    ("kv_cache_dtype", "auto"),
    ("mem_fraction_static", None),
    ("max_running_requests", None),
    ("max_queued_requests@0.4.10", None),
    ("max_total_tokens", None),
    ("chunked_prefill_size", None),
    ("max_prefill_tokens", 16384),
    ("schedule_policy", "fcfs"),
    ("schedule_conservativeness", 1.0),
    ("page_size@0.4.6", 1),
    ("hybrid_kvcache_ratio@0.4.10", None),
    ("swa_full_tokens_ratio@0.4.10", 0.8),
    ("disable_hybrid_swa_memory@0.4.10", False),
    ("device", "cuda"),
    ("tp_size", 1),
    ("pp_size@0.4.7", 1),
    ("max_micro_batch_size@0.4.7", None),
    ("stream_interval", 1),
    ("stream_output", False),
    ("random_seed", None),
    ("constrained_json_whitespace_pattern", None),
    ("watchdog_timeout", 300),
    ("dist_timeout", None),
    ("download_dir", None),
    ("base_gpu_id", 0),
    ("gpu_id_step", 1),
    ("sleep_on_idle@0.4.7", False),
    ("log_level", "info"),
    ("log_level_http", None),
    ("log_requests", False),
    ("log_requests_level@0.4.6", 0),
    ("crash_dump_folder@0.4.10", None),
    ("show_time_cost", False),
    ("enable_metrics", False),
    ("enable_metrics_for_all_schedulers@0.4.7", False),
    ("bucket_time_to_first_token", None),
    ("bucket_inter_token_latency", None),
    ("bucket_e2e_request_latency", None),
    ("collect_tokens_histogram@0.4.6", False),
    ("decode_log_interval", 40),
    ("enable_request_time_stats_logging@0.4.7", False),
    ("kv_events_config@0.4.6", None),
    ("api_key", None),
    ("served_model_name", None),
    ("chat_template", None),
    ("completion_template", None),
    ("file_storage_path", "sglang_storage"),
    ("enable_cache_report", False),
    ("reasoning_parser@0.4.6", None),
    ("tool_call_parser", None),
    ("dp_size", 1),
    ("load_balance_method", "round_robin"),
    ("dist_init_addr", None),
    ("nnodes", 1),
    ("node_rank", 0),
    ("json_model_override_args", "{}"),
    ("preferred_sampling_params@0.4.6", None),
    ("enable_lora@0.4.10", None),
    ("max_lora_rank@0.4.6", None),
    ("lora_target_modules@0.4.6", None),
    ("lora_paths", None),
    ("max_loras_per_batch", 8),
    ("lora_backend", "triton"),
    ("attention_backend", None),
    ("sampling_backend", None),
    ("grammar_backend", None),
    ("mm_attention_backend@0.4.10", None),
    ("speculative_algorithm@0.4.3", None),
    ("speculative_draft_model_path@0.4.3", None),
    ("speculative_num_steps@0.4.3", None),
    ("speculative_eagle_topk@0.4.3", None),
    ("speculative_num_draft_tokens@0.4.3", None),
    ("speculative_accept_threshold_single@0.4.6", 1.0),
    ("speculative_accept_threshold_acc@0.4.6", 1.0),
    ("speculative_token_map@0.4.6", None),
    ("ep_size", 1),
    ("enable_ep_moe", False),
    ("enable_deepep_moe@0.4.6", False),
    ("enable_eplb@0.4.6", False),
    ("ep_num_redundant_experts@0.4.6", 0),
    ("enable_hierarchical_cache", False),
    ("hicache_ratio", 2.0),
    ("hicache_size@0.4.7", 0),
    ("hicache_write_policy@0.4.6", "write_through_selective"),
    ("disable_radix_cache", False),
    ("cuda_graph_max_bs", None),
    ("cuda_graph_bs", None),
    ("disable_cuda_graph", False),
    ("disable_cuda_graph_padding", False),
    ("enable_profile_cuda_graph@0.4.6", False),
    ("enable_nccl_nvls", False),
    ("enable_tokenizer_batch_encode@0.4.6", False),
    ("disable_outlines_disk_cache", False),
    ("disable_custom_all_reduce", False),
    ("enable_mscclpp@0.4.6", False),
    ("disable_overlap_schedule", False),
    ("enable_mixed_chunk", False),
    ("enable_dp_attention", False),
    ("enable_dp_lm_head@0.4.6", False),
    ("enable_two_batch_overlap@0.4.7", False),
    ("enable_torch_compile", False),
    ("torch_compile_max_bs", 32),
    ("torchao_config", ""),
    ("enable_nan_detection", False),
    ("enable_p2p_check", False),
    ("triton_attention_reduce_in_fp32", False),
    ("triton_attention_num_kv_splits", 8),
    ("num_continuous_decode_steps", 1),
    ("delete_ckpt_after_loading", False),
    ("enable_memory_saver", False),
    ("allow_auto_truncate", False),
    ("enable_custom_logit_processor", False),
    ("flashinfer_mla_disable_ragged", False),
    ("disable_shared_experts_fusion@0.4.6", False),
    ("disable_chunked_prefix_cache@0.4.6", False),
    ("disable_fast_image_processor@0.4.6", False),
    ("enable_return_hidden_states@0.4.6", False),
    ("debug_tensor_dump_output_folder", None),
    ("debug_tensor_dump_input_file", None),
    ("disaggregation_mode@0.4.6", "null"),
    ("disaggregation_transfer_backend@0.4.6", "mooncake"),
    ("disaggregation_bootstrap_port@0.4.6", 8998),
    ("disaggregation_ib_device@0.4.6", None),
    ("num_reserved_decode_tokens@0.4.6", 512),
)


# fmt: off
_TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
_ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040,
                0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0)
# fmt: on


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true")


def _repr(value: object) -> str:
    """Python repr of a flag value, as a dataclass repr shows it."""
    return repr(value)


class SGLang(Engine):
    """SGLang lines, routes and metrics for one release (see module docstring)."""

    name = "sglang"

    def __init__(self, cfg: SimConfig, host: Host) -> None:
        flags = cfg.flags
        model_path = str(
            flags.get("model_path") or (flags.positional[0] if flags.positional else DEFAULT_MODEL)
        )
        self.v = cfg.version
        algorithm = flags.get("speculative_algorithm")
        wants_spec = algorithm not in (None, "None", "") and self.v >= V("0.4.3")
        super().__init__(
            cfg, host, model_info(model_path), wants_spec and cfg.scenario.name != "spec-off"
        )
        self.model_path = model_path
        self.args = self._server_args(model_path)
        fraction = number(self.args["mem_fraction_static"], self._default_mem_fraction())
        self.mem = plan = self.memory_plan(fraction, 0.6, host.rng.uniform(0.55, 1.6))
        self.max_total_tokens = int(number(flags.get("max_total_tokens"), plan.kv_tokens))
        self.context_len = int(number(self.args["context_length"], self.model.context_len))
        auto_running = min(max(int(self.max_total_tokens / self.context_len * 512), 2048), 4096)
        self.max_running = int(number(flags.get("max_running_requests"), auto_running))
        self.graph_bs = int(number(self.args["cuda_graph_max_bs"], 256))
        self.cuda_graph = not bool(self.args["disable_cuda_graph"])
        self.log_ms = self.v >= V("0.5.6") and _env_flag("SGLANG_LOG_MS")
        self.log_iters = self.v >= V("0.5.4.post1") and _env_flag("SGLANG_LOG_FORWARD_ITERS")
        self.health_generates = not (
            self.v >= V("0.5.6")
            and os.environ.get("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "true").lower()
            in ("0", "false")
        )
        excluded = flags.get("uvicorn_access_log_exclude_prefixes")
        self.access_excluded: tuple[str, ...] = ()
        if self.v >= V("0.5.8") and excluded not in (None, True):
            self.access_excluded = tuple(
                str(p) for p in (excluded if isinstance(excluded, list) else [excluded])
            )
        self.spec = self._spec_model()
        self._lock = threading.Lock()
        self.gauges: dict[str, float] = {}
        self.ttft = Histogram(_TTFT_BUCKETS)
        self.itl = Histogram(_ITL_BUCKETS)
        self.e2e = Histogram((*_TTFT_BUCKETS, 800))
        self.last_gen_throughput = 0.0
        self.last_accept_len = 0.0
        self.startup_gap = round(host.rng.uniform(18.0, 55.0), 3)
        #: the warmup request in flight and the client address its access line shows
        self._warmup_request: tuple[Request, str] | None = None

    # -- configuration ------------------------------------------------------------------
    def _spec_params(self) -> tuple[str, int, int, int]:
        flags = self.cfg.flags
        algorithm = str(flags.get("speculative_algorithm"))
        if algorithm == "NEXTN":
            algorithm = "EAGLE"  # ServerArgs.__post_init__ folds NEXTN into EAGLE
        steps = flags.get("speculative_num_steps")
        topk = flags.get("speculative_eagle_topk")
        drafts = flags.get("speculative_num_draft_tokens")
        steps_i = steps if isinstance(steps, int) and steps > 0 else 3
        topk_i = topk if isinstance(topk, int) and topk > 0 else 1
        drafts_i = (
            drafts
            if isinstance(drafts, int) and drafts > 0
            else (steps_i + 1 if topk_i == 1 else steps_i * topk_i + 1)
        )
        if topk_i == 1:
            drafts_i = steps_i + 1
        return algorithm, steps_i, topk_i, drafts_i

    def _spec_model(self) -> SpecModel | None:
        if not self.spec_on:
            return None
        _, steps, _, drafts = self._spec_params()
        if self.repeat:
            return SpecModel.perfect(steps, drafts)
        return SpecModel.healthy(steps, drafts)

    def _default_mem_fraction(self) -> float:
        """SGLang's default --mem-fraction-static by tensor parallel size."""
        for min_tp, fraction in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87)):
            if self.cfg.tp >= min_tp:
                return fraction
        return 0.88

    def _server_args(self, model_path: str) -> dict[str, object]:
        """ServerArgs after __post_init__: flags given, defaults, resolved values."""
        flags = self.cfg.flags
        gpu = self.host.gpus[0]
        big = gpu.usable_mib >= 60 * 1024
        given = flags.as_dict()
        dropped = set()
        if self.cfg.scenario.name == "spec-off":
            dropped = {key for key in given if key.startswith("speculative_")}
        args: dict[str, object] = {}
        for raw_name, default in _FIELDS:
            name, _, since = raw_name.partition("@")
            if since and self.v < V(since):
                continue
            args[name] = given[name] if name in given and name not in dropped else default
        for key, value in given.items():
            if key not in args and key not in dropped:
                args[key] = value
        args["model_path"] = model_path
        if args.get("tokenizer_path") is None:
            args["tokenizer_path"] = model_path
        args["port"] = self.host.port
        args["tp_size"] = self.cfg.tp
        if args.get("mem_fraction_static") is None:
            args["mem_fraction_static"] = self._default_mem_fraction()
        if args.get("chunked_prefill_size") is None:
            args["chunked_prefill_size"] = 16384 if (self.v >= V("0.5.0") and big) else 8192
        if args.get("random_seed") is None:
            args["random_seed"] = self.host.rng.randrange(2**30)
        if args.get("served_model_name") is None:
            args["served_model_name"] = model_path
        if args.get("cuda_graph_max_bs") is None:
            args["cuda_graph_max_bs"] = 256 if self.v >= V("0.5.0") else 160
        if args.get("attention_backend") is None:
            args["attention_backend"] = (
                "fa3" if self.v >= V("0.4.7") and "H100" in gpu.name else "flashinfer"
            )
        if args.get("sampling_backend") is None:
            args["sampling_backend"] = "flashinfer"
        if args.get("grammar_backend") is None:
            args["grammar_backend"] = "xgrammar"
        if self.spec_on:
            algorithm, steps, topk, drafts = self._spec_params()
            args["speculative_algorithm"] = algorithm
            args["speculative_num_steps"] = steps
            args["speculative_eagle_topk"] = topk
            args["speculative_num_draft_tokens"] = drafts
            if args.get("speculative_draft_model_path") is None:
                args["speculative_draft_model_path"] = model_path
            if self.v < V("0.5.0"):
                args["disable_overlap_schedule"] = True
        elif "speculative_algorithm" in args:
            args["speculative_algorithm"] = None
        return args

    def load_profile(self) -> LoadProfile:
        interval = self.args.get("decode_log_interval", 40)
        return LoadProfile(
            base_tps=self.base_tps(),
            max_running=max(1, self.max_running),
            max_total_tokens=max(1, self.max_total_tokens),
            spec=self.spec,
            decode_log_interval=interval if isinstance(interval, int) and interval > 0 else 40,
            cache_block=1,
            startup_gap=self.startup_gap,
        )

    # -- line helpers -------------------------------------------------------------------
    def _stamp(self) -> str:
        now = time.time()
        text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        if self.log_ms:
            text += f".{int(now * 1000) % 1000:03d}"
        return text

    def _tag(self, rank: int) -> str:
        if self.v < V("0.4.7") or self.cfg.tp > 1:
            return f" TP{rank}"
        return ""

    def main(self, message: str) -> None:
        """A line from the main (tokenizer/HTTP) process: no rank tag."""
        self.host.out.line(f"[{self._stamp()}] {message}", STDERR)

    def sched(self, message: str, rank: int = 0) -> None:
        """A line from scheduler ``rank``."""
        self.host.out.line(f"[{self._stamp()}{self._tag(rank)}] {message}", STDERR)

    def every_rank(self, message: str) -> None:
        """A line each scheduler rank logs, TP0 first."""
        for rank in range(self.cfg.tp):
            self.sched(message, rank)

    def uvicorn(self, message: str, level: str = "INFO") -> None:
        prefix = f"{level}:".ljust(9)
        if self.v >= V("0.4.6"):
            self.host.out.line(f"[{self._stamp()}] {prefix} {message}", STDERR)
        else:
            self.host.out.line(f"{prefix} {message}", STDERR)

    def access(self, client: str, request_line: str, status: int) -> None:
        path = request_line.split(" ")[1] if " " in request_line else request_line
        if any(path.startswith(prefix) for prefix in self.access_excluded):
            return
        text = f'{client} - "{request_line}" {status} {_PHRASES.get(status, "")}'.rstrip()
        if self.v >= V("0.4.6"):
            self.host.out.line(f"[{self._stamp()}] INFO:     {text}", STDOUT)
        else:
            self.host.out.line(f"INFO:     {text}", STDOUT)

    def _py(self, path: str) -> str:
        return f"{_PY[self.v >= V('0.5.0')]}/{path}"

    # -- startup ------------------------------------------------------------------------
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
            args = ", ".join(f"{key}={_repr(value)}" for key, value in self.args.items())
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
                self.main(
                    "Endpoint '/get_model_info' is deprecated and will be removed in a "
                    "future version. Please use '/model_info' instead."
                )
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

    # -- serving ------------------------------------------------------------------------
    def on_advance(self, advance: Advance, now: float) -> None:
        load = self.host.load
        if advance.prefilled:
            self.sched(self.prefill_line(advance.prefilled, now))
        for request in advance.finished:
            self.on_finished(request)
        if advance.decode_log_due:
            self.sched(self.decode_line(now))
            load.decode_logged()
        self._check_warmup(advance.finished)

    def on_finished(self, request: Request) -> None:
        if request.first_token is None or request.finished is None:
            return
        with self._lock:
            self.ttft.observe(max(request.first_token - request.arrived, 0.0))
            self.e2e.observe(max(request.finished - request.arrived, 0.0))
            if request.completion_tokens > 1:
                gap = (request.finished - request.first_token) / (request.completion_tokens - 1)
                self.itl.observe(max(gap, 0.0))

    def _head(self, kind: str) -> str:
        v = self.v
        if v < V("0.5.4"):
            return f"{kind} batch. "
        if v < V("0.5.4.post1") or self.log_iters:
            return f"{kind} batch [{self.host.load.totals.forward_ct}], "
        return f"{kind} batch, "

    def _noisy_accept(self, spec: SpecModel) -> tuple[float, float]:
        """(accept len, accept rate) for one Decode line, rate by this release's definition."""
        rng = self.host.rng
        length = 1.0 + sum(spec.sample(rng))
        v = self.v
        if v >= V("0.5.12"):
            rate = (length - 1.0) / max(spec.verify_tokens - 1, 1)
        elif v >= V("0.5.5"):
            rate = length / spec.verify_tokens
        else:
            rate = length / (spec.k + 1)
        return length, min(rate, 1.0)

    def decode_line(self, now: float) -> str:
        """The Decode line of this release.

        ============  ==============  ==================  ==========  =================
        release       head            spec fields         cuda graph  tail
        ============  ==============  ==================  ==========  =================
        ≤0.4.0        Decode batch.   -                   -           #queue-req: N
        0.4.3-0.4.6   Decode batch.   accept len          -           #queue-req: N
        0.4.7-0.4.9   Decode batch.   accept len          yes         #queue-req: N
        0.4.10-0.5.3  Decode batch.   accept len (+rate   yes         #queue-req: N,␣
                                      from 0.5.3.post3)
        0.5.4         Decode batch    len+rate            yes         #queue-req: N,␣
                      [N],
        0.5.4.post1-  Decode batch,   len+rate            yes         #queue-req: N,␣
        0.5.8
        ≥0.5.9        Decode batch,   len+rate            yes         #queue-req: N
        ============  ==============  ==================  ==========  =================
        """
        load = self.host.load
        window = load.take("decode", now)
        v = self.v
        running = load.running
        used = load.used_tokens
        usage = used / self.max_total_tokens
        throughput = window.gen_tokens / window.elapsed
        message = (
            f"{self._head('Decode')}#running-req: {running}, #token: {used}, "
            f"token usage: {usage:.2f}, "
        )
        accept_len = accept_rate = 0.0
        if self.spec is not None:
            accept_len, accept_rate = self._noisy_accept(self.spec)
            message += f"accept len: {accept_len:.2f}, "
            if v >= V("0.5.3.post3"):
                message += f"accept rate: {accept_rate:.2f}, "
        if v >= V("0.4.7"):
            message += f"cuda graph: {self.cuda_graph and running <= self.graph_bs}, "
        message += f"gen throughput (token/s): {throughput:.2f}, "
        queued = load.queued
        message += (
            f"#queue-req: {queued}, " if V("0.4.10") <= v < V("0.5.9") else f"#queue-req: {queued}"
        )
        with self._lock:
            self.last_gen_throughput = throughput
            self.last_accept_len = accept_len
            self.gauges.update(
                {
                    "num_running_reqs": running,
                    "num_used_tokens": used,
                    "token_usage": usage,
                    "gen_throughput": throughput,
                    "num_queue_reqs": queued,
                    "spec_accept_length": accept_len,
                    "spec_accept_rate": accept_rate,
                    "is_cuda_graph": float(self.cuda_graph and running <= self.graph_bs),
                }
            )
        return message

    def prefill_line(self, batch: tuple[Request, ...], now: float) -> str:
        """The Prefill line of this release (one per scheduled prefill batch)."""
        load = self.host.load
        window = load.take("prefill", now)
        v = self.v
        new_tokens = sum(r.prompt_tokens - r.cached_tokens for r in batch)
        cached = sum(r.cached_tokens for r in batch)
        still_running = sum(1 for r in batch if r.finished is None)
        running_before = max(load.running - still_running, 0)
        used = load.used_tokens
        usage = used / self.max_total_tokens
        queued = load.queued
        message = (
            f"{self._head('Prefill')}#new-seq: {len(batch)}, #new-token: {new_tokens}, "
            f"#cached-token: {cached}, "
        )
        if v < V("0.4.6"):
            hit = cached / max(new_tokens + cached, 1)
            message += f"cache hit rate: {100.0 * hit:.2f}%, "
        message += f"token usage: {usage:.2f}, #running-req: {running_before}, "
        input_tps = window.prompt_tokens / window.elapsed
        if v < V("0.4.10"):
            message += f"#queue-req: {queued}"
        elif v < V("0.5.9"):
            message += f"#queue-req: {queued}, "
        elif v < V("0.5.10"):
            message += (
                f"#queue-req: {queued}, input throughput (token/s): {input_tps:.2f}, "
                "cuda graph: False"
            )
        elif v < V("0.5.11"):
            message += (
                f"#queue-req: {queued}, cuda graph: False, "
                f"input throughput (token/s): {input_tps:.2f}"
            )
        else:
            message += (
                f"#queue-req: {queued}, #pending-token: {load.pending_tokens}, "
                f"cuda graph: False, input throughput (token/s): {input_tps:.2f}"
            )
        with self._lock:
            self.gauges.update(
                {
                    "num_running_reqs": running_before + still_running,
                    "num_used_tokens": used,
                    "token_usage": usage,
                    "num_queue_reqs": queued,
                    "cache_hit_rate": cached / max(new_tokens + cached, 1),
                }
            )
        return message

    # -- failures and shutdown ----------------------------------------------------------
    def _traceback(self, frames: list[tuple[str, int, str, str]], error: str) -> str:
        lines = ["Traceback (most recent call last):"]
        for path, line, func, code in frames:
            lines.append(f'  File "{self._py(path)}", line {line}, in {func}')
            lines.append(f"    {code}")
        lines.append(error)
        return "\n".join(lines) + "\n"

    def _sigquit_launch(self) -> None:
        typo = "proces" if V("0.4.3") <= self.v < V("0.4.4") else "process"
        self.main(f"Received sigquit from a child {typo}. It usually means the child failed.")

    def oom(self) -> None:
        """Scheduler init fails allocating the KV pool; the main process kills the tree (137)."""
        if self.v >= V("0.5.5"):
            fraction = self.args["mem_fraction_static"]
            error = (
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                f"Current value: self.server_args.mem_fraction_static={fraction}"
            )
        else:
            error = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
        frames = [
            (
                "sglang/srt/managers/scheduler.py",
                2638,
                "run_scheduler_process",
                "scheduler = Scheduler(",
            ),
            (
                "sglang/srt/managers/scheduler.py",
                312,
                "__init__",
                "self.tp_worker = TpWorkerClass(",
            ),
            (
                "sglang/srt/managers/tp_worker.py",
                84,
                "__init__",
                "self.model_runner = ModelRunner(",
            ),
            (
                "sglang/srt/model_executor/model_runner.py",
                242,
                "__init__",
                "self.initialize(min_per_gpu_memory)",
            ),
            (
                "sglang/srt/model_executor/model_runner.py",
                322,
                "initialize",
                "self.init_memory_pool(",
            ),
            (
                "sglang/srt/model_executor/model_runner.py",
                1368,
                "init_memory_pool",
                "raise RuntimeError(",
            ),
        ]
        self.host.set_phase("crashed")
        self.sched("Scheduler hit an exception: " + self._traceback(frames, error))
        self._sigquit_launch()
        self.host.finish(None, sigkill=True)

    def crash(self) -> None:
        """A CUDA fault in the scheduler loop; SIGQUIT to the main process; tree killed (137)."""
        error = (
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, "
            "so the stacktrace below might be incorrect.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
        )
        frames = [
            (
                "sglang/srt/managers/scheduler.py",
                2891,
                "run_scheduler_process",
                "scheduler.event_loop_overlap()",
            ),
            ("torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
            (
                "sglang/srt/managers/scheduler.py",
                1005,
                "event_loop_overlap",
                "batch_result = self.run_batch(batch)",
            ),
            (
                "sglang/srt/managers/scheduler.py",
                1992,
                "run_batch",
                ") = self.tp_worker.forward_batch_generation(model_worker_batch)",
            ),
            (
                "sglang/srt/managers/tp_worker.py",
                243,
                "forward_batch_generation",
                "logits_output, can_run_cuda_graph = self.model_runner.forward(",
            ),
        ]
        self.host.set_phase("crashed")
        self.sched("Scheduler hit an exception: " + self._traceback(frames, error.rstrip("\n")))
        if self.v >= V("0.5.3"):
            address = 0x7F0000000000 + self.host.rng.randrange(2**32) * 16
            frame = (
                f"<frame at {address:#x}, file '/usr/lib/python3.12/selectors.py', "
                "line 468, code select>"
            )
            self.main(
                f"SIGQUIT received. signum=3, frame={frame}. It usually means one child failed."
            )
        else:
            self._sigquit_launch()
        self.host.finish(None, sigkill=True)

    def scheduler_killed_at_load(self) -> None:
        """The scheduler is killed (SIGKILL, no line of its own) while it initialises; the
        main process sees it dead (engine.py, 0.4.6-0.5.21), raises, exits 1."""
        self.host.set_phase("crashed")
        self.main("Rank 0 scheduler is dead. Please check if there are relevant logs.")
        self.main("Exit code: -9")
        frames = [
            ("sglang/launch_server.py", 14, "<module>", "launch_server(server_args)"),
            (
                "sglang/srt/entrypoints/http_server.py",
                1123,
                "launch_server",
                "tokenizer_manager, template_manager, scheduler_info = _launch_subprocesses(",
            ),
            (
                "sglang/srt/entrypoints/engine.py",
                842,
                "_launch_subprocesses",
                "raise RuntimeError(",
            ),
        ]
        error = "RuntimeError: Initialization failed. Please see the error messages above."
        self.host.out.write(self._traceback(frames, error), STDERR)
        self.host.finish(1)

    def child_killed(self) -> None:
        """A scheduler killed (SIGKILL) while serving: the watchdog (utils/watchdog.py,
        0.5.20 on) sees it, SIGQUITs the main process, which kills the tree (137)."""
        self.host.set_phase("crashed")
        # The sim runs no scheduler process of its own: this pid only stands for one.
        pid = self.host.pid + 3
        self.main(
            f"Subprocess scheduler_0 (pid={pid}) crashed with exit code -9. "
            "Triggering SIGQUIT for cleanup..."
        )
        address = 0x7F0000000000 + self.host.rng.randrange(2**32) * 16
        frame = (
            f"<frame at {address:#x}, file '/usr/lib/python3.12/selectors.py', "
            "line 468, code select>"
        )
        self.main(f"SIGQUIT received. signum=3, frame={frame}. It usually means one child failed.")
        self.host.finish(None, sigkill=True)

    def shutdown(self, signum: int) -> None:
        """uvicorn's graceful shutdown lines (SGLang lets uvicorn own SIGTERM/SIGINT)."""
        self.uvicorn("Shutting down")
        self.uvicorn("Waiting for application shutdown.")
        self.uvicorn("Application shutdown complete.")
        self.uvicorn(f"Finished server process [{self.host.pid}]")

    def ignored_signal(self, signum: int) -> None:
        if signum == signal.SIGTERM and self.v >= V("0.5.3"):
            address = 0x7F0000000000 + self.host.rng.randrange(2**32) * 16
            frame = (
                f"<frame at {address:#x}, file '/usr/lib/python3.12/selectors.py', "
                "line 468, code select>"
            )
            self.main(
                f"SIGTERM received. signum={signum} frame={frame}. "
                "Draining requests and shutting down..."
            )

    def bind_failed(self, error: OSError) -> None:
        host = self.args.get("host", "127.0.0.1")
        self.uvicorn(
            f"[Errno {error.errno}] error while attempting to bind on address "
            f"('{host}', {self.host.port}): address already in use",
            level="ERROR",
        )

    # -- HTTP ---------------------------------------------------------------------------
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
        if not self.health_generates or self.host.load.running > 0:
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
            self.main(
                "Endpoint '/get_model_info' is deprecated and will be removed in a "
                "future version. Please use '/model_info' instead."
            )
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

    def metrics_text(self) -> str:
        """``/metrics`` as SGLang's multiprocess collector writes it: sorted labels, no _created"""
        served = str(self.args["served_model_name"])
        sched = {"engine_type": "unified", "model_name": served}
        if self.v >= V("0.4.10"):
            sched.update({"pp_rank": "0", "tp_rank": "0"})
        tok = {"model_name": served}
        totals = self.host.load.totals
        page = Exposition()
        helps = {
            "num_running_reqs": "The number of running requests.",
            "num_used_tokens": "The number of used tokens.",
            "token_usage": "The token usage.",
            "gen_throughput": "The generation throughput (token/s).",
            "num_queue_reqs": "The number of requests in the waiting queue.",
            "cache_hit_rate": "The prefix cache hit rate.",
            "spec_accept_length": "The average acceptance length of speculative decoding.",
        }
        if self.v >= V("0.5.5"):
            helps["spec_accept_rate"] = "The average acceptance rate of speculative decoding."
            helps["is_cuda_graph"] = "Whether the batch is using CUDA graph."
        with self._lock:
            gauges = dict(self.gauges)
            for key, help_text in helps.items():
                if gauges:
                    page.gauge(f"sglang:{key}", help_text, [(sched, float(gauges.get(key, 0.0)))])
            page.counter(
                "sglang:prompt_tokens",
                "Number of prefill tokens processed.",
                [(tok, float(totals.prompt_tokens))],
            )
            page.counter(
                "sglang:generation_tokens",
                "Number of generation tokens processed.",
                [(tok, float(int(totals.gen_tokens)))],
            )
            page.counter(
                "sglang:cached_tokens",
                "Number of cached prompt tokens.",
                [(tok, float(totals.cached_tokens))],
            )
            page.counter(
                "sglang:num_requests",
                "Number of requests processed.",
                [(tok, float(totals.finished))],
            )
            for name, help_text, hist in (
                (
                    "sglang:time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.",
                    self.ttft,
                ),
                (
                    "sglang:inter_token_latency_seconds",
                    "Histogram of inter-token latency in seconds.",
                    self.itl,
                ),
                (
                    "sglang:e2e_request_latency_seconds",
                    "Histogram of End-to-end request latency in seconds",
                    self.e2e,
                ),
            ):
                page.histogram(name, help_text, hist.bounds, [(tok, list(hist.counts), hist.total)])
            if self.v >= V("0.5.5"):
                page.gauge(
                    "sglang:engine_startup_time",
                    "The time taken for the engine to start up.",
                    [(sched, round(self.cfg.load_seconds, 3))],
                )
        return page.text()


def _unsupported(v: Version, scenario: str) -> str | None:
    """Scenarios whose lines are known only for some releases."""
    if scenario == "killed-at-load" and v < V("0.4.6"):
        return "the 'scheduler is dead' lines start with 0.4.6"
    if scenario == "killed-after" and v < V("0.5.20"):
        return "the watchdog's 'crashed with exit code' line starts with 0.5.20"
    return None


KIND = EngineKind(
    name="sglang",
    default_version=DEFAULT_VERSION,
    default_port=DEFAULT_PORT,
    aliases=ALIASES,
    tp_flags=("tp_size",),
    releases=RELEASES,
    factory=SGLang,
    unsupported=_unsupported,
)
