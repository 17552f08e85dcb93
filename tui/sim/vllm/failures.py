"""vLLM's failures and shutdown: OOM at load, a CUDA fault or a killed child while serving,
the watchdog's exit, a graceful SIGTERM, a port already taken."""

from __future__ import annotations

import time

from tui.sim.version import V
from tui.sim.vllm.lines import VllmLines


class Failures(VllmLines):
    """The lines of each way a vLLM server ends."""

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
            self.raw(self.traceback(frames, error) + "\n")
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
                self.traceback(
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
        trace = self.traceback(frames, error)
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
        self.raw(f"Process {name}:\n" + self.traceback(bootstrap, error) + "\n", proc="engine")
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
        self.raw(self.traceback(api, final) + "\n")
        self.host.finish(1)

    def crash(self) -> None:
        """The engine dies mid-serving; the watchdog (every 5 s) then shuts uvicorn down; exit 0."""
        self.engine_dead = True
        self.host.set_phase("crashed")
        self.crash_lines()
        self._serving_ended()

    def crash_lines(self) -> None:
        """What a CUDA fault in the engine prints (V1: the engine core's fatal error and the
        API server's failed output handler)."""
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
            self.raw(self.traceback(frames, error) + "\n")
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
                "EngineCore encountered a fatal error.\n" + self.traceback(frames, error),
                proc="engine",
                level="ERROR",
            )
            self._output_handler_failed(
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an "
                "issue. See stack trace (above) for the root cause."
            )

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
            "AsyncLLM output_handler failed.\n" + self.traceback(handler, error),
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
        self.child_killed_lines()
        self._serving_ended()

    def child_killed_lines(self) -> None:
        """What the process above a killed engine core (0.11-0.15) or worker (0.33) prints."""
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
            self.traceback(frames, f"OSError: [Errno {error.errno}] Address already in use") + "\n"
        )
