"""TGI's failures and shutdown: a shard that cannot start (OOM), a shard that dies while
serving (a CUDA fault, a SIGKILL), the router that cannot bind, a graceful SIGTERM.

The launcher ends with ``Error: {LauncherError:?}`` on stderr and exit status 1
after a failure, 0 after a graceful stop.
"""

from __future__ import annotations

import signal

from tui.sim.out import STDOUT
from tui.sim.tgi.lines import Field, Span, TgiLines
from tui.sim.tgi.releases import V3
from tui.sim.version import Version

EXIT_FAILED = 1
_SITE = "/opt/conda/lib/python3.11/site-packages"
#: the torch message of a failed allocation (``c10/cuda/CUDACachingAllocator.cpp``)
OOM_TEXT = (
    "CUDA out of memory. Tried to allocate {want:.2f} GiB. GPU {gpu} has a total capacity of "
    "{total:.2f} GiB of which {free:.2f} MiB is free. Process {pid} has {used:.2f} GiB memory in "
    "use. Of the allocated memory {alloc:.2f} GiB is allocated by PyTorch, and {reserved:.2f} MiB "
    "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
    "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
    "documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
CUDA_FAULT = "CUDA error: an illegal memory access was encountered"
#: frames of ``text-generation-server serve`` from the CLI down to the model's constructor
_LOAD_FRAMES = (
    ("/opt/conda/bin/text-generation-server", 8, "<module>", "sys.exit(app())"),
    (f"{_SITE}/text_generation_server/cli.py", 118, "serve", "server.serve("),
    (f"{_SITE}/text_generation_server/server.py", 315, "serve", "asyncio.run("),
    (
        f"{_SITE}/text_generation_server/server.py",
        268,
        "serve_inner",
        "model = get_model_with_lora_adapters(",
    ),
    (
        f"{_SITE}/text_generation_server/models/__init__.py",
        1363,
        "get_model_with_lora_adapters",
        "model = get_model(",
    ),
    (
        f"{_SITE}/text_generation_server/models/flash_causal_lm.py",
        1098,
        "__init__",
        "model = model_class(prefix, config, weights)",
    ),
    (
        f"{_SITE}/text_generation_server/utils/weights.py",
        288,
        "get_tensor",
        "tensor = tensor.to(device=self.device)",
    ),
)
_DECODE_FRAMES = (
    (f"{_SITE}/text_generation_server/interceptor.py", 24, "intercept", "return await response"),
    (
        f"{_SITE}/text_generation_server/server.py",
        216,
        "Decode",
        "generations, next_batch, timings = self.model.generate_token(batch)",
    ),
    (
        f"{_SITE}/text_generation_server/models/flash_causal_lm.py",
        1946,
        "generate_token",
        "out, speculative_logits = self.forward(batch, adapter_data)",
    ),
)


def _traceback(frames: tuple[tuple[str, int, str, str], ...], error: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines.append(f'  File "{path}", line {line}, in {func}')
        lines.append(f"    {code}")
    lines.append(error)
    return "\n".join(lines)


class Failures(TgiLines):
    """The lines of each way a TGI launcher ends."""

    v: Version
    shard_dead: bool

    def _oom_error(self) -> str:
        gpu = self.host.gpus[0]
        total = gpu.usable_mib / 1024
        text = OOM_TEXT.format(
            want=self.host.rng.uniform(0.2, 2.5),
            gpu=0,
            total=total,
            free=self.host.rng.uniform(20.0, 180.0),
            pid=self.host.pid,
            used=total * 0.99,
            alloc=total * 0.96,
            reserved=self.host.rng.uniform(2.0, 90.0),
        )
        kind = "torch.OutOfMemoryError" if self.v >= V3 else "torch.cuda.OutOfMemoryError"
        return f"{kind}: {text}"

    def oom(self) -> None:
        """The weights do not fit: shard 0 exits, the launcher gives up (``ShardCannotStart``)."""
        self.host.set_phase("crashed")
        trace = _traceback(_LOAD_FRAMES, self._oom_error())
        self.launcher("Error when initializing model\n" + trace, level="ERROR")
        self._shard_exit(0, "\n" + trace)
        self.launcher("Shard 0 failed to start", level="ERROR")
        self._shutdown_shards(skip=0)
        self.fatal("ShardCannotStart")
        self.host.finish(EXIT_FAILED)

    def _shard_exit(self, rank: int, stderr: str, signum: int | None = None) -> None:
        """The shard manager saw its process exit: its stderr, then the signal if any."""
        self.launcher(
            f"Shard complete standard error output:\n{stderr}",
            level="ERROR",
            span=self.shard_span(rank),
        )
        if signum is not None:
            self.launcher(
                f"Shard process was signaled to shutdown with signal {signum}",
                level="ERROR",
                span=self.shard_span(rank),
            )

    def _shutdown_shards(self, skip: int | None = None) -> None:
        self.launcher("Shutting down shards")
        for rank in range(self.cfg.tp):
            if rank == skip:
                continue
            span = self.shard_span(rank)
            self.launcher("Terminating shard", span=span)
            self.launcher("Waiting for shard to gracefully shutdown", span=span)
            self.launcher("shard terminated", span=span)

    def _terminate_webserver(self) -> None:
        self.launcher("Terminating webserver")
        self.launcher("Waiting for webserver to gracefully shutdown")
        self.router("shutdown", "signal received, starting graceful shutdown")
        self.launcher("webserver terminated")

    def _batch_error(self, message: str) -> None:
        """The router's gRPC client reports a shard error inside the decode batch span."""
        running = max(1, self.host.load.running)
        size = Field.number("size", running)
        spans = (
            Span("batch", (Field.number("batch_size", running),)),
            Span("decode"),
            Span("decode", (size,)),
            Span("decode", (size,)),
        )
        self.router("client_error", f"Server error: {message}", level="ERROR", spans=spans)

    def crash(self) -> None:
        """A CUDA fault in a decode step: the batch fails, shard 0 exits (``ShardFailed``)."""
        self.shard_dead = True
        self.host.set_phase("crashed")
        self._batch_error(CUDA_FAULT)
        error = (
            f"RuntimeError: {CUDA_FAULT}\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
        )
        self._shard_exit(0, "\n" + _traceback(_DECODE_FRAMES, error))
        self._shard_failed(0)

    def child_killed(self) -> None:
        """A shard killed by SIGKILL (the OOM killer) while serving."""
        self.shard_killed(self.cfg.tp - 1, starting=False)

    def shard_killed(self, rank: int, *, starting: bool) -> None:
        """Shard ``rank`` dies by SIGKILL: empty stderr, the signal, then the launcher gives up."""
        self.shard_dead = True
        self.host.set_phase("crashed")
        if not starting:
            self._batch_error("transport error")
        self._shard_exit(rank, "", signum=signal.SIGKILL)
        if starting:
            self.launcher(f"Shard {rank} failed to start", level="ERROR")
            self._shutdown_shards(skip=rank)
            self.fatal("ShardCannotStart")
            self.host.finish(EXIT_FAILED)
            return
        self._shard_failed(rank)

    def _shard_failed(self, rank: int) -> None:
        """The main loop sees the failed shard: stop the webserver, then the other shards."""
        self.launcher(f"Shard {rank} crashed", level="ERROR")
        self._terminate_webserver()
        self._shutdown_shards(skip=rank)
        self.fatal("ShardFailed")
        self.host.finish(EXIT_FAILED)

    def shutdown(self, signum: int) -> None:
        """SIGTERM/SIGINT (ctrlc): terminate the webserver, then every shard; exit 0."""
        self._terminate_webserver()
        self._shutdown_shards()

    def bind_failed(self, error: OSError) -> None:
        """The router cannot bind: it panics on the unwrap, the launcher sees it exit."""
        self.host.out.line(
            "thread 'main' panicked at router/src/server.rs:2431:64:\n"
            "called `Result::unwrap()` on an `Err` value: Os { code: "
            f'{error.errno}, kind: AddrInUse, message: "Address already in use" }}\n'
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
            STDOUT,
        )
        self.launcher("Webserver Crashed", level="ERROR")
        self._shutdown_shards()
        self.fatal("WebserverFailed")
