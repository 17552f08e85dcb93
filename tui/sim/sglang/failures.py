"""SGLang's failures and shutdown: OOM at load, a scheduler killed at load or while serving,
a CUDA fault, a graceful or ignored SIGTERM, a port already taken."""

from __future__ import annotations

import signal

from tui.sim.out import STDERR
from tui.sim.sglang.lines import SglangLines
from tui.sim.version import V


class Failures(SglangLines):
    """The lines of each way an SGLang server ends."""

    def _main_frame(self) -> str:
        """The frame a signal finds the main process in (its event loop's ``select``)."""
        address = 0x7F0000000000 + self.host.rng.randrange(2**32) * 16
        return (
            f"<frame at {address:#x}, file '/usr/lib/python3.12/selectors.py', "
            "line 468, code select>"
        )

    def _sigquit_received(self) -> None:
        """The main process's SIGQUIT handler (0.5.3 on): a child failed."""
        frame = self._main_frame()
        self.main(f"SIGQUIT received. signum=3, frame={frame}. It usually means one child failed.")

    def _sigquit_launch(self) -> None:
        """The launcher's SIGQUIT handler: a child failed (OOM at load; a crash before 0.5.3)."""
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
        self.sched("Scheduler hit an exception: " + self.traceback(frames, error))
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
        self.sched("Scheduler hit an exception: " + self.traceback(frames, error.rstrip("\n")))
        if self.v >= V("0.5.3"):
            self._sigquit_received()
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
        self.host.out.write(self.traceback(frames, error), STDERR)
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
        self._sigquit_received()
        self.host.finish(None, sigkill=True)

    def shutdown(self, signum: int) -> None:
        """uvicorn's graceful shutdown lines (SGLang lets uvicorn own SIGTERM/SIGINT)."""
        self.uvicorn("Shutting down")
        self.uvicorn("Waiting for application shutdown.")
        self.uvicorn("Application shutdown complete.")
        self.uvicorn(f"Finished server process [{self.host.pid}]")

    def ignored_signal(self, signum: int) -> None:
        if signum == signal.SIGTERM and self.v >= V("0.5.3"):
            frame = self._main_frame()
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
