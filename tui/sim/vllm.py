"""A simulated vLLM OpenAI server (``vllm serve``): V0 0.6.0-0.7.3 and V1 0.8.5-0.33.x.

Line prefix per release: ``LEVEL MM-DD HH:MM:SS file.py:N]`` (≤0.7.3),
``[file.py:N]`` from 0.8; process tags ``(EngineCore_0 pid=N)`` on engine
output from 0.8, ``(APIServer pid=N)`` / ``(EngineCore_DP0 pid=N)`` on every
written line (uvicorn, tqdm and tracebacks included) from 0.10.1, the tag
inside the log format from 0.31 (so uvicorn and tqdm output is untagged
again). Multi-line messages repeat the prefix after ``\\r\\n`` like vLLM's
``NewLineFormatter``. The ready line is uvicorn's ``Application startup
complete.`` (``Uvicorn running on`` only up to 0.7.0). Stats lines come every
``VLLM_LOG_STATS_INTERVAL`` seconds (5 s in V0) and only while the engine is
not idle; a SpecDecoding line follows each one when drafts were made.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from tui.sim.engine import (
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
from tui.sim.flags import ServerFlags, model_info
from tui.sim.load import Advance, LoadProfile, Request, SpecModel
from tui.sim.out import STDERR, STDOUT
from tui.sim.prom import Exposition
from tui.sim.version import V, Version

DEFAULT_VERSION = "0.20.0"
DEFAULT_PORT = 8000
DEFAULT_MODEL = "facebook/opt-125m"
SUPPORTED = ((V("0.6.0"), V("0.7.3")), (V("0.8.5"), V("0.33.9")))

ALIASES = {
    "-tp": "tensor_parallel_size",
    "--tp": "tensor_parallel_size",
    "-pp": "pipeline_parallel_size",
    "-dp": "data_parallel_size",
    "-q": "quantization",
}

_PY = "/usr/local/lib/python3.12/dist-packages"
# fmt: off
_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
_ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
                10.0, 20.0, 40.0, 80.0)
_E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
                120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
# fmt: on
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
_PHRASES = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}

#: where each line is logged from, per release family: key -> (file, line)
_SITES: dict[str, dict[str, tuple[str, int]]] = {
    "v0": {
        "version": ("api_server.py", 712),
        "args": ("api_server.py", 713),
        "init": ("llm_engine.py", 234),
        "load_start": ("model_runner.py", 1092),
        "load_done": ("model_runner.py", 1097),
        "blocks": ("gpu_executor.py", 122),
        "concurrency": ("gpu_executor.py", 126),
        "cudagraph": ("model_runner.py", 1404),
        "cudagraph2": ("model_runner.py", 1408),
        "graph_done": ("model_runner.py", 1518),
        "starting": ("api_server.py", 640),
        "routes": ("launcher.py", 19),
        "route": ("launcher.py", 27),
        "stats": ("metrics.py", 467),
        "spec": ("metrics.py", 489),
        "shutdown": ("launcher.py", 57),
        "dead": ("launcher.py", 99),
    },
    "v08": {
        "version": ("api_server.py", 1034),
        "args": ("api_server.py", 1035),
        "init": ("core.py", 58),
        "load_start": ("gpu_model_runner.py", 1329),
        "load_done": ("gpu_model_runner.py", 1347),
        "kv_mem": ("gpu_worker.py", 217),
        "kv_size": ("kv_cache_utils.py", 634),
        "concurrency": ("kv_cache_utils.py", 637),
        "graph_done": ("gpu_model_runner.py", 1671),
        "init_took": ("core.py", 163),
        "starting": ("api_server.py", 1081),
        "routes": ("launcher.py", 26),
        "route": ("launcher.py", 34),
        "stats": ("loggers.py", 111),
        "spec": ("metrics.py", 82),
        "shutdown": ("launcher.py", 74),
        "fatal": ("core.py", 387),
        "output_handler": ("async_llm.py", 375),
    },
    "v09": {
        "version": ("api_server.py", 1885),
        "args": ("utils.py", 326),
        "init": ("core.py", 77),
        "load_start": ("gpu_model_runner.py", 2602),
        "load_done": ("gpu_model_runner.py", 2634),
        "kv_mem": ("gpu_worker.py", 298),
        "kv_size": ("kv_cache_utils.py", 1087),
        "concurrency": ("kv_cache_utils.py", 1091),
        "graph_done": ("gpu_model_runner.py", 3480),
        "init_took": ("core.py", 210),
        "cache_info": ("loggers.py", 147),
        "starting": ("api_server.py", 1957),
        "routes": ("launcher.py", 34),
        "route": ("launcher.py", 42),
        "stats": ("loggers.py", 123),
        "spec": ("metrics.py", 96),
        "shutdown": ("launcher.py", 99),
        "fatal": ("core.py", 708),
        "output_handler": ("async_llm.py", 480),
        "proc_died": ("core_client.py", 566),
    },
    "v15": {
        "version": ("api_server.py", 1343),
        "args": ("utils.py", 261),
        "init": ("core.py", 93),
        "load_start": ("gpu_model_runner.py", 3421),
        "load_done": ("gpu_model_runner.py", 3518),
        "kv_mem": ("gpu_worker.py", 358),
        "kv_size": ("kv_cache_utils.py", 1291),
        "concurrency": ("kv_cache_utils.py", 1296),
        "graph_done": ("gpu_model_runner.py", 4489),
        "init_took": ("core.py", 272),
        "cache_info": ("loggers.py", 257),
        "starting": ("api_server.py", 1402),
        "routes": ("launcher.py", 46),
        "route": ("launcher.py", 54),
        "stats": ("loggers.py", 257),
        "spec": ("metrics.py", 100),
        "shutdown": ("launcher.py", 112),
        "fatal": ("core.py", 944),
        "output_handler": ("async_llm.py", 561),
        "proc_died": ("core_client.py", 612),
    },
    "v20": {
        "version": ("api_server.py", 1208),
        "args": ("utils.py", 287),
        "init": ("core.py", 101),
        "load_start": ("gpu_model_runner.py", 3912),
        "load_done": ("gpu_model_runner.py", 4011),
        "kv_mem": ("gpu_worker.py", 402),
        "kv_size": ("kv_cache_utils.py", 1376),
        "concurrency": ("kv_cache_utils.py", 1381),
        "graph_done": ("gpu_model_runner.py", 5102),
        "init_took": ("core.py", 289),
        "cache_info": ("loggers.py", 281),
        "starting": ("api_server.py", 1266),
        "routes": ("launcher.py", 48),
        "route": ("launcher.py", 56),
        "stats": ("loggers.py", 298),
        "spec": ("metrics.py", 104),
        "shutdown": ("launcher.py", 121),
        "fatal": ("core.py", 1002),
        "output_handler": ("async_llm.py", 598),
    },
    "v31": {
        "version": ("startup.py", 118),
        "args": ("startup.py", 131),
        "init": ("core.py", 104),
        "load_start": ("gpu_model_runner.py", 4105),
        "load_done": ("gpu_model_runner.py", 4208),
        "kv_mem": ("gpu_worker.py", 417),
        "kv_size": ("kv_cache_utils.py", 1402),
        "concurrency": ("kv_cache_utils.py", 1407),
        "graph_done": ("gpu_model_runner.py", 5390),
        "init_took": ("core.py", 296),
        "cache_info": ("loggers.py", 318),
        "starting": ("api_server.py", 1290),
        "routes": ("launcher.py", 50),
        "route": ("launcher.py", 58),
        "stats": ("loggers.py", 335),
        "spec": ("metrics.py", 104),
        "shutdown": ("launcher.py", 125),
        "fatal": ("core.py", 1040),
        "output_handler": ("async_llm.py", 611),
        "worker_died": ("multiproc_executor.py", 287),
    },
}

# argparse Namespace of `vllm serve` (≤0.8.x prints it whole), in declaration order.
_NAMESPACE: tuple[tuple[str, object], ...] = (
    ("subparser", "serve"),
    ("model_tag", None),
    ("config", ""),
    ("host", None),
    ("port", 8000),
    ("uvicorn_log_level", "info"),
    ("disable_uvicorn_access_log", False),
    ("allow_credentials", False),
    ("allowed_origins", ["*"]),
    ("allowed_methods", ["*"]),
    ("allowed_headers", ["*"]),
    ("api_key", None),
    ("lora_modules", None),
    ("prompt_adapters", None),
    ("chat_template", None),
    ("chat_template_content_format", "auto"),
    ("response_role", "assistant"),
    ("ssl_keyfile", None),
    ("ssl_certfile", None),
    ("ssl_ca_certs", None),
    ("ssl_cert_reqs", 0),
    ("root_path", None),
    ("middleware", []),
    ("return_tokens_as_token_ids", False),
    ("disable_frontend_multiprocessing", False),
    ("enable_request_id_headers", False),
    ("enable_auto_tool_choice", False),
    ("tool_call_parser", None),
    ("tool_parser_plugin", ""),
    ("model", "facebook/opt-125m"),
    ("task", "auto"),
    ("tokenizer", None),
    ("skip_tokenizer_init", False),
    ("revision", None),
    ("code_revision", None),
    ("tokenizer_revision", None),
    ("tokenizer_mode", "auto"),
    ("trust_remote_code", False),
    ("allowed_local_media_path", None),
    ("download_dir", None),
    ("load_format", "auto"),
    ("dtype", "auto"),
    ("kv_cache_dtype", "auto"),
    ("max_model_len", None),
    ("guided_decoding_backend", "xgrammar"),
    ("distributed_executor_backend", None),
    ("pipeline_parallel_size", 1),
    ("tensor_parallel_size", 1),
    ("max_parallel_loading_workers", None),
    ("ray_workers_use_nsight", False),
    ("block_size", None),
    ("enable_prefix_caching", None),
    ("disable_sliding_window", False),
    ("use_v2_block_manager", True),
    ("num_lookahead_slots", 0),
    ("seed", 0),
    ("swap_space", 4),
    ("cpu_offload_gb", 0),
    ("gpu_memory_utilization", 0.9),
    ("num_gpu_blocks_override", None),
    ("max_num_batched_tokens", None),
    ("max_num_seqs", None),
    ("max_logprobs", 20),
    ("disable_log_stats", False),
    ("quantization", None),
    ("rope_scaling", None),
    ("rope_theta", None),
    ("hf_overrides", None),
    ("enforce_eager", False),
    ("max_seq_len_to_capture", 8192),
    ("disable_custom_all_reduce", False),
    ("tokenizer_pool_size", 0),
    ("tokenizer_pool_type", "ray"),
    ("tokenizer_pool_extra_config", None),
    ("limit_mm_per_prompt", None),
    ("mm_processor_kwargs", None),
    ("disable_mm_preprocessor_cache", False),
    ("enable_lora", False),
    ("enable_lora_bias", False),
    ("max_loras", 1),
    ("max_lora_rank", 16),
    ("lora_extra_vocab_size", 256),
    ("lora_dtype", "auto"),
    ("long_lora_scaling_factors", None),
    ("max_cpu_loras", None),
    ("fully_sharded_loras", False),
    ("enable_prompt_adapter", False),
    ("max_prompt_adapters", 1),
    ("max_prompt_adapter_token", 0),
    ("device", "auto"),
    ("num_scheduler_steps", 1),
    ("multi_step_stream_outputs", True),
    ("scheduler_delay_factor", 0.0),
    ("enable_chunked_prefill", None),
    ("speculative_model@<0.8", None),
    ("speculative_model_quantization@<0.8", None),
    ("num_speculative_tokens@<0.8", None),
    ("speculative_config@0.8", None),
    ("speculative_disable_mqa_scorer@<0.8", False),
    ("model_loader_extra_config", None),
    ("ignore_patterns", []),
    ("preemption_mode", None),
    ("served_model_name", None),
    ("qlora_adapter_name_or_path", None),
    ("otlp_traces_endpoint", None),
    ("collect_detailed_traces", None),
    ("disable_async_output_proc", False),
    ("scheduling_policy", "fcfs"),
    ("override_neuron_config", None),
    ("override_pooler_config", None),
    ("compilation_config", None),
    ("kv_transfer_config", None),
    ("worker_cls", "auto"),
    ("generation_config", None),
    ("override_generation_config", None),
    ("enable_sleep_mode", False),
    ("calculate_kv_scales", False),
    ("disable_log_requests", False),
    ("max_log_len", None),
    ("disable_fastapi_docs", False),
    ("enable_prompt_tokens_details", False),
)

#: non-default args order: frontend args, then engine args (argparse declaration order)
_ORDER = tuple(name.partition("@")[0] for name, _ in _NAMESPACE)


class VLLM(Engine):
    """vLLM lines, routes and metrics for one release (see module docstring)."""

    name = "vllm"

    def __init__(self, cfg: SimConfig, host: Host) -> None:
        self.v = cfg.version
        flags = cfg.flags
        positional = [p for p in flags.positional if p != "serve"]
        self.model_tag = positional[0] if positional else None
        model_path = str(flags.get("model") or self.model_tag or DEFAULT_MODEL)
        self.k, self.spec_config = _spec_request(flags)
        super().__init__(
            cfg, host, model_info(model_path), self.k > 0 and cfg.scenario.name != "spec-off"
        )
        if not self.spec_on:
            self.spec_config = None
        self.model_path = model_path
        self.family = self._family(self.v)
        self.sites = _SITES[self.family]
        served = flags.get("served_model_name")
        self.served = str(served[0] if isinstance(served, list) else served or model_path)
        self.max_model_len = int(number(flags.get("max_model_len"), self.model.context_len))
        self.utilization = number(flags.get("gpu_memory_utilization"), 0.9)
        self.enforce_eager = bool(flags.get("enforce_eager"))
        rng = host.rng
        graph_gib = 0.0 if self.enforce_eager else rng.uniform(0.3, 1.2)
        self.mem = self.memory_plan(self.utilization, rng.uniform(1.1, 3.8), graph_gib)
        self.kv_tokens = max(16, self.mem.kv_tokens // 16 * 16)
        default_seqs = 256 if self.v < V("0.10.0") else 1024
        self.max_running = max(1, int(number(flags.get("max_num_seqs"), default_seqs)))
        self.log_stats = not flags.get("disable_log_stats")
        self.access_log = not flags.get("disable_uvicorn_access_log")
        self.spec = None
        if self.spec_on:
            self.spec = SpecModel.perfect(self.k) if self.repeat else SpecModel.healthy(self.k)
        try:
            env_interval = float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10"))
        except ValueError:
            env_interval = 10.0
        self.interval = cfg.stats_interval or (5.0 if self.v0 else max(env_interval, 0.05))
        self.engine_dead = False
        self._lock = threading.Lock()
        self._last_prompt_tps = 0.0
        self._last_gen_tps = 0.0
        self.ttft = Histogram(_TTFT_BUCKETS)
        self.itl = Histogram(_ITL_BUCKETS)
        self.e2e = Histogram(_E2E_BUCKETS)
        self.queue = Histogram(self.e2e.bounds)
        self.finished_reasons = {"stop": 0, "length": 0, "abort": 0}
        self.created = time.time()

    # -- configuration ------------------------------------------------------------------
    @staticmethod
    def _family(v: Version) -> str:
        if v < V("0.8.0"):
            return "v0"
        if v < V("0.9.0"):
            return "v08"
        if v < V("0.15.0"):
            return "v09"
        if v < V("0.20.0"):
            return "v15"
        if v < V("0.31.0"):
            return "v20"
        return "v31"

    @property
    def v0(self) -> bool:
        return self.v < V("0.8.0")

    def load_profile(self) -> LoadProfile:
        return LoadProfile(
            base_tps=self.base_tps(),
            max_running=self.max_running,
            max_total_tokens=self.kv_tokens,
            spec=self.spec,
            decode_log_interval=10**9,
            cache_block=16,
            startup_gap=self.interval,
        )

    # -- line helpers -------------------------------------------------------------------
    def _proc_tag(self, proc: str, rank: int) -> str:
        """``(Name pid=N) `` of the process that writes a line (names per reference §2.1)."""
        v = self.v
        pid = self.host.pid if rank == 0 else self.host.child_pid(rank)
        if proc == "api":
            name = "APIServer"
        elif proc == "worker" and self.cfg.tp > 1:
            if v < V("0.8.0"):
                name = "VllmWorkerProcess" if rank else ""
            elif v < V("0.10.1"):
                name = f"VllmWorker rank={rank}"
            else:
                name = f"Worker_TP{rank}"
        elif v < V("0.10.1"):
            name = "EngineCore_0"
        elif v < V("0.20.0"):
            name = "EngineCore_DP0"
        else:
            name = "EngineCore"
        return f"({name} pid={pid}) " if name else ""

    def raw_tag(self, proc: str, rank: int = 0) -> str:
        """Tag the stdout/stderr wrapper puts before any text the process writes."""
        v = self.v
        if v < V("0.8.0"):
            return self._proc_tag(proc, rank) if (proc == "worker" and rank) else ""
        if v >= V("0.31.0") or (proc == "api" and v < V("0.10.1")):
            return ""
        return self._proc_tag(proc, rank)

    def log_tag(self, proc: str, rank: int = 0) -> str:
        """Tag before a logging line (from ≥0.31 part of the format itself)."""
        if self.v >= V("0.31.0"):
            return self._proc_tag(proc, rank)
        return self.raw_tag(proc, rank)

    def log(
        self, key: str, message: str, proc: str = "api", level: str = "INFO", rank: int = 0
    ) -> None:
        """One record from call site ``key``; continuation lines re-prefixed after ``\\r\\n``."""
        file, line = self.sites[key]
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime())
        site = f"{file}:{line}]" if self.v0 else f"[{file}:{line}]"
        prefix = f"{self.log_tag(proc, rank)}{level} {stamp} {site} "
        self.host.out.line(prefix + message.replace("\n", "\r\n" + prefix), STDOUT)

    def raw(self, text: str, proc: str = "api", fd: int = STDERR, rank: int = 0) -> None:
        """Text written straight to stdout/stderr (tracebacks, tqdm, uvicorn)."""
        tag = self.raw_tag(proc, rank)
        lines = text.split("\n")
        trailing = text.endswith("\n")
        if trailing:
            lines = lines[:-1]
        body = "\n".join(tag + item for item in lines) + ("\n" if trailing else "")
        self.host.out.write(body, fd)

    def uvicorn(self, message: str, level: str = "INFO") -> None:
        self.raw(f"{(level + ':').ljust(9)} {message}\n")

    def access(self, client: str, request_line: str, status: int) -> None:
        if not self.access_log:
            return
        text = f'{client} - "{request_line}" {status} {_PHRASES.get(status, "")}'.rstrip()
        self.raw(f"INFO:     {text}\n", fd=STDOUT)

    def per_rank(self, key: str, message: str) -> None:
        """A line every rank logs (workers with tp > 1, else the engine core)."""
        if self.v0:
            for rank in range(self.cfg.tp):
                self.log(key, message, proc="worker", rank=rank)
        elif self.cfg.tp == 1:
            self.log(key, message, proc="engine")
        else:
            for rank in range(self.cfg.tp):
                self.log(key, message, proc="worker", rank=rank)

    # -- startup ------------------------------------------------------------------------
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
            for raw_name, default in _NAMESPACE:
                name, _, since = raw_name.partition("@")
                if since == "<0.8" and not self.v0:
                    continue
                if since == "0.8" and self.v0:
                    continue
                parts.append(f"{name}={given.get(name, default)!r}")
            parts.extend(f"{k}={v!r}" for k, v in given.items() if k not in _ORDER)
            address = 0x7F0000000000 + self.host.rng.randrange(2**32) * 16
            func = "serve" if self.v0 else "ServeSubcommand.cmd"
            parts.append(f"dispatch_function=<function {func} at {address:#x}>")
            return "args: Namespace(" + ", ".join(parts) + ")"
        ordered = {k: given[k] for k in _ORDER if k in given}
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
        slow = self.cfg.scenario.name == "slow-load"
        total = self.cfg.load_seconds * (4.0 if slow else 1.0)
        rng = self.host.rng
        v = self.v
        mem = self.mem
        shards = self.model.shards
        shard_rate = rng.uniform(0.9, 1.6) / (4.0 if slow else 1.0)
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
                0.15 + 0.35 * index / shards,
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

    # -- serving ------------------------------------------------------------------------
    def on_advance(self, advance: Advance, now: float) -> None:
        for request in advance.finished:
            self.on_finished(request)

    def on_finished(self, request: Request) -> None:
        if request.first_token is None or request.finished is None or request.admitted is None:
            return
        with self._lock:
            self.ttft.observe(max(request.first_token - request.arrived, 0.0))
            self.e2e.observe(max(request.finished - request.arrived, 0.0))
            self.queue.observe(max(request.admitted - request.arrived, 0.0))
            if request.completion_tokens > 1:
                gap = (request.finished - request.first_token) / (request.completion_tokens - 1)
                self.itl.observe(max(gap, 0.0))
            self.finished_reasons["length"] += 1

    def _tick(self) -> None:
        if self.engine_dead:
            return
        self.host.schedule(self.interval, self._tick)
        now = time.monotonic()
        window = self.host.load.take("stats", now)
        prompt_tps = (window.prompt_tokens + window.cached_tokens) / window.elapsed
        gen_tps = window.gen_tokens / window.elapsed
        with self._lock:
            last_prompt, last_gen = self._last_prompt_tps, self._last_gen_tps
            self._last_prompt_tps, self._last_gen_tps = prompt_tps, gen_tps
        if not self.log_stats:
            return
        if self.v0:
            if window.gen_tokens <= 0 and window.prompt_tokens + window.cached_tokens <= 0:
                return
        elif not any((prompt_tps, gen_tps, last_prompt, last_gen)):
            return  # vLLM demotes the stats line to DEBUG on an idle engine
        self.log("stats", self.stats_line(prompt_tps, gen_tps, window.requests > 0))
        if self.spec is not None and window.drafts >= 1:
            self.log("spec", self.spec_line(self.spec, window.drafts, window.elapsed))

    def stats_line(self, prompt_tps: float, gen_tps: float, had_queries: bool) -> str:
        load = self.host.load
        v = self.v
        running, waiting = load.running, load.queued
        usage = 100.0 * load.used_tokens / self.kv_tokens
        totals = load.totals
        hit = 100.0 * totals.cached_tokens / max(totals.prompt_tokens, 1)
        if self.v0:
            return (
                f"Avg prompt throughput: {prompt_tps:.1f} tokens/s, "
                f"Avg generation throughput: {gen_tps:.1f} tokens/s, "
                f"Running: {running} reqs, Swapped: 0 reqs, Pending: {waiting} reqs, "
                f"GPU KV cache usage: {usage:.1f}%, CPU KV cache usage: 0.0%."
            )
        if v < V("0.15.0"):
            return (
                f"Engine 000: Avg prompt throughput: {prompt_tps:.1f} tokens/s, "
                f"Avg generation throughput: {gen_tps:.1f} tokens/s, "
                f"Running: {running} reqs, Waiting: {waiting} reqs, "
                f"GPU KV cache usage: {usage:.1f}%, Prefix cache hit rate: {hit:.1f}%"
            )
        parts = [
            f"Avg prompt throughput: {prompt_tps:.1f} tokens/s",
            f"Avg generation throughput: {gen_tps:.1f} tokens/s",
            f"Running: {running} reqs",
            f"Waiting: {waiting} reqs",
            f"GPU KV cache usage: {usage:.1f}%",
        ]
        if v < V("0.31.0") or had_queries:
            parts.append(f"Prefix cache hit rate: {hit:.1f}%")
        return "Engine 000: " + ", ".join(parts)

    def spec_line(self, spec: SpecModel, drafts_f: float, elapsed: float) -> str:
        rng = self.host.rng
        drafts = max(1, round(drafts_f))
        rates = spec.sample(rng)
        accepted_pos = [round(drafts * rate) for rate in rates]
        accepted = sum(accepted_pos)
        drafted = drafts * spec.k
        per_pos = ", ".join(f"{count / drafts:.3f}" for count in accepted_pos)
        v = self.v
        if self.v0:
            totals = self.host.load.totals
            t_drafts = max(1, round(totals.drafts))
            t_accepted = round(totals.accepted)
            t_drafted = t_drafts * spec.k
            emitted = t_accepted + t_drafts
            return (
                "Speculative metrics: Draft acceptance rate: "
                f"{t_accepted / t_drafted:.3f}, System efficiency: "
                f"{emitted / (t_drafts * (spec.k + 1)):.3f}, Number of speculative tokens: "
                f"{spec.k}, Number of accepted tokens: {t_accepted}, Number of draft tokens: "
                f"{t_drafted}, Number of emitted tokens: {emitted}."
            )
        if v < V("0.10.2"):
            mean = accepted / drafts if v < V("0.9.0") else 1 + accepted / drafts
            return (
                f"SpecDecoding metrics: Draft acceptance rate: {100 * accepted / drafted:.1f}%, "
                f"Mean acceptance length: {mean:.2f}, Accepted: {accepted} tokens, "
                f"Drafted: {drafted} tokens, Per-position acceptance rate: {per_pos}"
            )
        return (
            f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
            f"Accepted throughput: {accepted / elapsed:.2f} tokens/s, "
            f"Drafted throughput: {drafted / elapsed:.2f} tokens/s, "
            f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
            f"Per-position acceptance rate: {per_pos}, "
            f"Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%"
        )

    # -- failures and shutdown ----------------------------------------------------------
    def _frames(self, frames: list[tuple[str, int, str, str]], error: str) -> str:
        lines = ["Traceback (most recent call last):"]
        for path, line, func, code in frames:
            where = path if path.startswith("/") else f"{_PY}/{path}"
            lines.append(f'  File "{where}", line {line}, in {func}')
            lines.append(f"    {code}")
        lines.append(error)
        return "\n".join(lines)

    def oom(self) -> None:
        """KV cache does not fit: EngineCore fails to start, the API server raises; exit 1."""
        error = (
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine."
        )
        self.host.set_phase("crashed")
        if self.v0:
            frames = [
                (
                    "vllm/engine/multiprocessing/engine.py",
                    366,
                    "run_mp_engine",
                    "engine = MQLLMEngine.from_engine_args(engine_args=engine_args,",
                ),
                ("vllm/engine/llm_engine.py", 276, "__init__", "self._initialize_kv_caches()"),
                (
                    "vllm/engine/llm_engine.py",
                    429,
                    "_initialize_kv_caches",
                    "self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)",
                ),
                (
                    "vllm/worker/worker.py",
                    306,
                    "initialize_cache",
                    "raise_if_cache_size_invalid(num_gpu_blocks,",
                ),
                (
                    "vllm/worker/worker.py",
                    523,
                    "raise_if_cache_size_invalid",
                    'raise ValueError("No available memory for the cache blocks. "',
                ),
            ]
            self.raw(self._frames(frames, error) + "\n")
            api = [
                ("/usr/local/bin/vllm", 8, "<module>", "sys.exit(main())"),
                (
                    "vllm/entrypoints/openai/api_server.py",
                    663,
                    "run_server",
                    "async with build_async_engine_client(args) as engine_client:",
                ),
                (
                    "vllm/entrypoints/openai/api_server.py",
                    226,
                    "build_async_engine_client_from_engine_args",
                    'raise RuntimeError("Engine process failed to start. See stack "',
                ),
            ]
            self.raw(
                self._frames(
                    api,
                    "RuntimeError: Engine process failed to start. See "
                    "stack trace for the root cause.",
                )
                + "\n"
            )
            self.host.finish(1)
            return
        frames = [
            (
                "vllm/v1/engine/core.py",
                691,
                "run_engine_core",
                "engine_core = EngineCoreProc(*args, **kwargs)",
            ),
            (
                "vllm/v1/engine/core.py",
                492,
                "__init__",
                "super().__init__(vllm_config, executor_class, log_stats,",
            ),
            ("vllm/v1/engine/core.py", 89, "__init__", "self._initialize_kv_caches(vllm_config)"),
            (
                "vllm/v1/engine/core.py",
                172,
                "_initialize_kv_caches",
                "kv_cache_configs = get_kv_cache_configs(vllm_config, kv_cache_specs,",
            ),
            (
                "vllm/v1/core/kv_cache_utils.py",
                1110,
                "get_kv_cache_configs",
                "check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,",
            ),
            (
                "vllm/v1/core/kv_cache_utils.py",
                687,
                "check_enough_kv_cache_memory",
                'raise ValueError("No available memory for the cache blocks. "',
            ),
        ]
        trace = self._frames(frames, error)
        self.log("fatal", "EngineCore failed to start.\n" + trace, proc="engine", level="ERROR")
        name = (
            "EngineCore_0"
            if self.v < V("0.10.1")
            else ("EngineCore_DP0" if self.v < V("0.20.0") else "EngineCore")
        )
        bootstrap = [
            ("/usr/lib/python3.12/multiprocessing/process.py", 314, "_bootstrap", "self.run()"),
            (
                "/usr/lib/python3.12/multiprocessing/process.py",
                108,
                "run",
                "self._target(*self._args, **self._kwargs)",
            ),
            ("vllm/v1/engine/core.py", 704, "run_engine_core", "raise e"),
            *frames,
        ]
        self.raw(f"Process {name}:\n" + self._frames(bootstrap, error) + "\n", proc="engine")
        api = [
            ("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())"),
            ("vllm/entrypoints/cli/main.py", 54, "main", "args.dispatch_function(args)"),
            ("vllm/entrypoints/cli/serve.py", 57, "cmd", "uvloop.run(run_server(args))"),
            (
                "vllm/entrypoints/openai/api_server.py",
                1884,
                "run_server",
                "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)",
            ),
            (
                "vllm/v1/engine/utils.py",
                878,
                "wait_for_engine_startup",
                'raise RuntimeError("Engine core initialization failed. "',
            ),
        ]
        final = "RuntimeError: Engine core initialization failed. See root cause above."
        if self.v >= V("0.10.0"):
            final += " Failed core proc(s): {}"
        self.raw(self._frames(api, final) + "\n")
        self.host.finish(1)

    def crash(self) -> None:
        """The engine dies mid-serving; the watchdog (every 5 s) then shuts uvicorn down; exit 0."""
        self.engine_dead = True
        self.host.set_phase("crashed")
        torch_error = "torch.AcceleratorError" if self.v >= V("0.11.0") else "RuntimeError"
        error = (
            f"{torch_error}: CUDA error: an illegal memory access was encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, "
            "so the stacktrace below might be incorrect.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
        )
        if self.v0:
            frames = [
                ("vllm/engine/multiprocessing/engine.py", 231, "engine_step", "raise e"),
                (
                    "vllm/worker/model_runner.py",
                    1654,
                    "execute_model",
                    "hidden_or_intermediate_states = model_executable(",
                ),
            ]
            self.raw(self._frames(frames, error) + "\n")
            self.log(
                "dead", "MQLLMEngine is already dead, terminating server process", level="CRITICAL"
            )
        else:
            frames = [
                ("vllm/v1/engine/core.py", 701, "run_engine_core", "engine_core.run_busy_loop()"),
                ("vllm/v1/engine/core.py", 728, "run_busy_loop", "self._process_engine_step()"),
                (
                    "vllm/v1/engine/core.py",
                    754,
                    "_process_engine_step",
                    "outputs, model_executed = self.step_fn()",
                ),
                (
                    "vllm/v1/engine/core.py",
                    284,
                    "step",
                    "model_output = self.execute_model_with_error_logging(",
                ),
                (
                    "vllm/v1/worker/gpu_model_runner.py",
                    2211,
                    "execute_model",
                    "valid_sampled_token_ids = sampled_token_ids.tolist()",
                ),
            ]
            self.log(
                "fatal",
                "EngineCore encountered a fatal error.\n" + self._frames(frames, error),
                proc="engine",
                level="ERROR",
            )
            self._output_handler_failed(
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
                "issue. See stack trace (above) for the root cause."
            )
        self._serving_ended()

    def _output_handler_failed(self, error: str) -> None:
        """The API server's output handler fails once the engine core is gone (0.11 on)."""
        handler = [
            (
                "vllm/v1/engine/async_llm.py",
                439,
                "output_handler",
                "outputs = await engine_core.get_output_async()",
            ),
            (
                "vllm/v1/engine/core_client.py",
                846,
                "get_output_async",
                "raise self._format_exception(outputs) from None",
            ),
        ]
        self.log(
            "output_handler",
            "AsyncLLM output_handler failed.\n" + self._frames(handler, error),
            level="ERROR",
        )

    def _serving_ended(self) -> None:
        """Requests in flight fail; the watchdog (every 5 s) then shuts uvicorn down."""
        self.host.load.abort_all(time.monotonic())
        since_ready = time.monotonic() - (self.host.ready_at or time.monotonic())
        delay = 5.0 - (since_ready % 5.0)
        self.host.schedule(delay, self._watchdog_exit)

    def child_killed(self) -> None:
        """The engine core (0.11-0.15) or a worker (0.33) is killed (SIGKILL) mid-serving:
        the process above it says so; then as after a crash, exit 0."""
        self.engine_dead = True
        self.host.set_phase("crashed")
        if self.v >= V("0.33.0"):
            self.log(
                "worker_died",
                "Worker proc Worker_TP0 died unexpectedly (exit code: -9), shutting down executor.",
                proc="engine",
                level="ERROR",
            )
            self._output_handler_failed(
                "RuntimeError: Engine core process EngineCore died unexpectedly."
            )
        else:
            self.log(
                "proc_died",
                "Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",
                level="ERROR",
            )
        self._serving_ended()

    def _watchdog_exit(self) -> None:
        self.uvicorn("Shutting down")
        self.uvicorn("Waiting for application shutdown.")
        self.uvicorn("Application shutdown complete.")
        self.uvicorn(f"Finished server process [{self.host.pid}]")
        self.host.finish(0)

    def shutdown(self, signum: int) -> None:
        self.log("shutdown", "Shutting down FastAPI HTTP server.")
        self.uvicorn("Shutting down")
        self.uvicorn("Waiting for application shutdown.")
        self.uvicorn("Application shutdown complete.")

    def bind_failed(self, error: OSError) -> None:
        frames = [
            ("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())"),
            (
                "vllm/entrypoints/openai/api_server.py",
                1822,
                "create_server_socket",
                "sock.bind(addr)",
            ),
        ]
        self.raw(
            self._frames(frames, f"OSError: [Errno {error.errno}] Address already in use") + "\n"
        )

    # -- HTTP ---------------------------------------------------------------------------
    def serving(self) -> bool:
        return self.host.is_ready() and not self.engine_dead

    def routes(self) -> dict[str, dict[str, Handler]]:
        def alive(_body: bytes) -> Response:
            return Response(200) if self.serving() else Response(503)

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
        for path in ("/v1/completions", "/v1/chat/completions"):
            table[path] = {
                "POST": lambda body, path=path: self.json_post(
                    body, lambda payload: self.openai(path, payload, self.served), refused
                )
            }
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

    def metrics_text(self) -> str:
        """``/metrics`` with the V0 or V1 metric names of this release (reference §2.6)."""
        load, v, v0 = self.host.load, self.v, self.v0
        totals = load.totals
        labels: dict[str, str] = {"model_name": self.served}
        if not v0:
            labels["engine"] = "0"
        usage = load.used_tokens / self.kv_tokens
        page = Exposition()
        with self._lock:
            gauges = [
                (
                    "num_requests_running",
                    "Number of requests in model execution batches.",
                    load.running,
                    True,
                ),
                ("num_requests_swapped", "Number of requests swapped to CPU.", 0, v0),
                (
                    "num_requests_waiting",
                    "Number of requests waiting to be processed.",
                    load.queued,
                    True,
                ),
                (
                    "gpu_cache_usage_perc",
                    "GPU KV-cache usage. 1 means 100 percent usage.",
                    usage,
                    v < V("0.15.0"),
                ),
                (
                    "kv_cache_usage_perc",
                    "KV-cache usage. 1 means 100 percent usage.",
                    usage,
                    not v0 and v >= V("0.9.0"),
                ),
                ("cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage.", 0, v0),
                (
                    "avg_prompt_throughput_toks_per_s",
                    "Average prefill throughput in tokens/s.",
                    self._last_prompt_tps,
                    v0,
                ),
                (
                    "avg_generation_throughput_toks_per_s",
                    "Average generation throughput in tokens/s.",
                    self._last_gen_tps,
                    v0,
                ),
            ]
            prefix = "vllm:prefix_cache" if v >= V("0.9.0") else "vllm:gpu_prefix_cache"
            counters = [
                (
                    "vllm:num_preemptions",
                    "Cumulative number of preemption from the engine.",
                    0,
                    True,
                ),
                (
                    "vllm:prompt_tokens",
                    "Number of prefill tokens processed.",
                    totals.prompt_tokens,
                    True,
                ),
                (
                    "vllm:generation_tokens",
                    "Number of generation tokens processed.",
                    int(totals.gen_tokens),
                    True,
                ),
                (
                    f"{prefix}_queries",
                    "Prefix cache queries, in terms of number of queried tokens.",
                    totals.prompt_tokens,
                    not v0,
                ),
                (
                    f"{prefix}_hits",
                    "Prefix cache hits, in terms of number of cached tokens.",
                    totals.cached_tokens,
                    not v0,
                ),
            ]
            histograms = [
                (
                    "time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.",
                    self.ttft,
                    True,
                ),
                (
                    "inter_token_latency_seconds",
                    "Histogram of inter-token latency in seconds.",
                    self.itl,
                    not v0 and v >= V("0.10.2"),
                ),
                (
                    "time_per_output_token_seconds",
                    "Histogram of time per output token in seconds.",
                    self.itl,
                    v < V("0.15.0"),
                ),
                (
                    "e2e_request_latency_seconds",
                    "Histogram of e2e request latency in seconds.",
                    self.e2e,
                    True,
                ),
                (
                    "request_queue_time_seconds",
                    "Histogram of time spent in WAITING phase for request.",
                    self.queue,
                    not v0,
                ),
            ]
            for name, help_text, value, shown in gauges:
                if shown:
                    page.gauge(f"vllm:{name}", help_text, [(labels, float(value))])
            for name, help_text, value, shown in counters:
                if shown:
                    page.counter(name, help_text, [(labels, float(value))], self.created)
            page.counter(
                "vllm:request_success",
                "Count of successfully processed requests.",
                [
                    ({**labels, "finished_reason": reason}, float(count))
                    for reason, count in self.finished_reasons.items()
                ],
                self.created,
            )
            for name, help_text, hist, shown in histograms:
                if shown:
                    page.histogram(
                        f"vllm:{name}",
                        help_text,
                        hist.bounds,
                        [(labels, list(hist.counts), hist.total)],
                        self.created,
                    )
        if self.spec is not None:
            self._spec_metrics(page, labels, self.spec)
        return page.text()

    def _spec_metrics(self, page: Exposition, labels: dict[str, str], spec: SpecModel) -> None:
        totals = self.host.load.totals
        drafts = float(round(totals.drafts))
        created = self.created
        if self.v0:
            accepted = float(round(totals.accepted))
            drafted = drafts * spec.k
            emitted = accepted + drafts
            page.gauge(
                "vllm:spec_decode_draft_acceptance_rate",
                "Speulative token acceptance rate.",
                [(labels, accepted / drafted if drafted else 0.0)],
            )
            page.gauge(
                "vllm:spec_decode_efficiency",
                "Speculative decoding system efficiency.",
                [(labels, emitted / (drafts * (spec.k + 1)) if drafts else 0.0)],
            )
            for name, value in (("accepted", accepted), ("draft", drafted), ("emitted", emitted)):
                page.counter(
                    f"vllm:spec_decode_num_{name}_tokens",
                    f"Number of {name} tokens.",
                    [(labels, value)],
                    created,
                )
            return
        per_pos = [float(round(totals.drafts * rate)) for rate in spec.per_pos]
        page.counter(
            "vllm:spec_decode_num_drafts",
            "Number of spec decoding drafts.",
            [(labels, drafts)],
            created,
        )
        page.counter(
            "vllm:spec_decode_num_draft_tokens",
            "Number of draft tokens.",
            [(labels, drafts * spec.k)],
            created,
        )
        page.counter(
            "vllm:spec_decode_num_accepted_tokens",
            "Number of accepted tokens.",
            [(labels, float(sum(per_pos)))],
            created,
        )
        page.counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            [({**labels, "position": str(i)}, n) for i, n in enumerate(per_pos)],
            created,
        )


def _spec_request(flags: ServerFlags) -> tuple[int, dict[str, object] | None]:
    """(draft tokens per step, the config dict) asked for by the flags; (0, None) if none."""
    config = flags.get("speculative_config")
    if isinstance(config, dict):
        tokens = config.get("num_speculative_tokens")
        k = tokens if isinstance(tokens, int) and tokens > 0 else 3
        return k, dict(config)
    legacy = flags.get("speculative_model")
    if legacy not in (None, True):
        tokens = flags.get("num_speculative_tokens")
        k = tokens if isinstance(tokens, int) and tokens > 0 else 3
        return k, {"model": legacy, "num_speculative_tokens": k}
    return 0, None


def _unsupported(v: Version, scenario: str) -> str | None:
    """Scenarios whose lines are known only for some releases."""
    if scenario == "killed-at-load":
        return "its lines are simulated for sglang only"
    if scenario == "killed-after" and not (V("0.11.0") <= v < V("0.16.0") or v >= V("0.33.0")):
        return "its lines are known for 0.11 to 0.15 ('Engine core proc') and 0.33 ('Worker proc')"
    return None


KIND = EngineKind(
    name="vllm",
    default_version=DEFAULT_VERSION,
    default_port=DEFAULT_PORT,
    aliases=ALIASES,
    tp_flags=("tensor_parallel_size",),
    releases=SUPPORTED,
    factory=VLLM,
    unsupported=_unsupported,
)
