"""The simulated TGI launcher of one release: its state, built from the launcher flags."""

from __future__ import annotations

import threading

from tui.sim.config import SimConfig
from tui.sim.engine import Host, number
from tui.sim.flags import model_info
from tui.sim.load import LoadProfile, SpecModel
from tui.sim.tgi.failures import Failures
from tui.sim.tgi.metrics import Metrics
from tui.sim.tgi.releases import DEFAULT_MODEL, layout
from tui.sim.tgi.routes import Routes
from tui.sim.tgi.startup import Startup

#: the launcher's ``max_default``: longer contexts are cut to this unless limits are given
MAX_DEFAULT = 4096
#: room the launcher adds to ``max_input_tokens`` for the default prefill budget
PREFILL_EDGE = 50


class TGI(Startup, Failures, Metrics, Routes):
    """TGI lines, routes and metrics for one release (see :mod:`tui.sim.tgi`)."""

    name = "tgi"

    def __init__(self, cfg: SimConfig, host: Host) -> None:
        flags = cfg.flags
        self.v = cfg.version
        self.model_id = str(flags.get("model_id") or DEFAULT_MODEL)
        speculate = flags.get("speculate")
        self.speculate = speculate if isinstance(speculate, int) and speculate > 0 else 0
        super().__init__(
            cfg,
            host,
            model_info(self.model_id),
            bool(self.speculate) and cfg.scenario.name != "spec-off",
        )
        self.layout = layout(self.v)
        self.json_output = bool(flags.get("json_output"))
        self.limits_given = any(
            flags.has(name)
            for name in (
                "max_input_tokens",
                "max_input_length",
                "max_total_tokens",
                "max_batch_prefill_tokens",
            )
        )
        self.max_position = min(self.model.context_len, MAX_DEFAULT)
        given_input = flags.get("max_input_tokens", "max_input_length")
        self.max_input_tokens = int(number(given_input, self.max_position - 1))
        self.max_total_tokens = int(number(flags.get("max_total_tokens"), self.max_position))
        self.max_prefill = int(
            number(flags.get("max_batch_prefill_tokens"), self.max_input_tokens + PREFILL_EDGE)
        )
        self.max_concurrent = max(1, int(number(flags.get("max_concurrent_requests"), 128)))
        fraction = number(flags.get("cuda_memory_fraction"), 1.0)
        rng = host.rng
        self.mem = self.memory_plan(
            min(fraction, 1.0) * 0.95, rng.uniform(0.8, 2.4), rng.uniform(0.3, 0.9)
        )
        self.max_batch_total = int(
            number(
                flags.get("max_batch_total_tokens"), max(self.mem.kv_tokens, self.max_total_tokens)
            )
        )
        quantize = flags.get("quantize")
        self.quantize = str(quantize) if isinstance(quantize, str) else None
        self.cuda_graphs = self._cuda_graphs()
        self.spec = None
        if self.spec_on:
            self.spec = (
                SpecModel.perfect(self.speculate)
                if self.repeat
                else SpecModel.healthy(self.speculate)
            )
        self.shard_dead = False
        self._lock = threading.Lock()
        self._call = threading.local()
        self.init_metrics()

    def _cuda_graphs(self) -> list[int]:
        """The launcher's sizes: the flag's above 0, none for bitsandbytes/exl2, else 1 to 32."""
        given = self.cfg.flags.get("cuda_graphs")
        if given is not None:
            items = given if isinstance(given, list) else str(given).split(",")
            return [int(n) for n in (str(i).strip() for i in items) if n.isdigit() and int(n) > 0]
        if self.quantize is not None and (
            self.quantize.startswith("bitsandbytes") or self.quantize == "exl2"
        ):
            return []
        return [1, 2, 4, 8, 16, 32]

    def load_profile(self) -> LoadProfile:
        return LoadProfile(
            base_tps=self.base_tps(),
            max_running=self.max_concurrent,
            max_total_tokens=max(1, self.max_batch_total),
            spec=self.spec,
            decode_log_interval=10**9,
            cache_block=1,
        )
