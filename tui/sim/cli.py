"""``babysit sim``: run a simulated SGLang, vLLM, llama.cpp or TGI server, or answer as
``nvidia-smi``.

Synopsis::

    babysit sim --engine sglang|vllm|llamacpp|tgi [--engine-version V] [--port P]
                [--load-seconds S] [--scenario NAME] [--seed N] [--tp N] [--stats-interval S]
                [--log-format F] [--wedge-after S] [-- SERVER FLAGS...]
    babysit sim nvidia-smi [--query-gpu=F,... | --query-compute-apps=F,... | -L] [--format=csv,...]

Everything after ``--`` is kept verbatim in the process's argv (so
``/proc/PID/cmdline`` shows it) and read the way the engine would read it:
``--model-path``/``--model``, ``--tp``/``--tensor-parallel-size``, ``--port``,
``--host``, ``--speculative-algorithm`` and friends (SGLang),
``--speculative-config '{...}'`` (vLLM), ``--mem-fraction-static``,
``--gpu-memory-utilization``, ``--max-running-requests``, ``--max-num-seqs``,
``--enable-metrics``, ``--decode-log-interval``, ``--disable-log-stats``,
``--enforce-eager``, ``--disable-cuda-graph``; for TGI (``text-generation-launcher``)
``--model-id``, ``--num-shard``, ``--port``, ``--hostname``, ``--max-concurrent-requests``,
``--max-input-tokens``/``--max-input-length``, ``--max-total-tokens``,
``--max-batch-prefill-tokens``, ``--quantize``, ``--speculate``, ``--json-output``.
The sim's own ``--port``/``--tp`` win over the server flags.

``--engine llamacpp`` (llama.cpp's ``llama-server``) names a release by its build,
``b2500`` to ``b9999`` (default ``b8800``), or by the log shape a build prints:
``2024`` (``INFO [ func] msg | key=value``), ``2025`` (``slot print_timing:`` then
unprefixed timing lines), ``2026`` (one prefixed line each), ``2026-06`` (acceptance per
draft position). It reads ``-m``, ``-c``, ``-ngl``, ``-np``, ``--host``, ``--port``,
``-md``, ``--draft-max``, ``--draft-min``, ``--metrics``, ``--slots``/``--no-slots``,
``--log-prefix``, ``--log-timestamps``, ``-t`` and ``--alias``.

``--log-format`` picks how log records look when the engine's logging is not the
release default:

- ``default``: the release's own format (every engine).
- vLLM ``color``: the coloured formatter (TTY, ``VLLM_LOGGING_COLOR=1`` or
  ``FORCE_COLOR``; 0.31 on): ``\033[0;36m(tag)\033[0;0m``, the level coloured,
  the stamp and ``[file.py:N]`` grey (``\033[90m``).
- vLLM and SGLang ``json``: python-json-logger through a user logging config
  (``--logging-config`` / ``VLLM_LOGGING_CONFIG_PATH`` / ``SGLANG_LOGGING_CONFIG_PATH``),
  one object per record with ``asctime`` (``YYYY-MM-DD HH:MM:SS,mmm``), ``levelname``,
  ``name``, ``processName``, ``process`` and ``message``.
- SGLang ``plain``: no ``[...]`` prefix, ``YYYY-MM-DD HH:MM:SS LEVEL PID [file.py:N] ...``
  (SGLang inside another program's logging setup).
- SGLang ``stdlib``: ``%(asctime)s [%(levelname)s] %(name)s: ...`` (a stdlib dictConfig).

Scenarios ``wedged``, ``nccl-timeout`` (SGLang and vLLM) and ``engine-dead`` (vLLM V1)
strike ``--wedge-after`` seconds (default 20) after the ready line and leave the process
alive: ``/health`` keeps answering 200, ``wedged`` and ``nccl-timeout`` accept requests
that then hang (a started stream stops) and print no progress line any more;
``nccl-timeout`` first prints torch's NCCL watchdog timeout lines, ``engine-dead`` the
engine core's death, after which completions answer 500 at once.

Scenario ``orphan-workers`` (``--tp`` 2 or more): the worker children start sessions of
their own, keep the log open and outlive the server, each holding its GPU memory in the
``nvidia-smi`` stand-in until SIGTERM or SIGKILL ends it.

Lines written straight to the streams (uvicorn, tqdm, tracebacks) keep their shape in
every format. TGI's own formats follow its environment and flags instead: ``--json-output``
and ``LOG_COLORIZE=1`` (the router colours its lines unless it is set).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from tui.sim.config import DEFAULT_WEDGE_AFTER, ORPHANING, SCENARIOS, Scenario, SimConfig
from tui.sim.engine import EngineKind
from tui.sim.errors import USAGE_EXIT, SimUsageError
from tui.sim.flags import parse_flags


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="babysit sim",
        description="Run a simulated SGLang/vLLM/llama.cpp/TGI server in the foreground "
        "(log on stdout/stderr, HTTP on 127.0.0.1), or `babysit sim nvidia-smi ...` for the "
        "nvidia-smi stand-in.",
        epilog="Server flags go after `--`, e.g. babysit sim --engine sglang -- "
        "--model-path Qwen/Qwen3-8B --speculative-algorithm NEXTN",
    )
    parser.add_argument("--engine", choices=("sglang", "vllm", "llamacpp", "tgi"), required=True)
    parser.add_argument(
        "--engine-version",
        metavar="V",
        help="release whose log format to follow (sglang 0.4.0-0.5.18 and 0.5.20-0.5.21, default "
        "0.5.11; vllm 0.6.0-0.7.3 and 0.8.5-0.33.x, default 0.20.0; llamacpp builds b2500-b9999 "
        "or a shape 2024|2025|2026|2026-06, default b8800; tgi 2.0.0-3.3.x, default 3.0.1)",
    )
    parser.add_argument(
        "--port",
        type=int,
        metavar="P",
        help="HTTP port (default: --port among the server flags, else 30000 / 8000 / 8080 / "
        "3000; "
        "0 picks a free one)",
    )
    parser.add_argument(
        "--load-seconds",
        type=float,
        default=8.0,
        metavar="S",
        help="how long startup takes, first line to ready line (default 8)",
    )
    parser.add_argument(
        "--scenario",
        default="healthy",
        metavar="NAME",
        help=f"one of {', '.join(SCENARIOS)} (default healthy)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="make every number in the output repeatable (timestamps, pids and client ports aside)",
    )
    parser.add_argument(
        "--tp",
        type=int,
        metavar="N",
        help="tensor parallel size: N-1 child processes that die with this one (outlive it "
        "in orphan-workers) "
        "(default: --tp/--tensor-parallel-size among the server flags, else 1)",
    )
    parser.add_argument(
        "--stats-interval",
        type=float,
        metavar="S",
        help="vLLM stats line period (default $VLLM_LOG_STATS_INTERVAL or 10; 5 for V0)",
    )
    parser.add_argument(
        "--wedge-after",
        type=float,
        default=DEFAULT_WEDGE_AFTER,
        metavar="S",
        help="seconds of serving after ready before the wedged, nccl-timeout or engine-dead "
        f"scenario strikes (default {DEFAULT_WEDGE_AFTER:g})",
    )
    parser.add_argument(
        "--log-format",
        default="default",
        metavar="F",
        help="how log records look: default (every engine); vllm: color, json; "
        "sglang: plain, stdlib, json (see `babysit sim` in the docs)",
    )
    return parser


def engine_kind(name: str) -> EngineKind:
    """The engine module's description, imported only when asked for."""
    module = importlib.import_module(f"tui.sim.{name}")
    kind: EngineKind = module.KIND
    return kind


def parse_config(argv: list[str]) -> SimConfig:
    """Turn ``babysit sim`` arguments into a config; argparse exits 2 on bad input."""
    if "--" in argv:
        cut = argv.index("--")
        own, server = argv[:cut], argv[cut + 1 :]
    else:
        own, server = argv, []
    parser = build_parser()
    args = parser.parse_args(own)
    kind = engine_kind(args.engine)
    try:
        version = kind.parse_version(args.engine_version or kind.default_version)
    except ValueError as error:
        parser.error(str(error))
    if not kind.supports(version):
        parser.error(
            f"{args.engine} {version} is not simulated; supported: {kind.describe_releases()}"
        )
    try:
        scenario = Scenario.parse(args.scenario)
    except ValueError as error:
        parser.error(str(error))
    if (why := kind.unsupported(version, scenario.name)) is not None:
        parser.error(f"{scenario.name} is not simulated for {args.engine} {version}: {why}")
    if args.log_format not in kind.log_formats:
        parser.error(
            f"--log-format {args.log_format} is not simulated for {args.engine}; "
            f"choose from {', '.join(kind.log_formats)}"
        )
    if (why := kind.log_format_unsupported(version, args.log_format)) is not None:
        parser.error(
            f"--log-format {args.log_format} is not simulated for {args.engine} {version}: {why}"
        )
    flags = parse_flags(server, kind.aliases)
    port = args.port
    if port is None:
        flag_port = flags.get("port")
        port = flag_port if isinstance(flag_port, int) else kind.default_port
    tp = args.tp
    if tp is None:
        flag_tp = flags.get(*kind.tp_flags)
        tp = flag_tp if isinstance(flag_tp, int) else 1
    if not 1 <= tp <= 64:
        parser.error("--tp must be between 1 and 64")
    if scenario.name == ORPHANING and tp < 2:
        parser.error(f"{ORPHANING} needs workers: --tp 2 or more")
    if not 0 <= port <= 65535:
        parser.error("--port must be between 0 and 65535")
    if args.load_seconds < 0:
        parser.error("--load-seconds must not be negative")
    if not 0 <= args.wedge_after < float("inf"):
        parser.error("--wedge-after must be a finite, non-negative number of seconds")
    if args.stats_interval is not None and args.stats_interval <= 0:
        parser.error("--stats-interval must be positive")
    flag_host = flags.get("host")
    return SimConfig(
        engine=args.engine,
        version=version,
        port=port,
        bind_host=flag_host if isinstance(flag_host, str) else "127.0.0.1",
        load_seconds=args.load_seconds,
        scenario=scenario,
        seed=args.seed,
        tp=tp,
        stats_interval=args.stats_interval,
        flags=flags,
        log_format=args.log_format,
        wedge_after=args.wedge_after,
    )


def main(argv: list[str]) -> int:
    """Entry point of ``babysit sim``; returns the exit status."""
    if argv and argv[0] == "nvidia-smi":
        from tui.sim import nvidia_smi

        return nvidia_smi.main(argv[1:])
    cfg = parse_config(list(argv))
    from tui.sim.server import SimServer

    try:
        server = SimServer(cfg, engine_kind(cfg.engine).factory)
    except SimUsageError as error:
        print(f"babysit: {error}", file=sys.stderr)
        return USAGE_EXIT
    return server.run()
