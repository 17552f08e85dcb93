"""llama-server's failures and shutdown: the weights do not fit (cudaMalloc out of memory),
a CUDA fault while serving (abort), the process killed (SIGKILL prints nothing), a graceful
SIGTERM, a port already taken."""

from __future__ import annotations

from tui.sim.llamacpp.lines import LlamaLines
from tui.sim.out import STDERR

#: what a shell reports for a process ended by abort() (128 + SIGABRT)
ABORT_STATUS = 134
#: the source file and lines ggml's CUDA backend names in its error
CUDA_SOURCE = "/app/ggml/src/ggml-cuda/ggml-cuda.cu"
CUDA_ERROR_LINE = 75
CUDA_SYNC_LINE = 2466


class Failures(LlamaLines):
    """The lines of each way a llama-server ends."""

    def oom(self) -> None:
        """Allocating the weights' CUDA buffer fails; the server exits 1."""
        self.host.set_phase("crashed")
        mib = max(self.gpu_weights_mib, self.weights_mib)
        path = self.model_path
        self.llama(
            f"ggml_backend_cuda_buffer_type_alloc_buffer: allocating {mib:.2f} MiB on device 0: "
            "cudaMalloc failed: out of memory",
            "E",
        )
        self.llama(
            f"alloc_tensor_range: failed to allocate CUDA0 buffer of size {int(mib * 2**20)}", "E"
        )
        if self.shape == "2024":
            self.llama("llama_model_load: error loading model: unable to allocate backend buffer")
            self.llama("llama_load_model_from_file: failed to load model")
            self.llama(f"llama_init_from_gpt_params: error: failed to load model '{path}'")
            self.old("load_model", "unable to load model", "E", model=path)
            self.host.finish(1)
            return
        self.llama("llama_model_load: error loading model: unable to allocate CUDA0 buffer", "E")
        self.llama("llama_model_load_from_file_impl: failed to load model", "E")
        self.llama(f"common_init_from_params: failed to load model '{path}'", "E")
        self.srv("load_model", f"failed to load model, '{path}'", "E")
        self.srv("operator()", "operator(): cleaning up before exit...")
        self.log("main: exiting due to model loading error", "E")
        self.host.finish(1)

    def crash(self) -> None:
        """An illegal memory access in a kernel: ggml's CUDA error, then abort() (134)."""
        self.host.set_phase("crashed")
        self.llama("CUDA error: an illegal memory access was encountered", "E")
        self.llama(
            f"  current device: 0, in function ggml_backend_cuda_synchronize at "
            f"{CUDA_SOURCE}:{CUDA_SYNC_LINE}",
            "E",
        )
        self.llama("  cudaStreamSynchronize(cuda_ctx->stream())", "E")
        # ggml_abort() writes with fprintf(stderr) and no prefix
        self.host.out.line(f"{CUDA_SOURCE}:{CUDA_ERROR_LINE}: CUDA error", STDERR)
        self.host.finish(ABORT_STATUS)

    def killed(self) -> None:
        """SIGKILL (the OOM killer, while loading or serving): one process, no last words."""
        self.host.set_phase("crashed")
        self.host.finish(None, sigkill=True)

    def child_killed(self) -> None:
        """llama-server has no child processes: the OOM killer kills the server itself."""
        self.killed()

    def shutdown(self, signum: int) -> None:
        """SIGTERM/SIGINT once serving: the main loop stops and the server cleans up."""
        if self.shape != "2024":
            self.srv("operator()", "operator(): cleaning up before exit...")

    def bind_failed(self, error: OSError) -> None:
        if self.shape == "2024":
            self.old(
                "main",
                "couldn't bind HTTP server socket",
                "E",
                hostname=self.bind_host,
                port=self.host.port,
            )
            return
        self.log(
            f"main: couldn't bind HTTP server socket, hostname: {self.bind_host}, "
            f"port: {self.host.port}",
            "E",
        )
