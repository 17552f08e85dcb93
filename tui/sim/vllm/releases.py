"""The vLLM releases simulated, their command-line spellings and where each line is logged from."""

from __future__ import annotations

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

#: where each line is logged from, per release family: key -> (file, line)
SITES: dict[str, dict[str, tuple[str, int]]] = {
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


def family(v: Version) -> str:
    """The key of :data:`SITES` for release ``v``."""
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


#: the torch release each vLLM release pins (first vLLM release, torch)
TORCH = (
    (V("0.11.1"), V("2.9.0")),
    (V("0.10.2"), V("2.8.0")),
    (V("0.9.0"), V("2.7.0")),
    (V("0.8.0"), V("2.6.0")),
    (V("0.6.4"), V("2.5.1")),
    (V("0.6.0"), V("2.4.0")),
)


def torch_release(v: Version) -> Version:
    """The torch release vLLM ``v`` installs."""
    return next((torch for since, torch in TORCH if v >= since), TORCH[-1][1])
