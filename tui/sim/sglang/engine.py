"""The simulated SGLang server of one release: its state and resolved ``ServerArgs``, built
from the flags, and its parts."""

from __future__ import annotations

import os
import threading

from tui.sim.config import SimConfig
from tui.sim.engine import Host, number
from tui.sim.flags import model_info
from tui.sim.histogram import Histogram
from tui.sim.load import LoadProfile, Request, SpecModel
from tui.sim.sglang.batches import Batches
from tui.sim.sglang.failures import Failures
from tui.sim.sglang.metrics import ITL_BUCKETS, TTFT_BUCKETS, Metrics
from tui.sim.sglang.releases import DEFAULT_MODEL
from tui.sim.sglang.routes import Routes
from tui.sim.sglang.server_args import FIELDS
from tui.sim.sglang.stalls import Stalls
from tui.sim.sglang.startup import Startup
from tui.sim.version import V


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true")


class SGLang(Startup, Batches, Failures, Stalls, Metrics, Routes):
    """SGLang lines, routes and metrics for one release (see :mod:`tui.sim.sglang`)."""

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
        self.ttft = Histogram(TTFT_BUCKETS)
        self.itl = Histogram(ITL_BUCKETS)
        self.e2e = Histogram((*TTFT_BUCKETS, 800))
        self.last_gen_throughput = 0.0
        self.last_accept_len = 0.0
        self.startup_gap = round(host.rng.uniform(18.0, 55.0), 3)
        #: the warmup request in flight and the client address its access line shows
        self._warmup_request: tuple[Request, str] | None = None

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
        for raw_name, default in FIELDS:
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
