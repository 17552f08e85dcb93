"""The demo's ten services, of four engines: what each one runs, and the trap it shows.

Each :class:`Story` says how its first run is started and what the demo then
does to it (:class:`Fate`), what its ``launch:`` in hosts.yaml starts, and the
verdict ``babysit status`` must give once the trap is set. A story may come with a
:class:`LastRun`: the service's run history on the host then holds one run that reached
ready, so the first run on screen already has an ETA.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tui.core.verdicts import Verdict
from tui.engines import Engine, spec

MODEL = "Qwen/Qwen3-8B"
SPEC_FLAGS = (
    "--speculative-algorithm",
    "NEXTN",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
)


def ready_lines(engine: str) -> tuple[bytes, ...]:
    """What the engine's log says once it serves."""
    return tuple(line.encode() for line in spec(engine).ready)


class Fate(enum.Enum):
    """What the demo does to a service's first run once it is started."""

    #: Leave it serving.
    SERVE = "serve"
    #: Kill it (SIGKILL) once it is ready: the run is gone, its log remains.
    KILL_WHEN_READY = "kill when ready"
    #: Delete its log and create a new empty file at the path once it is ready.
    REPLACE_LOG_WHEN_READY = "replace log when ready"
    #: Nothing: its scenario makes it fail while loading.
    FAIL_AT_LOAD = "fail at load"
    #: Nothing: it loads (slowly) while the demo is watched.
    LOADING = "loading"
    #: Kill the server alone (SIGKILL) once it is ready: its workers, in sessions of
    #: their own, live on holding the GPUs (the demo keeps their pids to stop them).
    ORPHAN_WHEN_READY = "orphan its workers when ready"


@dataclass(frozen=True)
class LastRun:
    """The run of the service before the demo's, as its run history on the host keeps it:
    its startup took ``seconds``; each startup phase (by the engine's name for it) began
    at its share of them (``shares``, in order), and it was ready at ``ready``. Shares
    of phases the engine does not name are left out of the history."""

    seconds: float
    shares: tuple[tuple[str, float], ...]
    ready: float = 1.0


@dataclass(frozen=True)
class Story:
    """One service of the demo and the trap it shows.

    ``flags`` are the server flags of the ``launch:`` command (what a relaunch
    starts); ``first_flags`` and ``first_scenario``, when set, replace them for the
    run the demo starts itself (e.g. the run that ran out of memory).
    """

    name: str
    engine: str
    gpu: int
    seed: int
    load_seconds: float
    fate: Fate
    expected: Verdict
    #: Comment above the service in hosts.yaml.
    comment: str
    scenario: str = "healthy"
    flags: tuple[str, ...] = ()
    first_scenario: str | None = None
    first_flags: tuple[str, ...] | None = None
    #: Concurrent request streams the load generator keeps on it (0: none).
    streams: int = 0
    #: What the server is told to serve, and the flag that says it when the engine's
    #: aliases do not spell it (TGI's ``--model-id``).
    model: str = MODEL
    model_flag: str | None = None
    #: Where babysit reads the server's figures besides its log (``prometheus``: its
    #: ``/metrics``, TGI's only source of them), or None.
    metrics: str | None = None
    #: What the simulator is told besides its scenario (``--wedge-after 4``).
    sim_flags: tuple[str, ...] = ()
    #: The service's ``wedged_after`` in hosts.yaml (None: babysit's default).
    wedged_after: float | None = None
    #: The service's ``canary: {timeout: …}`` in hosts.yaml (None: babysit's default).
    canary_timeout: float | None = None
    #: Tensor-parallel ranks: the service holds GPUs ``gpu`` to ``gpu + tp - 1``.
    tp: int = 1
    #: The run its host's run history keeps from before the demo, or None.
    last_run: LastRun | None = None

    @property
    def gpus(self) -> tuple[int, ...]:
        return tuple(range(self.gpu, self.gpu + self.tp))


STORIES: tuple[Story, ...] = (
    Story(
        name="qwen-mtp",
        engine=Engine.SGLANG.value,
        gpu=0,
        seed=1,
        load_seconds=1.5,
        fate=Fate.SERVE,
        expected=Verdict.LIVE,
        comment="healthy, with speculative decoding (MTP): LIVE",
        flags=SPEC_FLAGS,
        streams=3,
    ),
    Story(
        name="qwen-nomtp",
        engine=Engine.SGLANG.value,
        gpu=1,
        seed=2,
        load_seconds=1.5,
        fate=Fate.SERVE,
        expected=Verdict.LIVE,
        comment="the same flags, silently dropped by the engine: LIVE, but slower",
        scenario="spec-off",
        flags=SPEC_FLAGS,
        streams=3,
    ),
    Story(
        name="gpu2-dead",
        engine=Engine.VLLM.value,
        gpu=2,
        seed=3,
        load_seconds=0.6,
        fate=Fate.KILL_WHEN_READY,
        expected=Verdict.DEAD,
        comment="served, then was killed; its log remains: DEAD",
    ),
    Story(
        name="gpu3-stale",
        engine=Engine.SGLANG.value,
        gpu=3,
        seed=4,
        load_seconds=0.6,
        fate=Fate.REPLACE_LOG_WHEN_READY,
        expected=Verdict.STALE,
        comment="its log was deleted and recreated; the server writes the old inode: STALE",
        streams=1,
    ),
    Story(
        name="gpu4-oom",
        engine=Engine.SGLANG.value,
        gpu=4,
        seed=5,
        load_seconds=1.0,
        fate=Fate.FAIL_AT_LOAD,
        expected=Verdict.DEAD,
        comment="ran out of memory while loading: DEAD; relaunch it (launch: has the fix)",
        flags=("--mem-fraction-static", "0.85"),
        first_scenario="oom",
        first_flags=("--mem-fraction-static", "0.95"),
    ),
    Story(
        name="llama-gguf",
        engine=Engine.LLAMACPP.value,
        gpu=5,
        seed=6,
        load_seconds=1.0,
        fate=Fate.SERVE,
        expected=Verdict.LIVE,
        comment="llama.cpp's llama-server, healthy: LIVE",
        streams=2,
        model="models/Qwen3-8B-Q4_K_M.gguf",
        flags=(
            "--ctx-size",
            "8192",
            "--n-gpu-layers",
            "99",
            "--metrics",
            "--log-prefix",
            "--log-timestamps",
        ),
    ),
    Story(
        name="hf-llama",
        engine=Engine.TGI.value,
        gpu=6,
        seed=7,
        load_seconds=1.0,
        fate=Fate.SERVE,
        expected=Verdict.LIVE,
        comment="HF TGI, healthy: LIVE",
        model="meta-llama/Llama-3.1-8B-Instruct",
        model_flag="--model-id",
        streams=2,
        metrics="prometheus",
    ),
    Story(
        name="gpu7-wedged",
        engine=Engine.VLLM.value,
        gpu=7,
        seed=8,
        load_seconds=0.6,
        fate=Fate.SERVE,
        expected=Verdict.WEDGED,
        comment="serves, then hangs: /health answers, its requests never finish: WEDGED",
        scenario="wedged",
        sim_flags=("--wedge-after", "4"),
        wedged_after=8.0,
        # its canary never completes: the demo says so in 10 s rather than babysit's 30
        canary_timeout=10.0,
        streams=2,
    ),
    Story(
        name="gpu8-slow",
        engine=Engine.SGLANG.value,
        gpu=8,
        seed=9,
        # slow-load takes four times this: three minutes, shard by shard
        load_seconds=45.0,
        fate=Fate.LOADING,
        expected=Verdict.STARTING,
        comment="loads slowly: STARTING, its phase, shard count and an ETA from its last run",
        scenario="slow-load",
        # where the simulator's SGLang prints the first line of each phase: the weights
        # from 12%, their end at 58%, CUDA graphs from 66%, the limits at 87%, uvicorn at
        # 90%; ready once the warmup request from 93% is answered
        last_run=LastRun(
            180.0,
            (
                ("loading weights", 0.12),
                ("allocating KV cache", 0.58),
                ("capturing CUDA graphs", 0.66),
                ("starting the API server", 0.87),
                ("warming up", 0.90),
            ),
            ready=0.94,
        ),
    ),
    Story(
        name="gpu9-orphan",
        engine=Engine.VLLM.value,
        gpu=9,
        seed=10,
        load_seconds=0.8,
        fate=Fate.ORPHAN_WHEN_READY,
        expected=Verdict.DEAD,
        comment="its server died, its TP workers live on holding GPUs 10 and 11: DEAD, orphans",
        scenario="orphan-workers",
        sim_flags=("--tp", "3"),
        tp=3,
    ),
)
