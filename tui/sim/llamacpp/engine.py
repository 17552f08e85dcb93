"""The simulated llama-server of one build: its state, read from argv as llama-server reads
it, and its parts."""

from __future__ import annotations

import os
import threading

from tui.sim.config import SimConfig
from tui.sim.engine import Host, number
from tui.sim.flags import ServerFlags, model_info
from tui.sim.llamacpp.failures import Failures
from tui.sim.llamacpp.lines import process_started_monotonic
from tui.sim.llamacpp.metrics import Counters, Metrics
from tui.sim.llamacpp.releases import (
    DEFAULT_DRAFT_MAX,
    DEFAULT_MODEL,
    DEFAULT_SLOTS,
    OLD_DEFAULT_CTX,
    OLD_DEFAULT_SLOTS,
    commit_of,
    shape,
)
from tui.sim.llamacpp.routes import Routes
from tui.sim.llamacpp.serving import Serving, Task
from tui.sim.llamacpp.startup import Startup
from tui.sim.load import Advance, LoadProfile, SpecModel

#: bits per weight of a GGUF file by the quantisation its name shows (Q4_K_M when none)
BITS = (("q8_0", 8.5), ("q6_k", 6.56), ("q5_k", 5.69), ("f16", 16.0), ("bf16", 16.0))
DEFAULT_BITS = 4.89
#: single-slot prompt throughput, tokens/s
PREFILL_TPS = 2500.0
#: decode steps between the load model's wake-ups (each checks the progress lines)
WAKE_STEPS = 25
#: how slots share decode speed (tokens/s per slot falls past this many busy slots)
KNEE = 8.0
#: the chance a draft token is accepted given the ones before it were, at position 0,
#: and how much it falls per position (a separate small draft model)
DRAFT_FIRST = 0.86
DRAFT_STEP = 0.06
DRAFT_FLOOR = 0.2
MIB = 2**20


def _bits(path: str) -> float:
    lower = path.lower()
    return next((bits for tag, bits in BITS if tag in lower), DEFAULT_BITS)


class LlamaCpp(Startup, Serving, Failures, Metrics, Routes):
    """llama-server lines, routes and metrics for one build (see :mod:`tui.sim.llamacpp`)."""

    name = "llamacpp"

    def __init__(self, cfg: SimConfig, host: Host) -> None:
        flags = cfg.flags
        self.v = cfg.version
        self.shape = shape(self.v)
        self.model_path = str(flags.get("model") or DEFAULT_MODEL)
        self.draft_path = str(flags.get("model_draft") or "")
        self.wants_spec = bool(self.draft_path)
        # the server of 2024 builds has no speculative decoding; 2026 builds can refuse it
        spec_on = self.wants_spec and self.shape != "2024" and cfg.scenario.name != "spec-off"
        base = os.path.basename(self.model_path)
        super().__init__(cfg, host, model_info(base), spec_on)
        self.model_name = base.rsplit(".", 1)[0]
        alias = flags.get("alias")
        self.alias = str(alias) if isinstance(alias, (str, int, float)) else ""
        self.model_id = self.alias or (base if self.shape == "2026" else self.model_path)
        self.bind_host = cfg.bind_host
        self.log_prefix = flags.has("log_prefix")
        self.log_timestamps = flags.has("log_timestamps")
        self.started = process_started_monotonic()
        self.log_lock = threading.Lock()
        self.tid = str(0x7F0000000000 + host.rng.randrange(2**24) * 4096)
        self.commit = commit_of(self.v.key[0])
        self._size(flags)
        self.prefill_tps = PREFILL_TPS
        self.spec = self._spec_model()
        self._lock = threading.Lock()
        self.tasks: dict[int, Task] = {}
        self.next_task = 0
        self.counters = Counters()
        self.busy_slot_steps = 0.0
        self._decodes_seen = 0

    def _size(self, flags: ServerFlags) -> None:
        """Threads, slots, context, offload, buffer sizes and draft limits from argv."""
        threads = flags.get("threads")
        self.threads = threads if isinstance(threads, int) and threads > 0 else 8
        self.system_info = "CUDA : ARCHS = 890 | USE_GRAPHS = 1 | CPU : SSE3 = 1 | AVX2 = 1 |"
        slots = flags.get("parallel")
        default_slots = DEFAULT_SLOTS if self.shape == "2026" else OLD_DEFAULT_SLOTS
        self.n_slots = slots if isinstance(slots, int) and slots > 0 else default_slots
        ctx = flags.get("ctx_size")
        if isinstance(ctx, int) and ctx > 0:
            self.n_ctx = ctx
        else:
            self.n_ctx = self.model.context_len if self.shape == "2026" else OLD_DEFAULT_CTX
        self.n_ctx_slot = self.n_ctx if self.shape == "2026" else max(self.n_ctx // self.n_slots, 1)
        batch = flags.get("batch_size")
        self.n_batch = batch if isinstance(batch, int) and batch > 0 else 2048
        layers = self.model.layers
        ngl = flags.get("n_gpu_layers")
        wanted = int(number(ngl, layers + 1 if self.shape == "2026" else 0))
        self.offloaded = max(0, min(wanted, layers + 1))
        self.bits_per_weight = _bits(self.model_path)
        self.weights_mib = self.model.params_b * 1e9 * self.bits_per_weight / 8 / MIB
        self.gpu_weights_mib = self.weights_mib * self.offloaded / (layers + 1)
        self.kv_mib = self.n_ctx * self.model.kv_bytes_per_token / MIB
        self.compute_mib = 300.0 + self.n_ctx / 64
        self.context_gib = 0.35
        draft_max = flags.get("draft_max")
        draft_min = flags.get("draft_min")
        self.draft_max = (
            draft_max if isinstance(draft_max, int) and draft_max > 0 else DEFAULT_DRAFT_MAX
        )
        self.draft_min = draft_min if isinstance(draft_min, int) and draft_min >= 0 else 0

    def _spec_model(self) -> SpecModel | None:
        if not self.spec_on:
            return None
        k = self.draft_max
        if self.repeat:
            return SpecModel.perfect(k)
        cond = tuple(max(DRAFT_FLOOR, DRAFT_FIRST - DRAFT_STEP * i) for i in range(k))
        return SpecModel(k, cond, k + 1)

    def load_profile(self) -> LoadProfile:
        return LoadProfile(
            base_tps=self.base_tps(),
            max_running=self.n_slots,
            max_total_tokens=max(self.n_ctx, 1),
            prefill_tps=self.prefill_tps,
            spec=self.spec,
            decode_log_interval=WAKE_STEPS,
            cache_block=1,
            knee=KNEE,
        )

    def on_advance(self, advance: Advance, now: float) -> None:
        load = self.host.load
        decodes = load.totals.forward_ct
        with self._lock:
            self.busy_slot_steps += load.running * (decodes - self._decodes_seen)
            self._decodes_seen = decodes
        if self.wedged:
            return  # the server loop is stuck in llama_decode: no line any more
        super().on_advance(advance, now)
