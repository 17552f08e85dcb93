"""llama-server's startup, first line to ready: build and system info, the HTTP bind, the
model loader's chatter, the tensors, the context and KV cache, the slots, the ready line.

Every step falls at a fixed share of the startup's length (``--load-seconds``, four
times that for ``slow-load``): the banner at 0, the devices at 4%, the model's metadata
at 8%, its description at 14%, the tensors from 20% (loaded at 66%), the context and KV
cache at 70%, a draft model at 78%, the warm-up at 86%, the slots at 92% and ready at
100%. ``slow-load`` loads a GGUF split in ``--shards`` files (``additional N GGUFs
metadata loaded``) and writes the loader's dots a few at a time from 22% to 66%.
"""

from __future__ import annotations

from collections.abc import Callable

from tui.sim.llamacpp.lines import LlamaLines

#: the loader's progress dots (written at once, so no other line lands inside them)
LOADER_DOTS = 88
TARGET = "x86_64-linux-gnu"
#: ``slow-load``: the dots come in this many writes, spread from 22% to 66% of the startup
DOT_CHUNKS = 8
DOTS_START = 0.22
DOTS_SHARE = 0.44


class Startup(LlamaLines):
    """The startup plan and the lines it writes."""

    def plan(self) -> list[tuple[float, Callable[[], None]]]:
        slow = self.cfg.slow
        total = self.cfg.startup_seconds
        steps: list[tuple[float, Callable[[], None]]] = []

        def at(fraction: float, *actions: Callable[[], None]) -> None:
            steps.extend((total * fraction, action) for action in actions)

        at(0.0, self._banner, lambda: self.host.set_phase("loading"), self._log_requests)
        at(0.04, self._devices)
        at(0.08, self._metadata)
        at(0.14, self._print_info)
        at(0.20, self._tensors_begin)
        if self.cfg.scenario.name == "oom":
            at(0.30, self.oom)
            return steps
        if self.cfg.scenario.name == "killed-at-load":
            at(0.30, self.killed)
            return steps
        if slow:
            for chunk in range(DOT_CHUNKS):
                at(
                    DOTS_START + DOTS_SHARE * chunk / DOT_CHUNKS,
                    lambda: self.cont("." * (LOADER_DOTS // DOT_CHUNKS)),
                )
            at(0.66, lambda: self.cont("\n"), self._weights_loaded)
        else:
            at(0.66, lambda: self.cont("." * LOADER_DOTS + "\n"), self._weights_loaded)
        at(0.70, self._context)
        if self.spec_on:
            at(0.78, self._draft)
        at(0.86, self._warmup)
        at(0.92, self._slots_ready)
        at(1.0, lambda: self.host.mark_ready(self._ready_line))
        return steps

    @property
    def loaded_path(self) -> str:
        """The GGUF file opened first: in ``slow-load`` the first of ``--shards`` splits."""
        splits = self.cfg.shards
        if not self.cfg.slow or splits < 2:
            return self.model_path
        stem = self.model_path.removesuffix(".gguf")
        return f"{stem}-00001-of-{splits:05d}.gguf"

    def _log_requests(self) -> None:
        """The HTTP server runs from the start, so requests are logged while loading too."""
        self.host.http_logging = True

    # -- the lines ------------------------------------------------------------------------
    def _banner(self) -> None:
        build = self.v.key[0]
        if self.shape == "2024":
            self.old("main", "build info", build=build, commit=self.commit)
            self.old(
                "main",
                "system info",
                n_threads=self.threads,
                n_threads_batch=self.threads,
                total_threads=self.threads * 2,
                system_info=self.system_info,
            )
            # from 2024-01 the HTTP server starts before the model loads (/health: 503)
            self.old(
                "main",
                "HTTP server listening",
                n_threads_http=str(self.threads * 2 - 1),
                port=str(self.host.port),
                hostname=self.bind_host,
            )
            return
        self.log(f"build: {build} ({self.commit}) with cc (Ubuntu 13.3.0) 13.3.0 for {TARGET}")
        self.log(
            f"system info: n_threads = {self.threads}, n_threads_batch = {self.threads}, "
            f"total_threads = {self.threads * 2}"
        )
        self.log(
            f"system_info: n_threads = {self.threads} (n_threads_batch = {self.threads}) "
            f"/ {self.threads * 2} | {self.system_info}"
        )
        self.log("main: binding port with default address family")
        self.log(
            f"main: HTTP server is listening, hostname: {self.bind_host}, port: {self.host.port}, "
            f"http threads: {self.threads * 2 - 1}"
        )
        self.log("main: loading model")
        self.srv("load_model", f"loading model '{self.loaded_path}'")

    def _devices(self) -> None:
        self.llama("ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no")
        self.llama("ggml_cuda_init: GGML_CUDA_FORCE_CUBLAS: no")
        count = len(self.host.gpus)
        self.llama(f"ggml_cuda_init: found {count} CUDA devices:")
        for index, gpu in enumerate(self.host.gpus):
            self.llama(f"  Device {index}: {gpu.name}, compute capability 9.0, VMM: yes")
        if self.shape != "2024":
            gpu = self.host.gpus[0]
            self.llama(
                f"llama_model_load_from_file_impl: using device CUDA0 ({gpu.name}) - "
                f"{gpu.usable_mib - 420} MiB free"
            )

    def _metadata(self) -> None:
        m = self.model
        if self.loaded_path != self.model_path:
            self.llama(
                f"llama_model_loader: additional {self.cfg.shards - 1} GGUFs metadata loaded."
            )
        self.llama(
            f"llama_model_loader: loaded meta data with 33 key-value pairs and "
            f"{m.layers * 11 + 3} tensors from {self.loaded_path} (version GGUF V3 (latest))"
        )
        self.llama(
            "llama_model_loader: Dumping metadata keys/values. "
            "Note: KV overrides do not apply in this output."
        )
        arch = m.model_type
        rows = (
            ("general.architecture", "str", arch),
            ("general.name", "str", self.model_name),
            (f"{arch}.context_length", "u32", str(m.context_len)),
            (f"{arch}.block_count", "u32", str(m.layers)),
            (f"{arch}.attention.head_count_kv", "u32", str(m.kv_heads)),
            ("general.file_type", "u32", "15"),
        )
        for index, (key, kind, value) in enumerate(rows):
            self.llama(f"llama_model_loader: - kv {index:3d}: {key:>42s} {kind:<13s}= {value}")
        self.llama(f"llama_model_loader: - type  f32: {m.layers * 2 + 1:4d} tensors")
        self.llama(f"llama_model_loader: - type q4_K: {m.layers * 8:4d} tensors")
        self.llama(f"llama_model_loader: - type q6_K: {m.layers + 1:4d} tensors")

    def _print_info(self) -> None:
        head = "llm_load_print_meta" if self.shape == "2024" else "print_info"
        m = self.model
        rows = (
            ("file format", "GGUF V3 (latest)"),
            ("file type", "Q4_K - Medium"),
            ("file size", f"{self.weights_mib / 1024:.2f} GiB ({self.bits_per_weight:.2f} BPW)"),
            ("arch", m.model_type),
            ("n_ctx_train", str(m.context_len)),
            ("n_layer", str(m.layers)),
            ("n_head_kv", str(m.kv_heads)),
            ("model params", f"{m.params_b:.2f} B"),
        )
        width = max(len(key) for key, _ in rows)
        for key, value in rows:
            self.llama(f"{head}: {key:<{width}} = {value}")

    def _tensors_begin(self) -> None:
        head = "llm_load_tensors" if self.shape == "2024" else "load_tensors"
        self.llama(f"{head}: loading model tensors, this can take a while... (mmap = true)")
        layers = self.model.layers
        if self.offloaded:
            self.llama(f"{head}: offloading {min(self.offloaded, layers)} repeating layers to GPU")
            if self.offloaded > layers:
                self.llama(f"{head}: offloading output layer to GPU")
        self.llama(f"{head}: offloaded {self.offloaded}/{layers + 1} layers to GPU")

    def _weights_loaded(self) -> None:
        head = "llm_load_tensors" if self.shape == "2024" else "load_tensors"
        cpu = self.weights_mib - self.gpu_weights_mib
        if self.gpu_weights_mib:
            self.llama(f"{head}:        CUDA0 model buffer size = {self.gpu_weights_mib:8.2f} MiB")
        self.llama(f"{head}:   CPU_Mapped model buffer size = {max(cpu, 281.81):8.2f} MiB")
        self.host.set_memory([self.context_gib + self.gpu_weights_mib / 1024] * self.cfg.tp)

    def _context(self) -> None:
        kv_mib = self.kv_mib
        half = kv_mib / 2
        layers = self.model.layers
        if self.shape == "2024":
            self.llama(f"llama_new_context_with_model: n_ctx      = {self.n_ctx}")
            self.llama(f"llama_new_context_with_model: n_batch    = {self.n_batch}")
            self.llama("llama_new_context_with_model: n_ubatch   = 512")
            self.llama(f"llama_kv_cache_init:      CUDA0 KV buffer size = {kv_mib:8.2f} MiB")
            self.llama(
                f"llama_new_context_with_model: KV self size  = {kv_mib:7.2f} MiB, "
                f"K (f16): {half:7.2f} MiB, V (f16): {half:7.2f} MiB"
            )
            self.llama(
                f"llama_new_context_with_model:      CUDA0 compute buffer size = "
                f"{self.compute_mib:8.2f} MiB"
            )
        else:
            self.llama("llama_context: constructing llama_context")
            self.llama(f"llama_context: n_seq_max     = {self.n_slots}")
            self.llama(f"llama_context: n_ctx         = {self.n_ctx}")
            self.llama(f"llama_context: n_ctx_per_seq = {self.n_ctx_slot}")
            self.llama(f"llama_context: n_batch       = {self.n_batch}")
            self.llama("llama_context: n_ubatch      = 512")
            self.llama("llama_context: causal_attn   = 1")
            self.llama(f"llama_context: flash_attn    = {'auto' if self.shape == '2026' else 0}")
            kv_head = "llama_kv_cache" if self.shape == "2026" else "llama_kv_cache_unified"
            self.llama(f"{kv_head}:      CUDA0 KV buffer size = {kv_mib:8.2f} MiB")
            self.llama(
                f"{kv_head}: size = {kv_mib:7.2f} MiB ({self.n_ctx:6d} cells, {layers:3d} layers, "
                f"{self.n_slots:2d}/{self.n_slots:2d} seqs), K (f16): {half:7.2f} MiB, "
                f"V (f16): {half:7.2f} MiB"
            )
            self.llama(
                f"llama_context:      CUDA0 compute buffer size = {self.compute_mib:8.2f} MiB"
            )
            self.llama(f"llama_context: graph nodes  = {layers * 34 + 6}")
            self.llama("llama_context: graph splits = 2")
        used = self.context_gib + (self.gpu_weights_mib + kv_mib + self.compute_mib) / 1024
        self.host.set_memory([used] * self.cfg.tp)

    def _draft(self) -> None:
        self.srv("load_model", f"loading draft model '{self.draft_path}'")
        self.llama(
            f"llama_model_loader: loaded meta data with 30 key-value pairs and 311 tensors "
            f"from {self.draft_path} (version GGUF V3 (latest))"
        )

    def _warmup(self) -> None:
        head = "llama_init_from_gpt_params" if self.shape == "2024" else "common_init_from_params"
        self.llama(
            f"{head}: warming up the model with an empty run - please wait ... "
            "(--no-warmup to disable)"
        )

    def _slots_ready(self) -> None:
        if self.shape == "2024":
            self.old("init", "initializing slots", n_slots=self.n_slots)
            for index in range(self.n_slots):
                self.old("init", "new slot", id_slot=index, n_ctx_slot=self.n_ctx_slot)
            return
        if self.shape == "2025":
            self.srv("init", f"initializing slots, n_slots = {self.n_slots}")
            for index in range(self.n_slots):
                self.slot("init", index, -1, f"new slot n_ctx_slot = {self.n_ctx_slot}")
            self.log("main: model loaded")
            return
        if self.cfg.scenario.name == "spec-off" and self.wants_spec:
            self.srv("load_model", "speculative decoding not supported by this context", "W")
        self.srv(
            "load_model",
            f"initializing, n_slots = {self.n_slots}, n_ctx_slot = {self.n_ctx_slot}, "
            "kv_unified = 'true'",
        )

    def _ready_line(self) -> None:
        address = f"http://{self.bind_host}:{self.host.port}"
        if self.shape == "2024":
            self.old("main", "model loaded")
            self.old("update_slots", "all slots are idle")
        elif self.shape == "2025":
            self.log(f"main: server is listening on {address} - starting the main loop")
            self.srv("update_slots", "all slots are idle")
        else:
            self.srv("main", f"listening on {address}")
