"""The simulated vLLM server of one release: its state, built from the flags, and its parts."""

from __future__ import annotations

import os
import threading
import time

from tui.sim.config import SimConfig
from tui.sim.engine import Host, number
from tui.sim.flags import ServerFlags, model_info
from tui.sim.histogram import Histogram
from tui.sim.load import LoadProfile, SpecModel
from tui.sim.version import V
from tui.sim.vllm.metrics import E2E_BUCKETS, ITL_BUCKETS, TTFT_BUCKETS, Metrics
from tui.sim.vllm.releases import DEFAULT_MODEL, SITES, family
from tui.sim.vllm.routes import Routes
from tui.sim.vllm.stalls import Stalls
from tui.sim.vllm.startup import Startup
from tui.sim.vllm.stats import Stats


class VLLM(Startup, Stats, Stalls, Metrics, Routes):
    """vLLM lines, routes and metrics for one release (see :mod:`tui.sim.vllm`)."""

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
        self.family = family(self.v)
        self.sites = SITES[self.family]
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
        self.ttft = Histogram(TTFT_BUCKETS)
        self.itl = Histogram(ITL_BUCKETS)
        self.e2e = Histogram(E2E_BUCKETS)
        self.queue = Histogram(self.e2e.bounds)
        self.finished_reasons = {"stop": 0, "length": 0, "abort": 0}
        self.created = time.time()

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
